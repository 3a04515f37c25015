package devicepack

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/devicefit/devicefit/pkg/apis/config"
)

func TestScore(t *testing.T) {
	tests := []struct {
		name  string
		args  func(t *testing.T) *config.DevicePackArgs
		pod   *v1.Pod
		nodes []fwk.NodeInfo
		want  map[string]int64
	}{
		{
			// Workload: half 4-GPU jobs, half 1-GPU jobs.
			// "four-free" (8 GPUs, 4 used): 1 GPU leaves 3, where the 4-GPU
			// class no longer fits: delta = 0.5·3 - 0 = +1.5 → raw -1500·100.
			// "three-free" (8, 5 used): 2 left: 0.5·2 - 0.5·3 = -0.5 → +500·100.
			// "empty" (8, 0 used): 7 left, both fit: 0 → 0.
			// No product is scarce, so FGD's bands rank them
			// (100·sigmoid(frag/1000), truncated): 18, 62, 50.
			// Normalised: three-free 100, empty 100 - ⌈100·12/44⌉ = 72,
			// four-free 0.
			name: "fragmentation: use devices that are stranded anyway",
			args: func(t *testing.T) *config.DevicePackArgs {
				return staticArgs(t, gpuClass(4, 1), gpuClass(1, 1))
			},
			pod: gpuPod("p", "1"),
			nodes: []fwk.NodeInfo{
				gpuNodeInfo("four-free", "NVIDIA-A100", "40960", "8", "4"),
				gpuNodeInfo("three-free", "NVIDIA-A100", "40960", "8", "5"),
				gpuNodeInfo("empty", "NVIDIA-A100", "40960", "8", "0"),
			},
			want: map[string]int64{"four-free": 0, "three-free": 100, "empty": 72},
		},
		{
			// A 4-GPU pod: on "four-free" it leaves 0 free (delta 0 - 0 = 0);
			// on "empty" it leaves 4, still usable (delta 0). Fragmentation
			// ties; with a product in demand (the A100-only class puts
			// pressure on every A100) the exact score stays, and best fit
			// decides: four-free (8/8 = 1000) beats empty (4/8 = 500).
			name: "best fit breaks fragmentation ties where a product is in demand",
			args: func(t *testing.T) *config.DevicePackArgs {
				a := staticArgs(t, gpuClass(4, 1), gpuClass(1, 1),
					config.WorkloadClass{Resource: string(gpu), Devices: 1, Products: "NVIDIA-A100", Weight: 1})
				a.BestFitWeight = 10
				return a
			},
			pod: gpuPod("p", "4"),
			nodes: []fwk.NodeInfo{
				gpuNodeInfo("four-free", "NVIDIA-A100", "40960", "8", "4"),
				gpuNodeInfo("empty", "NVIDIA-A100", "40960", "8", "0"),
			},
			want: map[string]int64{"four-free": 100, "empty": 0},
		},
		{
			// Same shape, two products: keep the H100 (81559 MiB, the most
			// valuable by memory) for the jobs that need it.
			name: "least valuable product",
			args: func(t *testing.T) *config.DevicePackArgs {
				a := staticArgs(t, gpuClass(1, 1))
				a.ProductValueWeight = 1
				return a
			},
			pod: gpuPod("p", "1"),
			nodes: []fwk.NodeInfo{
				gpuNodeInfo("h100", "NVIDIA-H100-80GB-HBM3", "81559", "8", "0"),
				gpuNodeInfo("l4", "NVIDIA-L4", "23034", "8", "0"),
			},
			want: map[string]int64{"h100": 0, "l4": 100},
		},
		{
			name: "productValues override memory",
			args: func(t *testing.T) *config.DevicePackArgs {
				a := staticArgs(t, gpuClass(1, 1))
				a.ProductValueWeight = 1
				a.ProductValues = []config.ProductValue{{Product: "NVIDIA-L4", Value: 1000}, {Product: "*", Value: 1}}
				return a
			},
			pod: gpuPod("p", "1"),
			nodes: []fwk.NodeInfo{
				gpuNodeInfo("h100", "NVIDIA-H100-80GB-HBM3", "81559", "8", "0"),
				gpuNodeInfo("l4", "NVIDIA-L4", "23034", "8", "0"),
			},
			want: map[string]int64{"h100": 100, "l4": 0},
		},
		{
			// Half the jobs accept only T4. An unconstrained 1-GPU job on the
			// 2-GPU T4 node (fuller after: best fit) would take a device only
			// half the jobs can use elsewhere. Free: 2 T4 + 8 L4 = 10; the
			// T4-only class accepts 2: pressure 0.5 · 10/2 = 2.5 devices per
			// T4 taken → raw -2500·100 on t4, 0 on l4. Fragmentation: the
			// T4-only class strands all 8 L4s (0.5·8 = 4 → 0.5·7 = 3.5, delta
			// -0.5) and the T4s strand nothing either way (delta 0): l4 +50000.
			// Best fit (weight 10): t4 1/2 = 500·10, l4 1/8 = 125·10.
			// t4 = -250000 + 5000, l4 = 50000 + 1250: l4 100, t4 0.
			name: "scarcity: keep the product constrained jobs need",
			args: func(t *testing.T) *config.DevicePackArgs {
				a := staticArgs(t, gpuClass(1, 1), config.WorkloadClass{Resource: string(gpu), Devices: 1, Products: "Tesla-T4", Weight: 1})
				a.BestFitWeight = 10
				return a
			},
			pod: gpuPod("p", "1"),
			nodes: []fwk.NodeInfo{
				gpuNodeInfo("t4", "Tesla-T4", "15360", "2", "0"),
				gpuNodeInfo("l4", "NVIDIA-L4", "23034", "8", "0"),
			},
			want: map[string]int64{"t4": 0, "l4": 100},
		},
		{
			// Without the scarcity term, best fit sends it to the T4 node.
			name: "without scarcity, best fit fills the small T4 node",
			args: func(t *testing.T) *config.DevicePackArgs {
				a := staticArgs(t, gpuClass(1, 1), config.WorkloadClass{Resource: string(gpu), Devices: 1, Products: "Tesla-T4", Weight: 1})
				a.BestFitWeight, a.FragmentationWeight, a.ScarcityWeight = 10, 0, 0
				return a
			},
			pod: gpuPod("p", "1"),
			nodes: []fwk.NodeInfo{
				gpuNodeInfo("t4", "Tesla-T4", "15360", "2", "0"),
				gpuNodeInfo("l4", "NVIDIA-L4", "23034", "8", "0"),
			},
			want: map[string]int64{"t4": 100, "l4": 0},
		},
		{
			// deviceNodePenalty: a CPU pod goes to the CPU node. The
			// workload has no CPU or memory needs, so fragmentation is 0
			// everywhere and only the penalty speaks.
			name: "device-node penalty steers device-free pods",
			args: func(t *testing.T) *config.DevicePackArgs {
				a := staticArgs(t, gpuClass(1, 1))
				a.DeviceNodePenalty = 10
				return a
			},
			pod:   st.MakePod().Name("cpu").UID("cpu").Res(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj(),
			nodes: []fwk.NodeInfo{gpuNodeInfo("gpu", "NVIDIA-L4", "23034", "8", "0"), cpuNodeInfo("cpu")},
			want:  map[string]int64{"gpu": 0, "cpu": 100},
		},
		{
			// Fragmentation is 0 on every node (the workload needs no CPU),
			// so best fit decides: for a device-free pod, how full the
			// node's devices are (8/8, 4/8, 0/8 → 1000, 500, 0). The CPU
			// node still wins through the device-node penalty (10·1000).
			name: "device-free pods spend the CPU beside taken devices first",
			args: func(t *testing.T) *config.DevicePackArgs {
				a := staticArgs(t, gpuClass(1, 1))
				a.BestFitWeight = 1
				return a
			},
			pod: st.MakePod().Name("cpu").UID("cpu").Res(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj(),
			nodes: []fwk.NodeInfo{
				gpuNodeInfo("full", "NVIDIA-L4", "23034", "8", "8"),
				gpuNodeInfo("half", "NVIDIA-L4", "23034", "8", "4"),
				gpuNodeInfo("empty", "NVIDIA-L4", "23034", "8", "0"),
			},
			want: map[string]int64{"full": 100, "half": 50, "empty": 0},
		},
		{
			name: "the device-node penalty outweighs fullness",
			args: func(t *testing.T) *config.DevicePackArgs {
				a := staticArgs(t, gpuClass(1, 1))
				a.BestFitWeight, a.DeviceNodePenalty = 1, 10
				return a
			},
			pod: st.MakePod().Name("cpu").UID("cpu").Res(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj(),
			nodes: []fwk.NodeInfo{
				gpuNodeInfo("full", "NVIDIA-L4", "23034", "8", "8"),
				gpuNodeInfo("empty", "NVIDIA-L4", "23034", "8", "0"),
				cpuNodeInfo("cpu"),
			},
			// raw: full -10000+1000, empty -10000, cpu 0.
			want: map[string]int64{"full": 10, "empty": 0, "cpu": 100},
		},
		{
			// A CPU pod that would leave a GPU node too little CPU for the
			// workload's jobs (40 cores each) strands its GPUs: 8 GPUs · 1.
			name: "a cpu pod strands gpus by taking their cpu",
			args: func(t *testing.T) *config.DevicePackArgs {
				return staticArgs(t, config.WorkloadClass{Resource: string(gpu), Devices: 1, MilliCPU: 40000, Weight: 1})
			},
			pod: st.MakePod().Name("cpu").UID("cpu").Res(map[v1.ResourceName]string{v1.ResourceCPU: "30"}).Obj(),
			nodes: []fwk.NodeInfo{
				gpuNodeInfo("gpu-a", "NVIDIA-L4", "23034", "8", "0"),
				cpuNodeInfo("cpu"),
			},
			want: map[string]int64{"gpu-a": 0, "cpu": 100},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := newPlugin(t, tt.args(t))
			got := scores(t, pl, tt.pod, tt.nodes...)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("unexpected scores (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestPreScoreSkipsWithoutDeviceNodes(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pl := newPlugin(t, defaultArgs(t))
	s := pl.PreScore(ctx, framework.NewCycleState(), gpuPod("p", "1"), []fwk.NodeInfo{cpuNodeInfo("a"), cpuNodeInfo("b")})
	if !s.IsSkip() {
		t.Errorf("got %v, want Skip", s)
	}
}

func TestNormalizeScore(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pl := newPlugin(t, defaultArgs(t))
	list := fwk.NodeScoreList{{Name: "a", Score: -9e15}, {Name: "b", Score: 9e15}, {Name: "c", Score: 0}}
	if s := pl.NormalizeScore(ctx, nil, nil, list); !s.IsSuccess() {
		t.Fatal(s)
	}
	want := fwk.NodeScoreList{{Name: "a", Score: 0}, {Name: "b", Score: 100}, {Name: "c", Score: 50}}
	if diff := cmp.Diff(want, list); diff != "" {
		t.Errorf("extreme range (-want,+got):\n%s", diff)
	}
	// A node 0.03 of the range below the best is not the best: rounded to
	// nearest it scored 100 as well, and the order of the nodes chose.
	near := fwk.NodeScoreList{{Name: "best", Score: 1_000_000}, {Name: "near", Score: 999_700}, {Name: "worst", Score: 0}, {Name: "twin", Score: 1_000_000}}
	_ = pl.NormalizeScore(ctx, nil, nil, near)
	// Of the best raw scores, the lowest name alone keeps 100.
	want = fwk.NodeScoreList{{Name: "best", Score: 100}, {Name: "near", Score: 99}, {Name: "worst", Score: 0}, {Name: "twin", Score: 99}}
	if diff := cmp.Diff(want, near); diff != "" {
		t.Errorf("near the best (-want,+got):\n%s", diff)
	}
	same := fwk.NodeScoreList{{Name: "b", Score: 7}, {Name: "c", Score: 7}, {Name: "a", Score: 7}}
	_ = pl.NormalizeScore(ctx, nil, nil, same)
	want = fwk.NodeScoreList{{Name: "b", Score: 99}, {Name: "c", Score: 99}, {Name: "a", Score: 100}}
	if diff := cmp.Diff(want, same); diff != "" {
		t.Errorf("equal scores, the first name (-want,+got):\n%s", diff)
	}
}

func TestScoreAllocations(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pl := newPlugin(t, defaultArgs(t))
	pod := gpuPod("p", "2")
	ni := gpuNodeInfo("n", "NVIDIA-A100", "40960", "8", "3")
	state := framework.NewCycleState()
	if s := pl.PreScore(ctx, state, pod, []fwk.NodeInfo{ni}); !s.IsSuccess() {
		t.Fatal(s)
	}
	if allocs := testing.AllocsPerRun(100, func() { _, _ = pl.Score(ctx, state, pod, ni) }); allocs != 0 {
		t.Errorf("Score allocated %v times per run, want 0", allocs)
	}
}
