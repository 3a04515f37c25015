package devicepack

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/devicefit/devicefit/pkg/apis/config"
	configv1 "github.com/devicefit/devicefit/pkg/apis/config/v1"
	"github.com/devicefit/devicefit/pkg/devices"
)

const gpu = devices.NVIDIAGPU

// defaultArgs are the v1 defaults converted, as the scheduler would get them.
func defaultArgs(t testing.TB) *config.DevicePackArgs {
	t.Helper()
	var v configv1.DevicePackArgs
	configv1.SetDefaults_DevicePackArgs(&v)
	var args config.DevicePackArgs
	if err := configv1.Convert_v1_DevicePackArgs_To_config_DevicePackArgs(&v, &args, nil); err != nil {
		t.Fatal(err)
	}
	return &args
}

// staticArgs: a Static workload of the given (devices, weight) GPU classes,
// fragmentation only unless the caller sets other weights.
func staticArgs(t *testing.T, classes ...config.WorkloadClass) *config.DevicePackArgs {
	args := defaultArgs(t)
	args.Workload = config.WorkloadSpec{Mode: config.WorkloadStatic, HalfLifePods: 1, Classes: classes}
	args.BestFitWeight, args.ProductValueWeight = 0, 0
	return args
}

func gpuClass(devices, weight int64) config.WorkloadClass {
	return config.WorkloadClass{Resource: string(gpu), Devices: devices, Weight: weight}
}

func newPlugin(t *testing.T, args *config.DevicePackArgs) *DevicePack {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	pl, err := New(ctx, args, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return pl.(*DevicePack)
}

// gpuNodeInfo: a node with total GPUs of product, of which used are taken by
// one running pod.
func gpuNodeInfo(name, product, memoryMiB string, total, used string) fwk.NodeInfo {
	n := st.MakeNode().Name(name).Label(devices.LabelGPUProduct, product).Label(devices.LabelGPUMemory, memoryMiB).
		Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "64", v1.ResourceMemory: "512Gi", gpu: total}).Obj()
	ni := framework.NewNodeInfo()
	ni.SetNode(n)
	if used != "0" {
		ni.AddPod(st.MakePod().Name(name + "-running").UID(name + "-running").Node(name).
			Res(map[v1.ResourceName]string{v1.ResourceCPU: "1", gpu: used}).Obj())
	}
	return ni
}

func cpuNodeInfo(name string) fwk.NodeInfo {
	ni := framework.NewNodeInfo()
	ni.SetNode(st.MakeNode().Name(name).Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "64", v1.ResourceMemory: "512Gi"}).Obj())
	return ni
}

func gpuPod(name, count string) *v1.Pod {
	return st.MakePod().Name(name).UID(name).Namespace("ns").
		Res(map[v1.ResourceName]string{v1.ResourceCPU: "1", v1.ResourceMemory: "1Gi", gpu: count}).Obj()
}

// scores runs PreScore, Score and NormalizeScore over nodes.
func scores(t *testing.T, pl *DevicePack, pod *v1.Pod, nodes ...fwk.NodeInfo) map[string]int64 {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	state := framework.NewCycleState()
	if s := pl.PreScore(ctx, state, pod, nodes); !s.IsSuccess() {
		t.Fatalf("PreScore: %v", s)
	}
	list := make(fwk.NodeScoreList, len(nodes))
	for i, n := range nodes {
		score, s := pl.Score(ctx, state, pod, n)
		if !s.IsSuccess() {
			t.Fatalf("Score(%s): %v", n.Node().Name, s)
		}
		list[i] = fwk.NodeScore{Name: n.Node().Name, Score: score}
	}
	if s := pl.NormalizeScore(ctx, state, pod, list); !s.IsSuccess() {
		t.Fatalf("NormalizeScore: %v", s)
	}
	out := map[string]int64{}
	for _, s := range list {
		out[s.Name] = s.Score
	}
	return out
}
