package localup

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/utils/ptr"

	"github.com/devicefit/devicefit/pkg/support"
)

// servedCases are the control planes the selection is tested on: the
// binaries' own minor (everything), the oldest supported one (DRA alone:
// TestServedOfSupportedMinors), and the combinations in between that a
// cluster could have with one feature turned on or off by hand.
var servedCases = []struct {
	name    string
	served  served
	minPods int
	// leftOut are the classes workload(served) leaves out.
	leftOut []string
}{
	{name: "every feature", served: allServed(), minPods: 200},
	{name: "DRA only (1.35)", served: served{featureDRA: true}, minPods: 190,
		leftOut: []string{"dra-h100-4", "claim-mig-1g", "claim-a100-1", "claim-half", "claim-quarter", "claim-shared-whole"}},
	{name: "no consumable capacity", served: without(allServed(), featureConsumable), minPods: 200,
		leftOut: []string{"claim-half", "claim-quarter", "claim-shared-whole"}},
	{name: "no partitionable devices", served: without(allServed(), featurePartitionable), minPods: 200,
		leftOut: []string{"claim-mig-1g", "claim-a100-1"}},
	{name: "no routing policy", served: without(allServed(), featureRouting), minPods: 200},
	{name: "no extended resources", served: without(allServed(), featureExtended), minPods: 200,
		leftOut: []string{"dra-h100-4"}},
	{name: "no DRA", served: served{featureRouting: true}, minPods: 190,
		leftOut: []string{"dra-h100-4", "claim-h100-2", "claim-mig-1g", "claim-a100-1", "claim-half", "claim-quarter", "claim-shared-whole"}},
}

func without(s served, fs ...demoFeature) served {
	out := served{}
	for f, on := range s {
		out[f] = on && !slices.Contains(fs, f)
	}
	return out
}

// TestSelectionByFeatures: what a control plane does not serve is in
// neither the fixtures nor the workload, and what it serves is in both.
func TestSelectionByFeatures(t *testing.T) {
	for _, tc := range servedCases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.served
			var leftOut []string
			for _, c := range allClasses() {
				if !slices.ContainsFunc(workload(s), func(w class) bool { return w.name == c.name }) {
					leftOut = append(leftOut, c.name)
				}
			}
			if diff := cmp.Diff(tc.leftOut, leftOut); diff != "" {
				t.Errorf("classes left out (-want,+got):\n%s", diff)
			}

			classes := map[string]bool{}
			for _, c := range draClasses(s) {
				classes[c.Name] = true
				expr := c.Spec.Selectors[0].CEL.Expression
				if strings.Contains(expr, "allowMultipleAllocations") && !s.has(featureConsumable) {
					t.Errorf("class %s reads allowMultipleAllocations, which the API server refuses without consumable capacity: %s", c.Name, expr)
				}
				if c.Spec.ExtendedResourceName != nil && !s.has(featureExtended) {
					t.Errorf("class %s names extended resource %s without DRA-backed extended resources", c.Name, *c.Spec.ExtendedResourceName)
				}
			}
			if gpu := slices.IndexFunc(draClasses(s), func(c *resourceapi.DeviceClass) bool { return c.Name == gpuClass }); s.has(featureExtended) &&
				(gpu < 0 || ptr.Deref(draClasses(s)[gpu].Spec.ExtendedResourceName, "") != string(resourceGPU)) {
				t.Errorf("class %s does not serve %s although DRA-backed extended resources are on", gpuClass, resourceGPU)
			}

			pools, sl := draNodes(s)
			var counters, shared bool
			for _, sl := range sl {
				counters = counters || len(sl.Spec.SharedCounters) > 0
				for _, d := range sl.Spec.Devices {
					counters = counters || len(d.ConsumesCounters) > 0
					shared = shared || ptr.Deref(d.AllowMultipleAllocations, false)
				}
			}
			if counters != s.has(featurePartitionable) {
				t.Errorf("slices with shared counters: %v; partitionable devices served: %v", counters, s.has(featurePartitionable))
			}
			if shared != s.has(featureConsumable) {
				t.Errorf("slices with shared GPUs: %v; consumable capacity served: %v", shared, s.has(featureConsumable))
			}
			if (len(pools) > 0) != s.has(featureDRA) {
				t.Errorf("%d DRA pools with DRA served %v", len(pools), s.has(featureDRA))
			}

			for _, c := range workload(s) {
				if !s.has(c.needs) {
					t.Errorf("class %s needs %q, which is not served", c.name, c.needs)
				}
				if c.claim != nil && !classes[c.claim.class] {
					t.Errorf("class %s claims from DeviceClass %s, which is not created", c.name, c.claim.class)
				}
				if c.claim != nil && c.claim.tolerateMIG && !s.has(featurePartitionable) {
					t.Errorf("class %s is for the MIG node, which is not registered", c.name)
				}
			}

			routed := 0
			for _, p := range buildPods(workload(s), 42, s.has(featureRouting)) {
				if isDevicePod(p) && p.Spec.SchedulerName == "" {
					routed++
				}
			}
			if s.has(featureRouting) != (routed > 0) {
				t.Errorf("%d device pods name no scheduler; routing policy served: %v", routed, s.has(featureRouting))
			}

			passed := checksPassed(s)
			if strings.Contains(passed, "shares") != s.has(featureConsumable) || strings.Contains(passed, "routed") != s.has(featureRouting) ||
				strings.Contains(passed, "shared counter") != s.has(featurePartitionable) {
				t.Errorf("checksPassed claims checks of fixtures left out, or leaves out checks made:\n%s", passed)
			}
		})
	}
}

// TestServedOfSupportedMinors: support.Features, at the oldest and the
// newest supported minor with what each serves by default, gives the demo
// features servedCases assumes; a feature support does not name is an
// error, not off.
func TestServedOfSupportedMinors(t *testing.T) {
	oldest, newest := support.Range()
	resourceV1 := schema.GroupVersion{Group: "resource.k8s.io", Version: "v1"}
	draAPIs := []schema.GroupVersionResource{
		resourceV1.WithResource("resourceclaims"), resourceV1.WithResource("resourceslices"), resourceV1.WithResource("deviceclasses"),
	}
	for _, tc := range []struct {
		minor  *version.Version
		served []schema.GroupVersionResource
		want   served
	}{
		{minor: oldest, served: draAPIs, want: served{featureDRA: true}},
		{minor: newest, served: append(slices.Clone(draAPIs), support.MutatingAdmissionPolicies), want: allServed()},
	} {
		t.Run(minorString(tc.minor), func(t *testing.T) {
			c, err := support.NewCluster("v"+tc.minor.WithPatch(4).String(), tc.served...)
			if err != nil {
				t.Fatal(err)
			}
			features, _, err := support.DefaultFeatures(c)
			if err != nil {
				t.Fatal(err)
			}
			got, off, err := servedOf(features)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, on(got)); diff != "" {
				t.Errorf("served (-want,+got):\n%s", diff)
			}
			if len(off) != len(demoFeatures)-len(on(tc.want)) {
				t.Errorf("%d features off, want %d", len(off), len(demoFeatures)-len(on(tc.want)))
			}
			for _, f := range off {
				if line := f.Line(c); !strings.Contains(line, "not served by this API server (v"+minorString(tc.minor)+")") {
					t.Errorf("line %q does not say the server's minor", line)
				}
			}
		})
	}
	if _, _, err := servedOf([]support.Feature{{Name: string(featureDRA), On: true}}); err == nil {
		t.Error("servedOf accepted features that name no routing policy")
	}
}

// on drops the features s has off, for comparing with a literal.
func on(s served) served {
	out := served{}
	for f, v := range s {
		if v {
			out[f] = true
		}
	}
	return out
}
