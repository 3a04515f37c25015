package integration

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	testutil "k8s.io/kubernetes/test/integration/util"

	"github.com/devicefit/devicefit/pkg/plugins/devicefit"
)

// The placement fleet: one node per situation DeviceFit must tell apart.
// Node names say what the node is; every scenario asserts, for each of these
// nodes, whether the pod may land there and, if not, the exact reason.
const (
	nH100       = "h100"        // 8 x NVIDIA-H100-80GB-HBM3 (81559 MiB: less than 80Gi!)
	nH200       = "h200"        // 8 x NVIDIA-H200
	nH20        = "h20"         // 8 x NVIDIA-H20: "H20" must never select H200 or vice versa
	nA100       = "a100"        // 8 x NVIDIA-A100-SXM4-80GB (81920 MiB = 80Gi)
	nA10        = "a10"         // 4 x NVIDIA-A10, compute 8.6
	nT4         = "t4"          // 4 x Tesla-T4, whole devices
	nT4Shared   = "t4-ts"       // 2 x Tesla-T4 time-sliced 4 ways: 8 x Tesla-T4-SHARED
	nMIGSingle  = "mig-single"  // A100-40GB, single strategy: 7 x ...-MIG-1g.5gb as nvidia.com/gpu
	nMIGMixed   = "mig-mixed"   // A100-80GB, mixed: 2 whole nvidia.com/gpu + 7 nvidia.com/mig-1g.10gb
	nMIGStale   = "mig-stale"   // single strategy, but still advertising nvidia.com/mig-1g.10gb
	nMIGInvalid = "mig-invalid" // GFD reports -MIG-INVALID: its nvidia.com/gpu serves no one
	nT4Renamed  = "t4-renamed"  // 2 x Tesla-T4 time-sliced 4 ways, advertised as 8 x nvidia.com/gpu.shared
	nAMD        = "amd"         // 4 x amd.com/gpu, AMD labeller labels
	nCPU1       = "cpu-1"       // no devices
	nCPU2       = "cpu-2"       // no devices
)

func placementFleet() []nodeSpec {
	migStale := migSingleLabels(modelA100, "1g.10gb", 9728, 7)
	migInvalid := migSingleLabels(modelA1004, "INVALID", 0, 7)
	return []nodeSpec{
		{name: nH100, labels: gfdLabels(modelH100, 8), devices: devs(gpu, 8)},
		{name: nH200, labels: gfdLabels(modelH200, 8), devices: devs(gpu, 8)},
		{name: nH20, labels: gfdLabels(modelH20, 8), devices: devs(gpu, 8)},
		{name: nA100, labels: gfdLabels(modelA100, 8), devices: devs(gpu, 8)},
		{name: nA10, labels: gfdLabels(modelA10, 4), devices: devs(gpu, 4)},
		{name: nT4, labels: gfdLabels(modelT4, 4), devices: devs(gpu, 4)},
		{name: nT4Shared, labels: timeSlicedLabels(modelT4, 2, 4), devices: devs(gpu, 8)},
		{name: nT4Renamed, labels: renamedSharedLabels(modelT4, 2, 4), devices: devs(gpuShare, 8)},
		{name: nMIGSingle, labels: migSingleLabels(modelA1004, "1g.5gb", 4864, 7), devices: devs(gpu, 7)},
		{name: nMIGMixed, labels: migMixedLabels(modelA100, 2, "1g.10gb", 9728, 7),
			devices: map[v1.ResourceName]int64{gpu: 2, mig1g10: 7}},
		// After a switch from mixed to single, the kubelet keeps the old resource
		// until the device plugin re-registers. Here it still has allocatable, so
		// NodeResourcesFit passes and only DeviceFit can tell the node cannot
		// serve nvidia.com/mig-1g.10gb.
		{name: nMIGStale, labels: migStale, devices: map[v1.ResourceName]int64{gpu: 7, mig1g10: 7}},
		{name: nMIGInvalid, labels: migInvalid, devices: devs(gpu, 7)},
		{name: nAMD, labels: map[string]string{"amd.com/gpu.product-name": "AMD-Instinct-MI300X", "amd.com/gpu.family": "AI"},
			devices: devs(amdGPU, 4)},
		{name: nCPU1},
		{name: nCPU2},
	}
}

// placementCase is one pod shape and the exact set of fleet nodes it fits.
type placementCase struct {
	name          string
	schedulerName string
	devices       map[v1.ResourceName]int64
	// initDevices and sidecarDevices add init containers (see podSpec).
	initDevices    map[v1.ResourceName]int64
	sidecarDevices map[v1.ResourceName]int64
	annotations    map[string]string
	// want is exactly the set of nodes the pod may land on.
	want []string
	// reason is DeviceFit's rejection for every other node that offers enough
	// of the requested devices; reasons overrides it per node. Nodes that lack
	// the devices get NodeResourcesFit's "Insufficient <resource>", and the
	// -MIG-INVALID node rejects every nvidia.com/gpu pod; both are implied.
	reason  string
	reasons map[string]string
	// unresolvable is DeviceFit's PreFilter message when no node in the fleet
	// can ever serve the pod; the scheduler then reports it alone.
	unresolvable string
}

// noNodeMatchesGPU is DeviceFit's PreFilter message for a selector that no
// node offering nvidia.com/gpu satisfies.
const noNodeMatchesGPU = "no node offering nvidia.com/gpu matches the pod's devicefit.io annotations"

// gpuNodes are the nodes whose nvidia.com/gpu serves a pod without selector.
var gpuNodes = []string{nH100, nH200, nH20, nA100, nA10, nT4, nT4Shared, nMIGSingle, nMIGMixed, nMIGStale}

func without(nodes []string, drop ...string) []string {
	var out []string
	for _, n := range nodes {
		if !slices.Contains(drop, n) {
			out = append(out, n)
		}
	}
	return out
}

func allNodes(fleet []nodeSpec) []string {
	out := make([]string, len(fleet))
	for i, n := range fleet {
		out[i] = n.name
	}
	return out
}

func (tc placementCase) podSpec() podSpec {
	return podSpec{schedulerName: tc.schedulerName, devices: tc.devices, annotations: tc.annotations,
		initDevices: tc.initDevices, sidecarDevices: tc.sidecarDevices}
}

// demand is the pod's effective device request, as upstream computes it
// (k8s.io/component-helpers: init containers, sidecars).
func (tc placementCase) demand() map[v1.ResourceName]int64 {
	pod := makePod("ns", tc.podSpec())
	out := map[v1.ResourceName]int64{}
	for name, q := range resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}) {
		if isDeviceResource(name) && !q.IsZero() {
			out[name] = q.Value()
		}
	}
	return out
}

// expectedReason is why node must reject tc (n is not in tc.want).
func (tc placementCase) expectedReason(t *testing.T, n nodeSpec) string {
	t.Helper()
	if r, ok := tc.reasons[n.name]; ok {
		return r
	}
	demand := tc.demand()
	for _, name := range sortedResources(demand) {
		if n.devices[name] < demand[name] {
			return "Insufficient " + string(name)
		}
	}
	if n.name == nMIGInvalid && demand[gpu] > 0 {
		return devicefit.ReasonMIGInvalid
	}
	if tc.reason == "" {
		t.Fatalf("test table: case %q excludes node %s but names no reason", tc.name, n.name)
	}
	return tc.reason
}

// tooBigWhenPinned is DeviceFit's PreFilter message for a probe pinned to
// n when n offers a requested resource, but fewer than the probe asks: the
// only node its affinity admits is too small, which no preemption changes.
// Empty when n's own reason stands (tc.reasons, or a resource n does not
// offer at all).
func (tc placementCase) tooBigWhenPinned(n nodeSpec) string {
	if _, ok := tc.reasons[n.name]; ok {
		return ""
	}
	demand := tc.demand()
	for _, name := range sortedResources(demand) {
		if have := n.devices[name]; have > 0 && have < demand[name] {
			return fmt.Sprintf("requests %d %s; the largest node the pod's node selector, affinity and tolerations admit offers %d", demand[name], name, have)
		}
	}
	return ""
}

func sortedResources(m map[v1.ResourceName]int64) []v1.ResourceName {
	out := make([]v1.ResourceName, 0, len(m))
	for name := range m {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// aggregateMessage is the start of the PodScheduled message the scheduler
// writes when no node fits: "0/N nodes are available: <count> <reason>, ...".
func aggregateMessage(reasons map[string]string) string {
	counts := map[string]int{}
	for _, r := range reasons {
		counts[r]++
	}
	var parts []string
	for r, n := range counts {
		parts = append(parts, fmt.Sprintf("%d %s", n, r))
	}
	sort.Strings(parts)
	return fmt.Sprintf("0/%d nodes are available: %s.", len(reasons), strings.Join(parts, ", "))
}

// runPlacementCase checks tc in two phases, each in the case's namespace:
//  1. the pod as a user writes it: it lands on a node of want, or, when want
//     is empty, is unschedulable with exactly the expected per-node histogram;
//  2. one probe per fleet node, pinned to that node by a required node
//     affinity on metadata.name (DeviceFit ignores affinity, so the probe
//     reads DeviceFit's verdict for exactly that node): the nodes whose probe
//     binds must be exactly want, and every other probe must carry the
//     expected reason for its node.
func (c *cluster) runPlacementCase(t *testing.T, fleet []nodeSpec, tc placementCase) {
	for _, n := range tc.want {
		for name, count := range tc.demand() {
			if spec := fleetNode(fleet, n); spec.devices[name] < count {
				t.Fatalf("test table: case %q wants node %s, which has only %d %s", tc.name, n, spec.devices[name], name)
			}
		}
	}
	ns := testutil.WithNewNamespace(t, c.TestContext, "placement").NS.Name
	t.Cleanup(func() { c.deletePodsAndWait(t, ns) })

	base := tc.podSpec()

	if tc.unresolvable != "" {
		free := base
		free.name = "free"
		pod := c.createPod(t, ns, free)
		o := c.waitForOutcomes(t, ns, []string{pod.Name})[pod.Name]
		want := fmt.Sprintf("0/%d nodes are available: %s.", len(fleet), tc.unresolvable)
		if !o.unschedulable || !strings.HasPrefix(o.message, want) {
			t.Errorf("want unschedulable with a message starting %q, got %v", want, o)
		}
		return
	}

	// Phase 1: the unpinned pod.
	free := base
	free.name = "free"
	pod := c.createPod(t, ns, free)
	o := c.waitForOutcomes(t, ns, []string{pod.Name})[pod.Name]
	if len(tc.want) > 0 {
		if !slices.Contains(tc.want, o.node) {
			t.Errorf("unpinned pod: want bound to one of %v, got %v", tc.want, o)
		}
	} else {
		want := map[string]string{}
		for _, n := range fleet {
			want[n.name] = tc.expectedReason(t, n)
		}
		prefix := aggregateMessage(want)
		if !o.unschedulable || !strings.HasPrefix(o.message, prefix) {
			t.Errorf("unpinned pod: want unschedulable with a message starting %q, got %v", prefix, o)
		}
	}
	c.deletePodsAndWait(t, ns)

	// Phase 2: one pinned probe per node.
	names := make([]string, 0, len(fleet))
	for _, n := range fleet {
		probe := base
		probe.name = "on-" + n.name
		probe.onlyNode = n.name
		c.createPod(t, ns, probe)
		names = append(names, probe.name)
	}
	outcomes := c.waitForOutcomes(t, ns, names)
	var got []string
	for _, n := range fleet {
		o := outcomes["on-"+n.name]
		switch {
		case o.node != "":
			if o.node != n.name {
				t.Errorf("probe pinned to %s was bound to %s", n.name, o.node)
			}
			got = append(got, n.name)
		case slices.Contains(tc.want, n.name):
			// Reported by the set diff below; say why it was rejected.
			t.Logf("probe on %s: %v", n.name, o)
		default:
			// The pinned probe's histogram has exactly one entry for its node,
			// followed by ", " or "." (so "nvidia.com/gpu" does not pass for
			// "nvidia.com/gpu.shared").
			want := "1 " + tc.expectedReason(t, n)
			if tooBig := tc.tooBigWhenPinned(n); tooBig != "" {
				want = tooBig
			}
			if !strings.Contains(o.message, want+",") && !strings.Contains(o.message, want+".") {
				t.Errorf("probe on %s: want a message containing %q, got %q", n.name, want, o.message)
			}
		}
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(tc.want))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("nodes the pod fits (-want,+got):\n%s", diff)
	}
}

func fleetNode(fleet []nodeSpec, name string) nodeSpec {
	for _, n := range fleet {
		if n.name == name {
			return n
		}
	}
	panic("no fleet node " + name)
}

// unresolvableCase is a pod DeviceFit's PreFilter rejects as a whole.
type unresolvableCase struct {
	name          string
	schedulerName string
	devices       map[v1.ResourceName]int64
	initDevices   map[v1.ResourceName]int64
	sidecar       map[v1.ResourceName]int64
	annotations   map[string]string
	// message is the PreFilter status message, exactly.
	message string
}

func testPlacement(t *testing.T, c *cluster) {
	fleet := placementFleet()
	for _, n := range fleet {
		c.createNode(t, n)
	}
	c.startScheduler(t, defaultProfiles()...)
	if err := testutil.WaitForNodesInCache(c.Ctx, c.Scheduler, len(fleet)); err != nil {
		t.Fatalf("scheduler cache: %v", err)
	}

	gpu1 := devs(gpu, 1)
	ann := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}

	t.Run("selectors", func(t *testing.T) {
		for _, tc := range []placementCase{
			{
				name:    "no selector: every node whose GPUs serve pods",
				devices: gpu1,
				want:    gpuNodes,
			},
			{
				name:        "products H20 is exact: not H200",
				devices:     gpu1,
				annotations: ann(annProducts, "H20"),
				want:        []string{nH20},
				reason:      devicefit.ReasonProduct,
			},
			{
				name:        "products NVIDIA-H200 is exact: not H20",
				devices:     gpu1,
				annotations: ann(annProducts, "NVIDIA-H200"),
				want:        []string{nH200},
				reason:      devicefit.ReasonProduct,
			},
			{
				name:        "products list, case-insensitive, vendor prefix optional",
				devices:     gpu1,
				annotations: ann(annProducts, "h20, nvidia-h100-80gb-hbm3"),
				want:        []string{nH20, nH100},
				reason:      devicefit.ReasonProduct,
			},
			{
				name:        "products glob H20* selects H20 and H200",
				devices:     gpu1,
				annotations: ann(annProducts, "H20*"),
				want:        []string{nH20, nH200},
				reason:      devicefit.ReasonProduct,
			},
			{
				name:        "products A100-SXM4-80GB: whole devices only, not its MIG slices",
				devices:     gpu1,
				annotations: ann(annProducts, "A100-SXM4-80GB"),
				want:        []string{nA100, nMIGMixed},
				reason:      devicefit.ReasonProduct,
			},
			{
				name:        "products MIG single slice",
				devices:     gpu1,
				annotations: ann(annProducts, "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"),
				want:        []string{nMIGSingle},
				reason:      devicefit.ReasonProduct,
			},
			{
				name:        "products Tesla-T4 selects the time-sliced replicas too",
				devices:     gpu1,
				annotations: ann(annProducts, "Tesla-T4"),
				want:        []string{nT4, nT4Shared},
				reason:      devicefit.ReasonProduct,
			},
			{
				name:        "exclude-products H20 keeps H200",
				devices:     gpu1,
				annotations: ann(annExcludeProducts, "H20"),
				want:        without(gpuNodes, nH20),
				reason:      devicefit.ReasonExcludedProduct,
			},
			{
				name:        "exclude-products globs",
				devices:     gpu1,
				annotations: ann(annExcludeProducts, "H20*,tesla-*"),
				want:        without(gpuNodes, nH20, nH200, nT4, nT4Shared),
				reason:      devicefit.ReasonExcludedProduct,
			},
			{
				name:        "products and exclude-products together",
				devices:     gpu1,
				annotations: ann(annProducts, "H*", annExcludeProducts, "H20"),
				want:        []string{nH100, nH200},
				reason:      devicefit.ReasonProduct,
				reasons:     map[string]string{nH20: devicefit.ReasonExcludedProduct},
			},
			{
				name:        "min-memory 80Gi: H100 80GB HBM3 has 81559 MiB < 81920",
				devices:     gpu1,
				annotations: ann(annMinMemory, "80Gi"),
				want:        []string{nH200, nH20, nA100, nMIGMixed},
				reason:      devicefit.ReasonMemory,
			},
			{
				name:        "min-memory 40000Mi",
				devices:     gpu1,
				annotations: ann(annMinMemory, "40000Mi"),
				want:        []string{nH100, nH200, nH20, nA100, nMIGMixed},
				reason:      devicefit.ReasonMemory,
			},
			{
				name:        "families hopper",
				devices:     gpu1,
				annotations: ann(annFamilies, "hopper"),
				want:        []string{nH100, nH200, nH20},
				reason:      devicefit.ReasonFamily,
			},
			{
				name:        "families Ampere,turing",
				devices:     gpu1,
				annotations: ann(annFamilies, "Ampere,turing"),
				want:        []string{nA100, nA10, nT4, nT4Shared, nMIGSingle, nMIGMixed, nMIGStale},
				reason:      devicefit.ReasonFamily,
			},
			{
				name:        "min-compute 8.6",
				devices:     gpu1,
				annotations: ann(annMinCompute, "8.6"),
				want:        []string{nH100, nH200, nH20, nA10},
				reason:      devicefit.ReasonCompute,
			},
			{
				name:        "min-compute 9",
				devices:     gpu1,
				annotations: ann(annMinCompute, "9"),
				want:        []string{nH100, nH200, nH20},
				reason:      devicefit.ReasonCompute,
			},
			{
				name:        "sharing exclusive avoids time-sliced replicas",
				devices:     gpu1,
				annotations: ann(annSharing, "exclusive"),
				want:        without(gpuNodes, nT4Shared),
				reason:      devicefit.ReasonShared,
			},
			{
				name:        "sharing exclusive with products Tesla-T4",
				devices:     gpu1,
				annotations: ann(annProducts, "Tesla-T4", annSharing, "exclusive"),
				want:        []string{nT4},
				reason:      devicefit.ReasonProduct,
				reasons:     map[string]string{nT4Shared: devicefit.ReasonShared},
			},
			{
				name:        "sharing any is the default",
				devices:     gpu1,
				annotations: ann(annSharing, "any", annProducts, "Tesla-T4"),
				want:        []string{nT4, nT4Shared},
				reason:      devicefit.ReasonProduct,
			},
			{
				name:        "several selectors: all must hold",
				devices:     gpu1,
				annotations: ann(annFamilies, "hopper,ampere", annMinMemory, "90Gi", annMinCompute, "9.0"),
				want:        []string{nH200, nH20},
				reason:      devicefit.ReasonMemory,
			},
			{
				name:        "8 devices: capacity is NodeResourcesFit's, the selector DeviceFit's",
				devices:     devs(gpu, 8),
				annotations: ann(annFamilies, "hopper,turing"),
				want:        []string{nH100, nH200, nH20, nT4Shared},
				reason:      devicefit.ReasonFamily,
			},
			{
				name:        "gpu.shared resource: selected by product",
				devices:     devs(gpuShare, 1),
				annotations: ann(annProducts, "tesla-t4"),
				want:        []string{nT4Renamed},
			},
			{
				name:         "gpu.shared resource is never exclusive",
				devices:      devs(gpuShare, 1),
				annotations:  ann(annSharing, "exclusive"),
				unresolvable: "no node offering nvidia.com/gpu.shared matches the pod's devicefit.io annotations",
			},
			{
				name:        "other vendors: AMD product label",
				devices:     devs(amdGPU, 1),
				annotations: ann(annProducts, "AMD-Instinct-MI300X"),
				want:        []string{nAMD},
			},
			{
				name:         "other vendors: an NVIDIA product never matches an AMD device",
				devices:      devs(amdGPU, 1),
				annotations:  ann(annProducts, "H100-80GB-HBM3"),
				unresolvable: "no node offering amd.com/gpu matches the pod's devicefit.io annotations",
			},
			{
				name:           "init and sidecar containers count as the scheduler counts them",
				devices:        devs(gpu, 4),
				initDevices:    devs(gpu, 8), // max(8, 4+1) = 8 devices
				sidecarDevices: devs(gpu, 1),
				annotations:    ann(annFamilies, "hopper,ampere"),
				want:           []string{nH100, nH200, nH20, nA100},
				reason:         devicefit.ReasonFamily,
			},
			{
				name:         "a product no node has is unresolvable at once",
				devices:      gpu1,
				annotations:  ann(annProducts, "NVIDIA-B200"),
				unresolvable: noNodeMatchesGPU,
			},
		} {
			t.Run(tc.name, func(t *testing.T) { c.runPlacementCase(t, fleet, tc) })
		}
	})

	t.Run("mig", func(t *testing.T) {
		mig1 := devs(mig1g10, 1)
		for _, tc := range []placementCase{
			{
				name:    "mixed strategy resource: only the mixed node; the stale single node cannot serve it",
				devices: mig1,
				want:    []string{nMIGMixed},
				reasons: map[string]string{nMIGStale: devicefit.ReasonMIGStrategy},
			},
			{
				name:        "mixed strategy product label of the profile",
				devices:     mig1,
				annotations: ann(annProducts, "A100-SXM4-80GB-MIG-1g.10gb"),
				want:        []string{nMIGMixed},
				reasons:     map[string]string{nMIGStale: devicefit.ReasonMIGStrategy},
			},
			{
				name:         "mixed strategy: the whole-device product is not the slice's",
				devices:      mig1,
				annotations:  ann(annProducts, "A100-SXM4-80GB"),
				unresolvable: "no node offering nvidia.com/mig-1g.10gb matches the pod's devicefit.io annotations",
			},
			{
				name:         "mixed strategy: slice memory 9728 MiB < 10Gi",
				devices:      mig1,
				annotations:  ann(annMinMemory, "10Gi"),
				unresolvable: "no node offering nvidia.com/mig-1g.10gb matches the pod's devicefit.io annotations",
			},
			{
				name:        "mixed strategy: family and compute come from the parent device",
				devices:     mig1,
				annotations: ann(annFamilies, "ampere", annMinCompute, "8.0"),
				want:        []string{nMIGMixed},
				reasons:     map[string]string{nMIGStale: devicefit.ReasonMIGStrategy},
			},
			{
				name:    "whole devices and MIG slices in one pod: each resource is checked",
				devices: map[v1.ResourceName]int64{gpu: 1, mig1g10: 1},
				want:    []string{nMIGMixed},
				reasons: map[string]string{nMIGStale: devicefit.ReasonMIGStrategy},
			},
			{
				name:        "single strategy: slice memory is the node's gpu.memory",
				devices:     gpu1,
				annotations: ann(annMinMemory, "5Gi", annFamilies, "ampere"),
				want:        []string{nA100, nA10, nMIGMixed, nMIGStale},
				reason:      devicefit.ReasonFamily,
				reasons:     map[string]string{nMIGSingle: devicefit.ReasonMemory},
			},
		} {
			t.Run(tc.name, func(t *testing.T) { c.runPlacementCase(t, fleet, tc) })
		}
	})

	t.Run("deviceNodePolicy", func(t *testing.T) {
		for _, tc := range []placementCase{
			{
				name:          "Require: a CPU-only pod lands only on device-free nodes",
				schedulerName: strictSchedulerName,
				want:          []string{nCPU1, nCPU2},
				reason:        devicefit.ReasonDeviceNode,
			},
			{
				name:          "None: a CPU-only pod may land anywhere",
				schedulerName: schedulerName,
				want:          allNodes(fleet),
			},
			{
				name:          "Require does not affect device pods",
				schedulerName: strictSchedulerName,
				devices:       devs(gpu, 2),
				annotations:   ann(annProducts, "H100-80GB-HBM3"),
				want:          []string{nH100},
				reason:        devicefit.ReasonProduct,
			},
			{
				name:          "Require: other vendors' devices count as devices",
				schedulerName: strictSchedulerName,
				devices:       devs(amdGPU, 1),
				want:          []string{nAMD},
			},
		} {
			t.Run(tc.name, func(t *testing.T) { c.runPlacementCase(t, fleet, tc) })
		}
	})

	t.Run("unresolvable", func(t *testing.T) {
		for _, tc := range []unresolvableCase{
			{
				name:    "count above the largest node",
				devices: devs(gpu, 16),
				message: "requests 16 nvidia.com/gpu; the largest node offers 8",
			},
			{
				name:    "MIG count above the largest node",
				devices: devs(mig1g10, 8),
				message: "requests 8 nvidia.com/mig-1g.10gb; the largest node offers 7",
			},
			{
				name:        "an init container's count is the pod's count",
				devices:     gpu1,
				initDevices: devs(gpu, 16),
				message:     "requests 16 nvidia.com/gpu; the largest node offers 8",
			},
			{
				name:          "allowedCounts apply to the effective count: sidecar 1 + app 2",
				schedulerName: strictSchedulerName,
				devices:       devs(gpu, 2),
				sidecar:       devs(gpu, 1),
				message:       "requests 3 nvidia.com/gpu; allowedCounts are 1, 2, 4, 8",
			},
			{
				name:          "count outside allowedCounts",
				schedulerName: strictSchedulerName,
				devices:       devs(gpu, 3),
				message:       "requests 3 nvidia.com/gpu; allowedCounts are 1, 2, 4, 8",
			},
			{
				name:        "min-memory is not a quantity",
				devices:     gpu1,
				annotations: ann(annMinMemory, "lots"),
				message:     `annotation devicefit.io/min-memory: want a quantity such as 40Gi or 81920Mi (value "lots")`,
			},
			{
				name:        "min-compute is not a capability",
				devices:     gpu1,
				annotations: ann(annMinCompute, "ampere"),
				message:     `annotation devicefit.io/min-compute: want a compute capability such as 8.0 or 9.0 (value "ampere")`,
			},
			{
				name:        "sharing is neither exclusive nor any",
				devices:     gpu1,
				annotations: ann(annSharing, "sometimes"),
				message:     `annotation devicefit.io/sharing: want "exclusive" or "any" (value "sometimes")`,
			},
			{
				name:        "products with an empty entry",
				devices:     gpu1,
				annotations: ann(annProducts, "H100,,A100"),
				message:     `annotation devicefit.io/products: empty entry at position 2 (value "H100,,A100")`,
			},
			{
				name:        "products with a character GFD never writes",
				devices:     gpu1,
				annotations: ann(annProducts, "H100/80GB"),
				message:     `annotation devicefit.io/products: product "H100/80GB": character '/' cannot appear in a GFD product label (value "H100/80GB")`,
			},
			{
				name:        "misspelt annotation",
				devices:     gpu1,
				annotations: ann("devicefit.io/product", "H100"),
				message: `annotation devicefit.io/product: unknown annotation; known: devicefit.io/products, ` +
					`devicefit.io/exclude-products, devicefit.io/min-memory, devicefit.io/families, ` +
					`devicefit.io/min-compute, devicefit.io/sharing (value "H100")`,
			},
			{
				name:        "every bad annotation is reported",
				devices:     gpu1,
				annotations: ann(annMinMemory, "-1Gi", annFamilies, "hopper!"),
				message: `annotation devicefit.io/families: family "hopper!": want a GFD family name such as hopper or ada-lovelace (value "hopper!")` +
					"\n" + `annotation devicefit.io/min-memory: must be positive (value "-1Gi")`,
			},
		} {
			t.Run(tc.name, func(t *testing.T) {
				ns := testutil.WithNewNamespace(t, c.TestContext, "unresolvable").NS.Name
				t.Cleanup(func() { c.deletePodsAndWait(t, ns) })
				pod := c.createPod(t, ns, podSpec{name: "pod", schedulerName: tc.schedulerName, devices: tc.devices,
					initDevices: tc.initDevices, sidecarDevices: tc.sidecar, annotations: tc.annotations})
				msg := c.waitForUnschedulable(t, pod)
				// PreFilter rejections are reported once for the pod, not per node.
				want := fmt.Sprintf("0/%d nodes are available: %s.", len(fleet), tc.message)
				if !strings.HasPrefix(msg, want) {
					t.Errorf("PodScheduled message:\n got: %q\nwant prefix: %q", msg, want)
				}
			})
		}
	})

	t.Run("other schedulers' pods are left alone", func(t *testing.T) {
		ns := testutil.WithNewNamespace(t, c.TestContext, "foreign").NS.Name
		t.Cleanup(func() { c.deletePodsAndWait(t, ns) })
		foreign := c.createPod(t, ns, podSpec{name: "foreign", schedulerName: v1.DefaultSchedulerName, devices: gpu1})
		// Created after the foreign pod: once it is bound, our scheduler has
		// had its chance at the foreign pod too (same informer, FIFO events).
		ours := c.createPod(t, ns, podSpec{name: "ours", devices: gpu1})
		c.waitForBound(t, ours)
		// And a while longer, to let any stray attempt land.
		time.Sleep(2 * time.Second)
		got, err := c.ClientSet.CoreV1().Pods(ns).Get(c.Ctx, foreign.Name, getOpts)
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.NodeName != "" {
			t.Errorf("pod with schedulerName %q was bound to %s by the devicefit scheduler", v1.DefaultSchedulerName, got.Spec.NodeName)
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == v1.PodScheduled {
				t.Errorf("pod with schedulerName %q got a PodScheduled condition: %+v", v1.DefaultSchedulerName, cond)
			}
		}
	})

	t.Run("a new node that fits wakes the waiting pod", func(t *testing.T) {
		ns := testutil.WithNewNamespace(t, c.TestContext, "requeue").NS.Name
		t.Cleanup(func() { c.deletePodsAndWait(t, ns) })
		pod := c.createPod(t, ns, podSpec{name: "b200", devices: devs(gpu, 2), annotations: ann(annProducts, "B200")})
		// Rejected by PreFilter as unresolvable: only the node hints requeue it.
		msg := c.waitForUnschedulable(t, pod)
		if !strings.Contains(msg, noNodeMatchesGPU) {
			t.Fatalf("want unschedulable for %q, got %q", noNodeMatchesGPU, msg)
		}
		b200 := gpuModel{"NVIDIA-B200", 183359, "blackwell", 10, 0}
		c.createNode(t, nodeSpec{name: "b200", labels: gfdLabels(b200, 8), devices: devs(gpu, 8)})
		if node := c.waitForNode(t, pod); node != "b200" {
			t.Errorf("want the pod bound to the new node b200, got %s", node)
		}
	})

	t.Run("a relabelled node wakes the waiting pod", func(t *testing.T) {
		ns := testutil.WithNewNamespace(t, c.TestContext, "relabel").NS.Name
		t.Cleanup(func() { c.deletePodsAndWait(t, ns) })
		// A spare node, not in the fleet tables, whose GFD labels will change
		// (as after a driver upgrade that renames the product).
		c.createNode(t, nodeSpec{name: "spare", labels: gfdLabels(modelV100, 8), devices: devs(gpu, 8)})
		if err := testutil.WaitForNodesInCache(c.Ctx, c.Scheduler, len(fleet)+1); err != nil {
			t.Fatalf("scheduler cache: %v", err)
		}
		pod := c.createPod(t, ns, podSpec{name: "gb200", devices: devs(gpu, 1), annotations: ann(annProducts, "NVIDIA-GB200")})
		// Rejected by PreFilter as unresolvable: only the node hints requeue it.
		msg := c.waitForUnschedulable(t, pod)
		if !strings.Contains(msg, noNodeMatchesGPU) {
			t.Fatalf("want unschedulable for %q, got %q", noNodeMatchesGPU, msg)
		}
		node, err := c.ClientSet.CoreV1().Nodes().Get(c.Ctx, "spare", getOpts)
		if err != nil {
			t.Fatal(err)
		}
		node.Labels["nvidia.com/gpu.product"] = "NVIDIA-GB200"
		if _, err := c.ClientSet.CoreV1().Nodes().Update(c.Ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("relabelling node spare: %v", err)
		}
		// The hint must requeue the pod at once; without it the pod would wait
		// for the 5-minute unschedulable flush and this wait would time out.
		if node := c.waitForNode(t, pod); node != "spare" {
			t.Errorf("want the pod bound to the relabelled node spare, got %s", node)
		}
	})
}
