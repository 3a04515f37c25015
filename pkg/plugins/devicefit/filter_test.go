package devicefit

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/devicefit/devicefit/pkg/apis/config"
	"github.com/devicefit/devicefit/pkg/devices"
)

func unresolvable(reason string) *fwk.Status {
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, reason)
}

func TestFilter(t *testing.T) {
	hopper := map[string]string{
		devices.LabelGPUMemory: "81559", devices.LabelGPUFamily: "hopper",
		devices.LabelGPUComputeMajor: "9", devices.LabelGPUComputeMinor: "0",
	}
	ampere40 := map[string]string{
		devices.LabelGPUMemory: "40960", devices.LabelGPUFamily: "ampere",
		devices.LabelGPUComputeMajor: "8", devices.LabelGPUComputeMinor: "0",
	}
	timeSliced := map[string]string{
		devices.LabelSharingStrategy: "time-slicing", devices.LabelGPUReplicas: "4",
		devices.LabelGPUFamily: "ada-lovelace",
	}
	migSingle := map[string]string{devices.LabelMIGStrategy: "single", devices.LabelGPUMemory: "4864"}
	migMixed := st.MakeNode().Name("mixed").
		Label(devices.LabelMIGStrategy, "mixed").
		Label(devices.LabelGPUProduct, "NVIDIA-A100-SXM4-80GB").
		Label("nvidia.com/mig-1g.10gb.product", "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb").
		Label("nvidia.com/mig-1g.10gb.memory", "9728").
		Label("nvidia.com/mig-1g.10gb.count", "7").
		Capacity(map[v1.ResourceName]string{"nvidia.com/mig-1g.10gb": "7"}).Obj()
	migPod := func(annotations map[string]string) *v1.Pod {
		return st.MakePod().Name("p").Annotations(annotations).Res(map[v1.ResourceName]string{"nvidia.com/mig-1g.10gb": "1"}).Obj()
	}

	tests := []struct {
		name string
		args *config.DeviceFitArgs
		pod  *v1.Pod
		node *v1.Node
		want *fwk.Status
	}{
		{name: "no selector fits any gpu node", pod: gpuPod("1", nil), node: gpuNode("n", "NVIDIA-L4", "4", nil)},
		{name: "no selector fits an unlabelled gpu node", pod: gpuPod("1", nil), node: gpuNode("n", "", "4", nil)},
		{
			name: "product in list",
			pod:  gpuPod("1", map[string]string{devices.AnnotationProducts: "NVIDIA-L4, H100-80GB-HBM3"}),
			node: gpuNode("n", "NVIDIA-H100-80GB-HBM3", "8", hopper),
		},
		{
			name: "H20 does not select H200",
			pod:  gpuPod("1", map[string]string{devices.AnnotationProducts: "H20"}),
			node: gpuNode("n", "NVIDIA-H200", "8", hopper),
			want: unresolvable(ReasonProduct),
		},
		{
			name: "product selector rejects an unlabelled node",
			pod:  gpuPod("1", map[string]string{devices.AnnotationProducts: "*"}),
			node: gpuNode("n", "", "8", nil),
			want: unresolvable(ReasonProduct),
		},
		{
			name: "glob selects a family of products",
			pod:  gpuPod("1", map[string]string{devices.AnnotationProducts: "a100-*"}),
			node: gpuNode("n", "NVIDIA-A100-SXM4-40GB", "8", ampere40),
		},
		{
			name: "excluded product",
			pod:  gpuPod("1", map[string]string{devices.AnnotationExcludeProducts: "NVIDIA-H100-80GB-HBM3"}),
			node: gpuNode("n", "NVIDIA-H100-80GB-HBM3", "8", hopper),
			want: unresolvable(ReasonExcludedProduct),
		},
		{
			name: "min memory met",
			pod:  gpuPod("1", map[string]string{devices.AnnotationMinMemory: "40Gi"}),
			node: gpuNode("n", "NVIDIA-A100-SXM4-40GB", "8", ampere40),
		},
		{
			name: "min memory not met",
			pod:  gpuPod("1", map[string]string{devices.AnnotationMinMemory: "80Gi"}),
			node: gpuNode("n", "NVIDIA-A100-SXM4-40GB", "8", ampere40),
			want: unresolvable(ReasonMemory),
		},
		{
			name: "family",
			pod:  gpuPod("1", map[string]string{devices.AnnotationFamilies: "hopper,blackwell"}),
			node: gpuNode("n", "NVIDIA-A100-SXM4-40GB", "8", ampere40),
			want: unresolvable(ReasonFamily),
		},
		{
			name: "compute capability met",
			pod:  gpuPod("1", map[string]string{devices.AnnotationMinCompute: "8.0"}),
			node: gpuNode("n", "NVIDIA-A100-SXM4-40GB", "8", ampere40),
		},
		{
			name: "compute capability not met",
			pod:  gpuPod("1", map[string]string{devices.AnnotationMinCompute: "8.9"}),
			node: gpuNode("n", "NVIDIA-A100-SXM4-40GB", "8", ampere40),
			want: unresolvable(ReasonCompute),
		},
		{
			name: "garbage compute labels fail closed",
			pod:  gpuPod("1", map[string]string{devices.AnnotationMinCompute: "7.0"}),
			node: gpuNode("n", "NVIDIA-A100-SXM4-40GB", "8", map[string]string{devices.LabelGPUComputeMajor: "eight"}),
			want: unresolvable(ReasonCompute),
		},
		{
			name: "exclusive avoids time-sliced replicas",
			pod:  gpuPod("1", map[string]string{devices.AnnotationSharing: "exclusive"}),
			node: gpuNode("n", "NVIDIA-L4-SHARED", "16", timeSliced),
			want: unresolvable(ReasonShared),
		},
		{
			name: "any accepts time-sliced replicas, product matches without -SHARED",
			pod:  gpuPod("1", map[string]string{devices.AnnotationProducts: "NVIDIA-L4"}),
			node: gpuNode("n", "NVIDIA-L4-SHARED", "16", timeSliced),
		},
		{
			name: "MIG single: the slice is its own product",
			pod:  gpuPod("1", map[string]string{devices.AnnotationProducts: "A100-SXM4-40GB"}),
			node: gpuNode("n", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "56", migSingle),
			want: unresolvable(ReasonProduct),
		},
		{
			name: "MIG single: slice selected by its product",
			pod:  gpuPod("1", map[string]string{devices.AnnotationProducts: "A100-SXM4-40GB-MIG-1g.5gb"}),
			node: gpuNode("n", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "56", migSingle),
		},
		{
			name: "MIG single: slice memory is the slice's",
			pod:  gpuPod("1", map[string]string{devices.AnnotationMinMemory: "10Gi"}),
			node: gpuNode("n", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "56", migSingle),
			want: unresolvable(ReasonMemory),
		},
		{
			name: "MIG invalid serves no nvidia.com/gpu",
			pod:  gpuPod("1", nil),
			node: gpuNode("n", "NVIDIA-A100-SXM4-40GB-MIG-INVALID", "8", map[string]string{devices.LabelMIGStrategy: "single"}),
			want: unresolvable(ReasonMIGInvalid),
		},
		{
			name: "MIG mixed serves its profile, matched on the profile's labels",
			pod:  migPod(map[string]string{devices.AnnotationProducts: "A100-SXM4-80GB-MIG-1g.10gb", devices.AnnotationMinMemory: "9Gi"}),
			node: migMixed,
		},
		{
			name: "MIG profile resource on a single-strategy node",
			pod:  migPod(nil),
			node: gpuNode("n", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "56", migSingle),
			want: unresolvable(ReasonMIGStrategy),
		},
		{
			name: "Require keeps a cpu pod off a device node",
			args: &config.DeviceFitArgs{DeviceResources: devices.DefaultResourcePatterns(), DeviceNodePolicy: config.DeviceNodePolicyRequire},
			pod:  st.MakePod().Name("p").Res(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj(),
			node: gpuNode("n", "NVIDIA-L4", "4", nil),
			want: unresolvable(ReasonDeviceNode),
		},
		{
			name: "Require lets a cpu pod onto a node whose device count is zero",
			args: &config.DeviceFitArgs{DeviceResources: devices.DefaultResourcePatterns(), DeviceNodePolicy: config.DeviceNodePolicyRequire},
			pod:  st.MakePod().Name("p").Res(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj(),
			node: gpuNode("n", "NVIDIA-L4", "0", nil),
		},
		{
			// capacity 4, allocatable 8: a broken status, not 8 devices.
			name: "allocatable above capacity",
			pod:  gpuPod("1", nil),
			node: func() *v1.Node {
				n := gpuNode("n", "NVIDIA-L4", "4", nil)
				// The wrapper shares one map between capacity and allocatable.
				n.Status.Allocatable = n.Status.Capacity.DeepCopy()
				n.Status.Allocatable[gpu] = resource.MustParse("8")
				return n
			}(),
			want: unresolvable(ReasonAllocatableAboveCapacity),
		},
		{
			name: "allocatable without capacity is taken as it is",
			pod:  gpuPod("1", nil),
			node: func() *v1.Node {
				n := gpuNode("n", "NVIDIA-L4", "4", nil)
				n.Status.Capacity = n.Status.Capacity.DeepCopy()
				delete(n.Status.Capacity, gpu)
				return n
			}(),
		},
		{
			name: "Require does not touch device pods",
			args: &config.DeviceFitArgs{DeviceResources: devices.DefaultResourcePatterns(), DeviceNodePolicy: config.DeviceNodePolicyRequire},
			pod:  gpuPod("1", nil),
			node: gpuNode("n", "NVIDIA-L4", "4", nil),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pl := newPluginOrDefault(t, tt.args)
			cycleState := framework.NewCycleState()
			ni := nodeInfo(tt.node)
			// PreFilter sees no node, so its cluster-wide checks (tested in
			// TestPreFilter) stay out of the way of the per-node verdict.
			if _, status := pl.PreFilter(ctx, cycleState, tt.pod, nil); !status.IsSuccess() {
				t.Fatalf("PreFilter: %v", status)
			}
			got := pl.Filter(ctx, cycleState, tt.pod, ni)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("unexpected status (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestFilterWithoutPreFilterState(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pl := newPlugin(t, defaultArgs(), nil)
	got := pl.Filter(ctx, framework.NewCycleState(), gpuPod("1", nil), nodeInfo(gpuNode("n", "NVIDIA-L4", "4", nil)))
	if got.Code() != fwk.Error {
		t.Errorf("got %v, want an Error status", got)
	}
}

// TestFilterAllocations guards the hot path: Filter runs per node per pod.
func TestFilterAllocations(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pl := newPlugin(t, defaultArgs(), nil)
	pod := gpuPod("1", map[string]string{
		devices.AnnotationProducts: "H100*,A100*", devices.AnnotationMinMemory: "40Gi",
		devices.AnnotationFamilies: "hopper,ampere", devices.AnnotationMinCompute: "8.0",
		devices.AnnotationSharing: "exclusive",
	})
	ni := nodeInfo(gpuNode("n", "NVIDIA-H100-80GB-HBM3", "8", map[string]string{
		devices.LabelGPUMemory: "81559", devices.LabelGPUFamily: "hopper",
		devices.LabelGPUComputeMajor: "9", devices.LabelGPUComputeMinor: "0",
	}))
	cycleState := framework.NewCycleState()
	if _, status := pl.PreFilter(ctx, cycleState, pod, []fwk.NodeInfo{ni}); !status.IsSuccess() {
		t.Fatalf("PreFilter: %v", status)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if s := pl.Filter(ctx, cycleState, pod, ni); !s.IsSuccess() {
			t.Fatalf("Filter: %v", s)
		}
	})
	if allocs != 0 {
		t.Errorf("Filter allocated %v times per run, want 0", allocs)
	}
}
