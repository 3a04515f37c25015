package devicepack

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/parallelize"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	"k8s.io/utils/ptr"

	"github.com/devicefit/devicefit/internal/nvdra"
	"github.com/devicefit/devicefit/pkg/apis/config"
	"github.com/devicefit/devicefit/pkg/dra"
)

// draHandle serves a snapshot and DRA objects, as the framework's handle
// does from its informers.
type draHandle struct {
	snapshotHandle
	m *dra.Objects
}

func (h draHandle) SharedDRAManager() fwk.SharedDRAManager { return h.m }

const migClass = "mig.nvidia.com"

// draScores scores pod on nodes (CPU-only node objects whose devices are
// the manager's slices).
func draScores(t *testing.T, args *config.DevicePackArgs, m *dra.Objects, pod *v1.Pod, names ...string) map[string]int64 {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	var nodes []*v1.Node
	for _, n := range names {
		nodes = append(nodes, st.MakeNode().Name(n).Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "64", v1.ResourceMemory: "512Gi"}).Obj())
	}
	snapshot := cache.NewSnapshot(nil, nodes)
	pl, err := New(ctx, args, draHandle{snapshotHandle{snapshot: snapshot}, m})
	if err != nil {
		t.Fatal(err)
	}
	infos, err := snapshot.NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	return scores(t, pl.(*DevicePack), pod, infos...)
}

func claimPod(name string, claims ...string) *v1.Pod {
	p := st.MakePod().Name(name).UID(name).Namespace("ns").Res(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj()
	for _, c := range claims {
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, v1.PodResourceClaim{Name: c, ResourceClaimName: ptr.To(c)})
	}
	return p
}

func TestScoreDRA(t *testing.T) {
	gpuClassObj := nvdra.Class("gpu.nvidia.com", nvdra.WholeGPUs, string(gpu))
	eight := func(node string) *resourceapi.ResourceSlice {
		return nvdra.NodeSlice(node, nvdra.GPUs(0, 8, "NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", "80Gi")...)
	}
	half := []string{"half/gpu-0", "half/gpu-1", "half/gpu-2", "half/gpu-3"}

	t.Run("extended resource: 4 GPUs go where 4 are taken, so an 8-GPU job still fits", func(t *testing.T) {
		m := &dra.Objects{
			Slices:  []*resourceapi.ResourceSlice{eight("half"), eight("fresh")},
			Classes: []*resourceapi.DeviceClass{gpuClassObj},
			Claims:  []*resourceapi.ResourceClaim{nvdra.Allocated("ns", "running", half...)},
		}
		args := staticArgs(t, gpuClass(8, 1), gpuClass(4, 1))
		got := draScores(t, args, m, gpuPod("p", "4"), "half", "fresh")
		if got["half"] <= got["fresh"] {
			t.Errorf("want half > fresh, got %v", got)
		}
	})

	t.Run("claims: a 2-device claim packs onto the node in use", func(t *testing.T) {
		m := &dra.Objects{
			Slices:  []*resourceapi.ResourceSlice{eight("half"), eight("fresh")},
			Classes: []*resourceapi.DeviceClass{gpuClassObj},
			Claims: []*resourceapi.ResourceClaim{nvdra.Allocated("ns", "running", half...),
				nvdra.Claim("ns", "two", "gpu.nvidia.com", 2)},
		}
		args := staticArgs(t, gpuClass(8, 1), gpuClass(2, 1))
		got := draScores(t, args, m, claimPod("p", "two"), "half", "fresh")
		if got["half"] <= got["fresh"] {
			t.Errorf("want half > fresh, got %v", got)
		}
	})

	t.Run("device-free pods: the CPU beside taken DRA devices first", func(t *testing.T) {
		m := &dra.Objects{
			Slices:  []*resourceapi.ResourceSlice{eight("half"), eight("fresh")},
			Classes: []*resourceapi.DeviceClass{gpuClassObj},
			Claims:  []*resourceapi.ResourceClaim{nvdra.Allocated("ns", "running", half...)},
		}
		args := staticArgs(t, gpuClass(1, 1))
		args.BestFitWeight = 1
		got := draScores(t, args, m, claimPod("cpu"), "half", "fresh")
		if got["half"] <= got["fresh"] {
			t.Errorf("want half > fresh, got %v", got)
		}
	})

	t.Run("partitions: a MIG slice goes to the GPU already cut", func(t *testing.T) {
		slices := append(nvdra.Partitionable("cut", 1, 4, "NVIDIA A100-SXM4-40GB", "1g.10gb", "40Gi", "10Gi"),
			nvdra.Partitionable("whole", 1, 4, "NVIDIA A100-SXM4-40GB", "1g.10gb", "40Gi", "10Gi")...)
		m := &dra.Objects{
			Slices:  slices,
			Classes: []*resourceapi.DeviceClass{gpuClassObj, nvdra.Class(migClass, nvdra.MIGs, "")},
			Claims: []*resourceapi.ResourceClaim{nvdra.Allocated("ns", "running", "cut/gpu-0-mig-0"),
				nvdra.Claim("ns", "slice", migClass, 1)},
		}
		args := staticArgs(t, gpuClass(1, 1), config.WorkloadClass{Resource: string(dra.ImplicitResource(migClass)), Devices: 1, Weight: 1})
		got := draScores(t, args, m, claimPod("p", "slice"), "cut", "whole")
		if got["cut"] <= got["whole"] {
			t.Errorf("want cut > whole (keep the other GPU whole), got %v", got)
		}
	})
}

// parallelHandle is draHandle with the framework's parallelizer.
type parallelHandle struct{ draHandle }

func (parallelHandle) Parallelizer() fwk.Parallelizer {
	schedmetrics.Register() // Until counts its goroutines in a scheduler metric
	return parallelize.NewParallelizer(4)
}

// TestFinishDRAParallel: with more DRA candidates than one chunk, finishDRA
// splits them over the parallelizer; every node's fragmentation term must
// be the one computed alone, node by node.
func TestFinishDRAParallel(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	m := &dra.Objects{Classes: []*resourceapi.DeviceClass{nvdra.Class("gpu.nvidia.com", nvdra.WholeGPUs, string(gpu))}}
	var nodes []*v1.Node
	const n = 3*finishChunk + 5
	for i := range n {
		name := fmt.Sprintf("n%03d", i)
		nodes = append(nodes, st.MakeNode().Name(name).Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "64", v1.ResourceMemory: "512Gi"}).Obj())
		m.Slices = append(m.Slices, nvdra.NodeSlice(name, nvdra.GPUs(0, 8, "NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", "80Gi")...))
		// i mod 8 GPUs in use: nodes differ in what a placement strands.
		var used []string
		for g := range i % 8 {
			used = append(used, fmt.Sprintf("%s/gpu-%d", name, g))
		}
		if len(used) > 0 {
			m.Claims = append(m.Claims, nvdra.Allocated("ns", "running-"+name, used...))
		}
	}
	m.Claims = append(m.Claims, nvdra.Claim("ns", "two", "gpu.nvidia.com", 2))
	snapshot := cache.NewSnapshot(nil, nodes)
	pl, err := New(ctx, staticArgs(t, gpuClass(8, 1), gpuClass(2, 2), gpuClass(1, 4)), parallelHandle{draHandle{snapshotHandle{snapshot: snapshot}, m}})
	if err != nil {
		t.Fatal(err)
	}
	infos, err := snapshot.NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	state := framework.NewCycleState()
	if s := pl.(*DevicePack).PreScore(ctx, state, claimPod("p", "two"), infos); !s.IsSuccess() {
		t.Fatalf("PreScore: %v", s)
	}
	c, err := state.Read(preScoreStateKey)
	if err != nil {
		t.Fatal(err)
	}
	s := c.(*preScoreState)
	if len(s.dra) != n {
		t.Fatalf("%d DRA candidates, want %d", len(s.dra), n)
	}
	fragValues := map[int64]bool{}
	for name, dn := range s.dra {
		alone := *dn
		alone.frag = math.MinInt64
		s.finishNode(&alone, nil, nil)
		if dn.frag != alone.frag {
			t.Errorf("%s: frag %d in parallel, %d alone", name, dn.frag, alone.frag)
		}
		fragValues[dn.frag] = true
	}
	if len(fragValues) < 2 {
		t.Errorf("every node has the same fragmentation term %v: the test shows nothing", fragValues)
	}
}

// TestDRAKindsStayInTheCycle: when PreScore reads the node table's cache
// (pkg/plugins/snapshot), the DRA kinds no node label describes get ids in
// this cycle's kind table only: the cache is the table's to write, and the
// DRA devices still count toward their kind's scarcity.
func TestDRAKindsStayInTheCycle(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	// h100 publishes its GPUs in ResourceSlices only: no node label
	// describes them.
	snapshot, args := scarcityFleet(t, st.MakeNode().Name("h100").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "64", v1.ResourceMemory: "512Gi"}).Obj())
	m := &dra.Objects{
		Slices:  []*resourceapi.ResourceSlice{nvdra.NodeSlice("h100", nvdra.GPUs(0, 8, "NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", "80Gi")...)},
		Classes: []*resourceapi.DeviceClass{nvdra.Class("gpu.nvidia.com", nvdra.WholeGPUs, string(gpu))},
	}
	pack, pod, state, all, cyc := afterDeviceFit(t, ctx, args, draHandle{snapshotHandle{snapshot: snapshot}, m})
	before := slices.Clone(cyc.Cache().Kinds())
	if s := pack.PreScore(ctx, state, pod, all); !s.IsSuccess() {
		t.Fatalf("PreScore: %v", s)
	}
	if after := cyc.Cache().Kinds(); !cmp.Equal(after, before) {
		t.Errorf("PreScore changed the node table's kind table:\n%s", cmp.Diff(before, after))
	}
	c, err := state.Read(preScoreStateKey)
	if err != nil {
		t.Fatal(err)
	}
	ps := c.(*preScoreState)
	if len(ps.kinds) != len(before)+1 {
		t.Fatalf("%d kinds in the cycle, want DeviceFit's %d and the DRA GPU's", len(ps.kinds), len(before))
	}
	got := map[string]int64{}
	for id, k := range ps.kinds[:len(before)] {
		got[before[id].Device.Product] += k.free
	}
	got["DRA"] = ps.kinds[len(before)].free
	if want := map[string]int64{"NVIDIA-L4": 4 + 3, "Tesla-T4": 2, "DRA": 8}; !cmp.Equal(got, want) {
		t.Errorf("free devices per kind: got %v, want %v", got, want)
	}
}
