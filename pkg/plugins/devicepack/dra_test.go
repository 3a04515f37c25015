package devicepack

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
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
