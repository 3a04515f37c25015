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

func TestPreFilter(t *testing.T) {
	nodes := []*v1.Node{
		gpuNode("h100", "NVIDIA-H100-80GB-HBM3", "8", nil),
		gpuNode("l4", "NVIDIA-L4", "4", nil),
		st.MakeNode().Name("cpu").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "64"}).Obj(),
	}
	limitOnly := st.MakePod().Name("p").Obj()
	limitOnly.Spec.Containers = []v1.Container{{Name: "train", Resources: v1.ResourceRequirements{
		Limits: v1.ResourceList{gpu: resource.MustParse("2")},
	}}}
	requestOnly := st.MakePod().Name("p").Obj()
	requestOnly.Spec.Containers = []v1.Container{{Name: "train", Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{gpu: resource.MustParse("2")},
	}}}
	mismatched := st.MakePod().Name("p").Obj()
	mismatched.Spec.Containers = []v1.Container{{Name: "train", Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{gpu: resource.MustParse("1")},
		Limits:   v1.ResourceList{gpu: resource.MustParse("2")},
	}}}

	tests := []struct {
		name       string
		args       *config.DeviceFitArgs
		pod        *v1.Pod
		wantStatus *fwk.Status
		wantDemand devices.Demand
	}{
		{
			name:       "cpu pod is skipped",
			pod:        st.MakePod().Name("p").Res(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj(),
			wantStatus: fwk.NewStatus(fwk.Skip),
		},
		{
			name: "cpu pod under Require keeps state for Filter",
			args: &config.DeviceFitArgs{DeviceResources: devices.DefaultResourcePatterns(), DeviceNodePolicy: config.DeviceNodePolicyRequire},
			pod:  st.MakePod().Name("p").Res(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj(),
		},
		{
			name:       "gpu pod within the largest node",
			pod:        gpuPod("8", nil),
			wantDemand: devices.Demand{{Name: gpu, Count: 8}},
		},
		{
			name:       "count above the largest node is unresolvable",
			pod:        gpuPod("16", nil),
			wantStatus: fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "requests 16 nvidia.com/gpu; the largest node offers 8"),
		},
		{
			// No node offers amd.com/gpu at all: NodeResourcesFit's Insufficient
			// covers it (a node may join), DeviceFit does not call it unresolvable.
			name:       "resource no node offers is left to NodeResourcesFit",
			pod:        st.MakePod().Name("p").Res(map[v1.ResourceName]string{"amd.com/gpu": "2"}).Obj(),
			wantDemand: devices.Demand{{Name: "amd.com/gpu", Count: 2}},
		},
		{
			name:       "a product no node has",
			pod:        gpuPod("1", map[string]string{devices.AnnotationProducts: "NVIDIA-B300"}),
			wantStatus: fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "no node offering nvidia.com/gpu matches the pod's devicefit.io annotations"),
		},
		{
			// Contradictory: every product it asks for, it also excludes.
			name: "products and exclude-products that cancel out",
			pod: gpuPod("1", map[string]string{
				devices.AnnotationProducts: "H100*, NVIDIA-L4", devices.AnnotationExcludeProducts: "NVIDIA-H100-80GB-HBM3,L4",
			}),
			wantStatus: fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "no node offering nvidia.com/gpu matches the pod's devicefit.io annotations"),
		},
		{
			// The H100 node offers 8, but the pod wants L4s: the largest is 4.
			name:       "count above the largest matching node",
			pod:        gpuPod("8", map[string]string{devices.AnnotationProducts: "NVIDIA-L4"}),
			wantStatus: fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "requests 8 nvidia.com/gpu; the largest node matching the pod's devicefit.io annotations offers 4"),
		},
		{
			name:       "count within the largest matching node",
			pod:        gpuPod("4", map[string]string{devices.AnnotationProducts: "NVIDIA-L4"}),
			wantDemand: devices.Demand{{Name: gpu, Count: 4}},
		},
		{
			name:       "count outside allowedCounts",
			args:       &config.DeviceFitArgs{DeviceResources: devices.DefaultResourcePatterns(), DeviceNodePolicy: config.DeviceNodePolicyNone, AllowedCounts: []int64{8, 1, 4, 2}},
			pod:        gpuPod("3", nil),
			wantStatus: fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "requests 3 nvidia.com/gpu; allowedCounts are 1, 2, 4, 8"),
		},
		{
			name:       "count inside allowedCounts",
			args:       &config.DeviceFitArgs{DeviceResources: devices.DefaultResourcePatterns(), DeviceNodePolicy: config.DeviceNodePolicyNone, AllowedCounts: []int64{1, 2, 4, 8}},
			pod:        gpuPod("4", nil),
			wantDemand: devices.Demand{{Name: gpu, Count: 4}},
		},
		{
			name:       "fractional quantity",
			pod:        st.MakePod().Name("p").Res(map[v1.ResourceName]string{gpu: "500m"}).Obj(),
			wantStatus: fwk.NewStatus(fwk.UnschedulableAndUnresolvable, `container "con0": nvidia.com/gpu quantity 500m is not a whole number of devices`),
		},
		{
			name:       "limit without request",
			pod:        limitOnly,
			wantStatus: fwk.NewStatus(fwk.UnschedulableAndUnresolvable, `container "train": nvidia.com/gpu has limit 2 but no request; device requests must equal limits`),
		},
		{
			name:       "request without limit",
			pod:        requestOnly,
			wantStatus: fwk.NewStatus(fwk.UnschedulableAndUnresolvable, `container "train": nvidia.com/gpu requests 2 without a limit; devices need limits equal to requests`),
		},
		{
			name:       "requests differ from limits",
			pod:        mismatched,
			wantStatus: fwk.NewStatus(fwk.UnschedulableAndUnresolvable, `container "train": nvidia.com/gpu requests 1 but limits 2; device requests must equal limits`),
		},
		{
			name:       "unparsable selector names the annotation",
			pod:        gpuPod("1", map[string]string{devices.AnnotationMinMemory: "lots"}),
			wantStatus: fwk.NewStatus(fwk.UnschedulableAndUnresolvable, `annotation devicefit.io/min-memory: want a quantity such as 40Gi or 81920Mi (value "lots")`),
		},
		{
			name:       "device resources outside the configured set are not devices",
			args:       &config.DeviceFitArgs{DeviceResources: []string{"amd.com/gpu"}, DeviceNodePolicy: config.DeviceNodePolicyNone},
			pod:        gpuPod("16", nil),
			wantStatus: fwk.NewStatus(fwk.Skip),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pl := newPluginOrDefault(t, tt.args)
			cycleState := framework.NewCycleState()
			_, status := pl.PreFilter(ctx, cycleState, tt.pod, nodeInfos(nodes...))
			if diff := cmp.Diff(tt.wantStatus, status); diff != "" {
				t.Fatalf("unexpected status (-want,+got):\n%s", diff)
			}
			if !status.IsSuccess() {
				return
			}
			s, err := getPreFilterState(cycleState)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantDemand, s.demand); diff != "" {
				t.Errorf("unexpected demand (-want,+got):\n%s", diff)
			}
			if len(s.labels) != len(s.demand) {
				t.Errorf("got %d label sets for %d requests", len(s.labels), len(s.demand))
			}
		})
	}
}

func TestPreFilterMIGSetup(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	// The only node still advertising nvidia.com/mig-1g.10gb runs the single
	// strategy: the resource is stale and no node can serve the pod.
	stale := st.MakeNode().Name("stale").Label(devices.LabelMIGStrategy, "single").
		Capacity(map[v1.ResourceName]string{"nvidia.com/mig-1g.10gb": "7"}).Obj()
	pod := st.MakePod().Name("p").Res(map[v1.ResourceName]string{"nvidia.com/mig-1g.10gb": "1"}).Obj()
	pl := newPlugin(t, defaultArgs(), nil)
	_, status := pl.PreFilter(ctx, framework.NewCycleState(), pod, nodeInfos(stale))
	want := fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "no node offering nvidia.com/mig-1g.10gb has a MIG setup that can serve it")
	if diff := cmp.Diff(want, status); diff != "" {
		t.Errorf("unexpected status (-want,+got):\n%s", diff)
	}
}

// TestPreFilterOwnRules: a count above every node the pod's own node
// selector, affinity and tolerations admit is unresolvable, though a node
// the pod rules out is big enough: no preemption can make it fit.
func TestPreFilterOwnRules(t *testing.T) {
	reserved := v1.Taint{Key: "reserved", Effect: v1.TaintEffectNoSchedule}
	bigL4 := gpuNode("l4-big", "NVIDIA-L4", "8", nil)
	bigL4.Spec.Taints = []v1.Taint{reserved}
	nodes := []*v1.Node{
		gpuNode("h100", "NVIDIA-H100-80GB-HBM3", "8", map[string]string{"team": "x"}),
		gpuNode("l4", "NVIDIA-L4", "4", map[string]string{"team": "y"}),
		bigL4,
	}
	withSelector := func(p *v1.Pod, sel map[string]string) *v1.Pod {
		p.Spec.NodeSelector = sel
		return p
	}
	tolerating := gpuPod("6", map[string]string{devices.AnnotationProducts: "NVIDIA-L4"})
	tolerating.Spec.Tolerations = []v1.Toleration{{Key: reserved.Key, Operator: v1.TolerationOpExists}}
	tests := []struct {
		name       string
		pod        *v1.Pod
		wantStatus *fwk.Status
	}{{
		name:       "node selector admits only the 4-GPU node",
		pod:        withSelector(gpuPod("6", nil), map[string]string{"team": "y"}),
		wantStatus: fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "requests 6 nvidia.com/gpu; the largest node the pod's node selector, affinity and tolerations admit offers 4"),
	}, {
		name: "within the largest node the selector admits",
		pod:  withSelector(gpuPod("8", nil), map[string]string{"team": "x"}),
	}, {
		// The 8-GPU L4 node is tainted; the H100 node is admitted but not
		// an L4: the largest admitted L4 node offers 4.
		name:       "taint and annotations together",
		pod:        gpuPod("6", map[string]string{devices.AnnotationProducts: "NVIDIA-L4"}),
		wantStatus: fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "requests 6 nvidia.com/gpu; the largest node the pod's node selector, affinity, tolerations and devicefit.io annotations admit offers 4"),
	}, {
		name: "tolerating the taint",
		pod:  tolerating,
	}, {
		// No admitted node offers the resource at all: NodeAffinity says
		// why per node.
		name: "selector admits no device node",
		pod:  withSelector(gpuPod("6", nil), map[string]string{"team": "z"}),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pl := newPluginOrDefault(t, nil)
			_, status := pl.PreFilter(ctx, framework.NewCycleState(), tt.pod, nodeInfos(nodes...))
			if diff := cmp.Diff(tt.wantStatus, status); diff != "" {
				t.Errorf("unexpected status (-want,+got):\n%s", diff)
			}
		})
	}
}
