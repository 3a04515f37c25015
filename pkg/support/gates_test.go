package support

import (
	"context"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/component-base/featuregate"
)

// TestGatedAPIsAreInformers: every resource the served-API check looks for
// is one client-go's informer factory has, at that group version. On the
// day upstream moves an informer to another version (DeviceTaintRules from
// v1beta2 to v1 in 1.37), the factory of the bumped client-go no longer has
// the old one and this fails: update gatedAPIs from the scheduler's
// scheduler.go and eventhandlers.go.
func TestGatedAPIsAreInformers(t *testing.T) {
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	for _, g := range gatedAPIs {
		for _, r := range g.Resources {
			if _, err := factory.ForResource(r); err != nil {
				t.Errorf("gate %s: %s: %v", g.Gate, r, err)
			}
		}
	}
}

func allResources() []schema.GroupVersionResource {
	var out []schema.GroupVersionResource
	for _, g := range gatedAPIs {
		out = append(out, g.Resources...)
	}
	return append(out, MutatingAdmissionPolicies)
}

func without(rs []schema.GroupVersionResource, drop ...string) []schema.GroupVersionResource {
	var out []schema.GroupVersionResource
	for _, r := range rs {
		keep := true
		for _, d := range drop {
			keep = keep && r.Resource != d
		}
		if keep {
			out = append(out, r)
		}
	}
	return out
}

func TestDisableUnservedGates(t *testing.T) {
	_, newest := Range()
	for _, tc := range []struct {
		name    string
		enable  map[string]bool
		drop    []string
		wantOff []string
		err     string
	}{
		{name: "everything served: nothing changes", enable: map[string]bool{"DRADeviceTaintRules": true}},
		{name: "device taint rules not served", enable: map[string]bool{"DRADeviceTaintRules": true},
			drop: []string{"devicetaintrules"}, wantOff: []string{"DRADeviceTaintRules"}},
		{name: "pod groups not served", enable: map[string]bool{"GenericWorkload": true},
			drop: []string{"podgroups"}, wantOff: []string{"GenericWorkload"}},
		{name: "DRA locked on but not served", drop: []string{"resourceslices"},
			err: "the gate cannot be turned off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gates, err := GatesAt(nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := gates.SetFromMap(tc.enable); err != nil {
				t.Fatal(err)
			}
			c, err := NewCluster("v"+newest.WithPatch(2).String(), without(allResources(), tc.drop...)...)
			if err != nil {
				t.Fatal(err)
			}
			err = DisableUnservedGates(context.Background(), c, gates)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v; want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for gate := range tc.enable {
				want := !slices.Contains(tc.wantOff, gate)
				if got := gates.Enabled(featuregate.Feature(gate)); got != want {
					t.Errorf("%s enabled = %v; want %v", gate, got, want)
				}
			}
		})
	}
}

// TestFeaturesByMinor: the emulated gates of each supported minor, on a
// server that serves what that minor serves by default, give the README's
// support table. A KEP that changes stage in a bumped release changes a row
// here, and the README's table with it.
func TestFeaturesByMinor(t *testing.T) {
	oldest, newest := Range()
	all := allResources()
	noMAP := without(all, "mutatingadmissionpolicies", "podgroups", "compositepodgroups", "devicetaintrules")
	for _, tc := range []struct {
		minor  *version.Version
		served []schema.GroupVersionResource
		on     []string
		off    []string
	}{
		{minor: oldest, served: noMAP,
			on:  []string{"Dynamic Resource Allocation"},
			off: []string{"DRA-backed extended resources", "Partitionable devices", "Consumable capacity", "Workload API", "Routing policy"}},
		{minor: newest, served: without(all, "podgroups", "compositepodgroups"),
			on:  []string{"Dynamic Resource Allocation", "DRA-backed extended resources", "Partitionable devices", "Consumable capacity", "Routing policy"},
			off: []string{"Workload API"}},
	} {
		t.Run(tc.minor.String(), func(t *testing.T) {
			emulate := tc.minor
			if tc.minor.EqualTo(newest) {
				emulate = nil
			}
			gates, err := GatesAt(emulate)
			if err != nil {
				t.Fatal(err)
			}
			c, err := NewCluster("v"+tc.minor.WithPatch(1).String(), tc.served...)
			if err != nil {
				t.Fatal(err)
			}
			features := Features(c, gates)
			find := func(prefix string) (Feature, bool) {
				i := slices.IndexFunc(features, func(f Feature) bool { return strings.HasPrefix(f.Name, prefix) })
				if i < 0 {
					return Feature{}, false
				}
				return features[i], true
			}
			for _, name := range tc.on {
				if f, ok := find(name); !ok || !f.On {
					t.Errorf("%s: %q is not on: %+v", tc.minor, name, f)
				}
			}
			for _, name := range tc.off {
				f, ok := find(name)
				if !ok || f.On {
					t.Errorf("%s: %q is not off: %+v", tc.minor, name, f)
					continue
				}
				if line := f.Line(c); !strings.Contains(line, "not served by this API server (v"+tc.minor.String()+")") {
					t.Errorf("line %q does not name the server's minor", line)
				}
			}
		})
	}
}
