package metrics

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/devicefit/devicefit/pkg/devices"
)

const (
	gpu   = devices.NVIDIAGPU
	mig1g = v1.ResourceName("nvidia.com/mig-1g.10gb")
	h100  = "NVIDIA-H100-80GB-HBM3"
	l4    = "NVIDIA-L4"
)

// gpuNode has 64 CPUs, 512Gi and gpus devices of product ("" = unlabelled).
func gpuNode(name, product, gpus string) *v1.Node {
	w := st.MakeNode().Name(name).Capacity(map[v1.ResourceName]string{
		v1.ResourceCPU: "64", v1.ResourceMemory: "512Gi", gpu: gpus,
	})
	if product != "" {
		w = w.Label(devices.LabelGPUProduct, product)
	}
	return w.Obj()
}

// boundPod requests cpu and gpus on node ("" = pending).
func boundPod(name, node, cpu, gpus string) *v1.Pod {
	res := map[v1.ResourceName]string{v1.ResourceCPU: cpu}
	if gpus != "" {
		res[gpu] = gpus
	}
	return st.MakePod().Name(name).Namespace("ns").UID(name).Node(node).Res(res).Obj()
}

// jobs is a workload of one class: n GPUs and 1 CPU per job.
func jobs(t testing.TB, n int64) *devices.Workload {
	t.Helper()
	w, err := devices.NewWorkload([]devices.Class{{Resource: gpu, Devices: n, MilliCPU: 1000, MemoryBytes: 1 << 30, Weight: 1}})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func workload(t testing.TB, classes ...devices.Class) *devices.Workload {
	t.Helper()
	w, err := devices.NewWorkload(classes)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func defaultSet(t testing.TB) devices.ResourceSet {
	t.Helper()
	set, err := devices.NewResourceSet(devices.DefaultResourcePatterns())
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func TestSummarize(t *testing.T) {
	migNode := st.MakeNode().Name("mig").Capacity(map[v1.ResourceName]string{
		v1.ResourceCPU: "64", v1.ResourceMemory: "512Gi", mig1g: "7", gpu: "0",
	}).Label(devices.LabelMIGStrategy, "mixed").
		Label("nvidia.com/mig-1g.10gb.product", "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb").Obj()

	tests := []struct {
		name     string
		nodes    []*v1.Node
		pods     []*v1.Pod
		workload *devices.Workload
		want     map[DeviceKey]DeviceCounts
	}{{
		// 4-GPU jobs: 2 free on a is below 4, stranded; 8 free on b are usable.
		name:     "free devices below the job size are stranded",
		nodes:    []*v1.Node{gpuNode("a", h100, "8"), gpuNode("b", h100, "8")},
		pods:     []*v1.Pod{boundPod("p1", "a", "1", "4"), boundPod("p2", "a", "1", "2")},
		workload: jobs(t, 4),
		want:     map[DeviceKey]DeviceCounts{{gpu, h100}: {Allocatable: 16, Allocated: 6, Free: 10, Stranded: 2}},
	}, {
		// A CPU pod takes all 64 CPUs of a: its 8 GPUs cannot host a job.
		name:     "CPU used up strands every free device",
		nodes:    []*v1.Node{gpuNode("a", l4, "8")},
		pods:     []*v1.Pod{boundPod("cpu", "a", "64", "")},
		workload: jobs(t, 1),
		want:     map[DeviceKey]DeviceCounts{{gpu, l4}: {Allocatable: 8, Free: 8, Stranded: 8}},
	}, {
		name:  "pending and terminated pods hold nothing; no workload strands nothing",
		nodes: []*v1.Node{gpuNode("a", h100, "8")},
		pods: []*v1.Pod{
			boundPod("pending", "", "1", "8"),
			st.MakePod().Name("done").Namespace("ns").Node("a").Phase(v1.PodSucceeded).Res(map[v1.ResourceName]string{gpu: "8"}).Obj(),
			st.MakePod().Name("failed").Namespace("ns").Node("a").Phase(v1.PodFailed).Res(map[v1.ResourceName]string{gpu: "8"}).Obj(),
			boundPod("running", "a", "1", "3"),
		},
		want: map[DeviceKey]DeviceCounts{{gpu, h100}: {Allocatable: 8, Allocated: 3, Free: 5}},
	}, {
		// An init container asking for 4 GPUs holds max(1, 4) = 4 while the
		// pod is bound; 8 - 4 free. Overhead adds 2 CPUs: 64 - (1 + 61 + 2)
		// leaves no CPU, so all 4 free GPUs are stranded.
		name:  "init containers and overhead count as the scheduler counts them",
		nodes: []*v1.Node{gpuNode("a", h100, "8")},
		pods: []*v1.Pod{
			st.MakePod().Name("init").Namespace("ns").Node("a").
				Res(map[v1.ResourceName]string{v1.ResourceCPU: "1", gpu: "1"}).
				InitReq(map[v1.ResourceName]string{gpu: "4"}).Obj(),
			st.MakePod().Name("overhead").Namespace("ns").Node("a").
				Res(map[v1.ResourceName]string{v1.ResourceCPU: "61"}).
				Overhead(v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}).Obj(),
		},
		workload: jobs(t, 1),
		want:     map[DeviceKey]DeviceCounts{{gpu, h100}: {Allocatable: 8, Allocated: 4, Free: 4, Stranded: 4}},
	}, {
		// The zero nvidia.com/gpu a mixed-strategy node advertises is omitted;
		// the MIG slice is its own product.
		name:     "MIG mixed slices by slice product",
		nodes:    []*v1.Node{migNode},
		pods:     []*v1.Pod{st.MakePod().Name("m").Namespace("ns").Node("mig").Res(map[v1.ResourceName]string{mig1g: "2"}).Obj()},
		workload: jobs(t, 1),
		want: map[DeviceKey]DeviceCounts{
			// No job of the workload asks for slices: none known stranded.
			{mig1g, "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb"}: {Allocatable: 7, Allocated: 2, Free: 5},
		},
	}, {
		// Half the jobs ask for 4 slices: the 3 free are stranded for them;
		// the 1-slice jobs can use them; the whole-GPU jobs do not count.
		name:  "slices are judged by the jobs that ask for slices",
		nodes: []*v1.Node{migNode},
		pods:  []*v1.Pod{st.MakePod().Name("m").Namespace("ns").Node("mig").Res(map[v1.ResourceName]string{mig1g: "4"}).Obj()},
		workload: workload(t,
			devices.Class{Resource: gpu, Devices: 8, Weight: 10},
			devices.Class{Resource: mig1g, Devices: 4, Weight: 1},
			devices.Class{Resource: mig1g, Devices: 1, Weight: 1}),
		want: map[DeviceKey]DeviceCounts{
			// 3 free · 1/2 = 1.5.
			{mig1g, "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb"}: {Allocatable: 7, Allocated: 4, Free: 3, Stranded: 1.5},
		},
	}, {
		// A GPU turned unhealthy under running pods: allocatable 2, requests 4.
		name:     "allocatable below requests: free is 0, allocated is the truth",
		nodes:    []*v1.Node{gpuNode("a", "", "2")},
		pods:     []*v1.Pod{boundPod("p", "a", "1", "4")},
		workload: jobs(t, 1),
		want:     map[DeviceKey]DeviceCounts{{gpu, ProductUnknown}: {Allocatable: 2, Allocated: 4}},
	}, {
		name: "requests for a resource the node stopped advertising",
		nodes: []*v1.Node{st.MakeNode().Name("a").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "8"}).
			Label(devices.LabelGPUProduct, l4).Obj()},
		pods: []*v1.Pod{boundPod("p", "a", "1", "1")},
		want: map[DeviceKey]DeviceCounts{{gpu, l4}: {Allocated: 1}},
	}, {
		name:  "nodes without devices and pods on unknown nodes add nothing",
		nodes: []*v1.Node{st.MakeNode().Name("cpu").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "8"}).Obj()},
		pods:  []*v1.Pod{boundPod("p", "cpu", "1", ""), boundPod("ghost", "gone", "1", "8")},
		want:  map[DeviceKey]DeviceCounts{},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Summarize(tc.nodes, tc.pods, defaultSet(t), tc.workload)
			got := map[DeviceKey]DeviceCounts{}
			for k, c := range s.Devices {
				got[k] = *c
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Summarize (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestFragmentationRatio(t *testing.T) {
	s := Summary{Devices: map[DeviceKey]*DeviceCounts{
		{gpu, h100}: {Free: 6, Stranded: 2},
		{gpu, l4}:   {Free: 2, Stranded: 2},
		{mig1g, ""}: {Allocatable: 7, Allocated: 7},
	}}
	// nvidia.com/gpu: (2 + 2) / (6 + 2) = 0.5; the MIG slices: none free, 0.
	want := map[v1.ResourceName]float64{gpu: 0.5, mig1g: 0}
	if diff := cmp.Diff(want, s.FragmentationRatio()); diff != "" {
		t.Errorf("FragmentationRatio (-want,+got):\n%s", diff)
	}
}

// TestSummarizeWithDRA: a node whose GPUs are published in ResourceSlices
// counts them from its DRA entries; the pod asking nvidia.com/gpu there is
// counted through the claim that holds its devices, not a second time from
// its requests.
func TestSummarizeWithDRA(t *testing.T) {
	cpuOnly := st.MakeNode().Name("dra").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "64", v1.ResourceMemory: "512Gi"}).Obj()
	entries := map[string][]DRAEntry{
		"dra":  {{Resource: gpu, Device: devices.Device{Product: h100}, Total: 8, Held: 2, Free: 6}},
		"gone": {{Resource: gpu, Device: devices.Device{Product: h100}, Total: 8, Free: 8}},
	}
	pods := []*v1.Pod{boundPod("on-dra", "dra", "1", "2"), boundPod("on-dp", "dp", "1", "1")}
	s := SummarizeWithDRA([]*v1.Node{cpuOnly, gpuNode("dp", h100, "4")}, pods, defaultSet(t), jobs(t, 8), entries)
	want := map[DeviceKey]DeviceCounts{
		// 8 on the DRA node (gone is no node) + 4 of the device plugin's; an
		// 8-GPU job can use neither node's free devices.
		{gpu, h100}: {Allocatable: 12, Allocated: 3, Free: 9, Stranded: 9},
	}
	got := map[DeviceKey]DeviceCounts{}
	for k, c := range s.Devices {
		got[k] = *c
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
}
