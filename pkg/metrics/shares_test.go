package metrics_test

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/testutil"
	fwk "k8s.io/kube-scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/devicefit/devicefit/internal/nvdra"
	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/dra"
	"github.com/devicefit/devicefit/pkg/metrics"
)

// sharesResource is what the shared class serves: its implicit extended
// resource name, as claims for it count in the workload.
const sharesResource = v1.ResourceName(resourceapi.ResourceDeviceClassPrefix + "shared.nvidia.com")

// TestDeviceShares: devicefit_device_shares from real ResourceSlices and
// allocated claims, read as the scheduler does (pkg/dra's view through
// InventorySource): two nodes of two shared L40S each (1000 shares per
// GPU), and one of two exclusive H100s that has no shares to count.
func TestDeviceShares(t *testing.T) {
	slices := []*resourceapi.ResourceSlice{
		nvdra.NodeSlice("s0", nvdra.SharedGPUs(0, 2, "NVIDIA L40S", "Ada Lovelace", "8.9.0", "46068Mi")...),
		nvdra.NodeSlice("s1", nvdra.SharedGPUs(0, 2, "NVIDIA L40S", "Ada Lovelace", "8.9.0", "46068Mi")...),
		nvdra.NodeSlice("h0", nvdra.GPUs(0, 2, "NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", "81559Mi")...),
	}
	classes := []*resourceapi.DeviceClass{
		nvdra.Class("gpu.nvidia.com", nvdra.ExclusiveGPUs, "nvidia.com/gpu"),
		nvdra.Class("shared.nvidia.com", nvdra.SharedGPUsOnly, ""),
	}
	share := func(name, device string, milli int64) *resourceapi.ResourceClaim {
		return nvdra.AllocatedShare("ns", name, device, milli)
	}
	half := devices.Class{Resource: sharesResource, Devices: 1, Capacity: capacity("500"), MilliCPU: 1000, Weight: 1}
	quarter := devices.Class{Resource: sharesResource, Devices: 1, Capacity: capacity("250"), MilliCPU: 1000, Weight: 1}
	whole := devices.Class{Resource: sharesResource, Devices: 1, MilliCPU: 1000, Weight: 1}
	for _, tc := range []struct {
		name     string
		claims   []*resourceapi.ResourceClaim
		workload []devices.Class
		// used, free, stranded of the L40S, in GPUs.
		want [3]float64
	}{{
		name:     "no claim: four whole GPUs free, none stranded",
		workload: []devices.Class{half},
		want:     [3]float64{0, 4, 0},
	}, {
		name:     "two halves on one GPU: used up, the others untouched",
		claims:   []*resourceapi.ResourceClaim{share("a", "s0/gpu-0", 500), share("b", "s0/gpu-0", 500)},
		workload: []devices.Class{half},
		want:     [3]float64{1, 3, 0},
	}, {
		name:     "a half on each node: both halves usable by half jobs",
		claims:   []*resourceapi.ResourceClaim{share("a", "s0/gpu-0", 500), share("b", "s1/gpu-0", 500)},
		workload: []devices.Class{half},
		want:     [3]float64{1, 3, 0},
	}, {
		name:     "three quarters: the quarter left is stranded for half jobs",
		claims:   []*resourceapi.ResourceClaim{share("a", "s0/gpu-0", 250), share("b", "s0/gpu-0", 250), share("c", "s0/gpu-0", 250)},
		workload: []devices.Class{half},
		want:     [3]float64{0.75, 3.25, 0.25},
	}, {
		name:   "three quarters, half and quarter jobs alike: half of it stranded",
		claims: []*resourceapi.ResourceClaim{share("a", "s0/gpu-0", 250), share("b", "s0/gpu-0", 250), share("c", "s0/gpu-0", 250)},
		// The weights are the jobs bound and pending; equal here.
		workload: []devices.Class{half, quarter},
		want:     [3]float64{0.75, 3.25, 0.125},
	}, {
		name:     "a quarter on each node, whole-GPU jobs only: no fractional job to strand for",
		claims:   []*resourceapi.ResourceClaim{share("a", "s0/gpu-0", 250), share("b", "s1/gpu-1", 250)},
		workload: []devices.Class{whole},
		want:     [3]float64{0.5, 3.5, 0},
	}, {
		name:   "a claim asking no capacity takes a shared GPU whole",
		claims: []*resourceapi.ResourceClaim{share("a", "s1/gpu-1", 1000), share("b", "s0/gpu-0", 250)},
		// Half jobs can use s0/gpu-0's 0.75 (and the untouched ones).
		workload: []devices.Class{half, whole},
		want:     [3]float64{1.25, 2.75, 0},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			objects := &dra.Objects{Slices: slices, Classes: classes, Claims: tc.claims}
			w, err := devices.NewWorkload(tc.workload)
			if err != nil {
				t.Fatal(err)
			}
			nodes, pods := listers(t, node("s0"), node("s1"), node("h0"))
			set, err := devices.NewResourceSet(devices.DefaultResourcePatterns())
			if err != nil {
				t.Fatal(err)
			}
			c := metrics.CollectorOf(metrics.Source{
				Nodes: nodes, Pods: pods, Resources: set,
				Workload: func([]*v1.Pod) *devices.Workload { return w },
				DRA:      dra.InventorySource(dra.NewTracker(), func() fwk.SharedDRAManager { return objects }),
			})
			want := sharesHelp
			for i, state := range []string{"free", "stranded", "used"} {
				want += fmt.Sprintf("devicefit_device_shares{product=\"NVIDIA-L40S\",resource=%q,state=%q} %g\n",
					sharesResource, state, [3]float64{tc.want[1], tc.want[2], tc.want[0]}[i])
			}
			if err := testutil.CustomCollectAndCompare(c, strings.NewReader(want), "devicefit_device_shares"); err != nil {
				t.Error(err)
			}
		})
	}
}

const sharesHelp = `# HELP devicefit_device_shares [ALPHA] Shared devices (DRA consumable capacity: allowMultipleAllocations) by device resource, product and state, in whole devices (a device's share is the most consumed of its capacities; 500 of a GPU's 1000 shares is 0.5): used (consumed by the claims' allocations); free (left: untouched devices whole and the free share of partly used ones); stranded (the expected free share of partly used devices that a fractional job of the workload, asking a share of the resource, could not use where it is).
# TYPE devicefit_device_shares gauge
`

func capacity(shares string) devices.CapacityRequest {
	return devices.NewCapacityRequest(&resourceapi.CapacityRequirements{
		Requests: map[resourceapi.QualifiedName]resource.Quantity{nvdra.Shares: resource.MustParse(shares)},
	})
}

// node is a DRA node: CPU and memory, no device plugin resource.
func node(name string) *v1.Node {
	return st.MakeNode().Name(name).Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "64", v1.ResourceMemory: "512Gi"}).Obj()
}

func listers(t testing.TB, nodes ...*v1.Node) (corelisters.NodeLister, corelisters.PodLister) {
	t.Helper()
	ni := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, n := range nodes {
		if err := ni.Add(n); err != nil {
			t.Fatal(err)
		}
	}
	return corelisters.NewNodeLister(ni), corelisters.NewPodLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}))
}
