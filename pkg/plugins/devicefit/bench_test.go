package devicefit

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/devicefit/devicefit/pkg/devices"
)

// benchFleet is n GFD-labelled nodes of five pools.
func benchFleet(n int) []fwk.NodeInfo {
	products := []string{"NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-SXM4-40GB", "NVIDIA-L40S", "NVIDIA-L4"}
	out := make([]fwk.NodeInfo, n)
	for i := range out {
		out[i] = nodeInfo(gpuNode(fmt.Sprint("n", i), products[i%len(products)], "8", map[string]string{
			devices.LabelGPUMemory: "81559", devices.LabelGPUFamily: "ampere",
			devices.LabelGPUComputeMajor: "8", devices.LabelGPUComputeMinor: "0",
		}))
	}
	return out
}

func benchPlugin(b *testing.B) (context.Context, *DeviceFit) {
	_, ctx := ktesting.NewTestContext(b)
	pl, err := New(ctx, defaultArgs(), nil)
	if err != nil {
		b.Fatal(err)
	}
	return ctx, pl.(*DeviceFit)
}

// BenchmarkFilter is DeviceFit's Filter on one node for a pod with a
// product selector, after PreFilter over a 5000-node fleet: ns/op and
// allocs/op per node. "admitted" cycles through the nodes PreFilter names
// (the only ones the scheduler filters when it names any): 0 allocs.
// "rejected" through the others, which Filter sees only outside that list
// (a nominated node, a batch hint): each rejection allocates its Status, as
// every upstream plugin's does.
func BenchmarkFilter(b *testing.B) {
	ctx, fit := benchPlugin(b)
	nodes := benchFleet(5000)
	pod := gpuPod("2", map[string]string{devices.AnnotationProducts: "NVIDIA-A100-SXM4-80GB,NVIDIA-L40S"})
	cs := framework.NewCycleState()
	res, s := fit.PreFilter(ctx, cs, pod, nodes)
	if !s.IsSuccess() || res.AllNodes() {
		b.Fatalf("PreFilter: %v, %v", s, res)
	}
	var admitted, rejected []fwk.NodeInfo
	for _, n := range nodes {
		if res.NodeNames.Has(n.Node().Name) {
			admitted = append(admitted, n)
		} else {
			rejected = append(rejected, n)
		}
	}
	for _, tc := range []struct {
		name  string
		nodes []fwk.NodeInfo
	}{{"admitted", admitted}, {"rejected", rejected}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				_ = fit.Filter(ctx, cs, pod, tc.nodes[i%len(tc.nodes)])
				i++
			}
		})
	}
}

// BenchmarkPreFilter is DeviceFit's PreFilter over a 5000-node fleet whose
// nodes the cache already holds (the steady state): per pod, it validates,
// matches the selector once per kind and names the candidate nodes.
func BenchmarkPreFilter(b *testing.B) { benchPreFilter(b, benchFleet, false) }

// benchPreFilter runs PreFilter for an any-GPU and a two-product pod over
// fleet(5000); listed: the result must name a candidate list.
func benchPreFilter(b *testing.B, fleet func(int) []fwk.NodeInfo, listed bool) {
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
	}{
		{"any-gpu", gpuPod("1", nil)},
		{"two-products", gpuPod("2", map[string]string{devices.AnnotationProducts: "NVIDIA-A100-SXM4-80GB,NVIDIA-L40S"})},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ctx, fit := benchPlugin(b)
			nodes := fleet(5000)
			b.ReportAllocs()
			cpu := startCPU()
			for b.Loop() {
				res, s := fit.PreFilter(ctx, framework.NewCycleState(), tc.pod, nodes)
				if !s.IsSuccess() || listed && res.AllNodes() {
					b.Fatal(s, res)
				}
			}
			cpu.report(b)
		})
	}
}

// benchLoadedFleet is benchFleet(n) with pods bound: three nodes in five
// are full (eight 1-GPU pods), the others hold two. The pods all have
// priority 0, as the GPUFleet workload's do, so a pod of priority 0 can
// preempt nothing and PreFilter asks every full node's pods.
func benchLoadedFleet(n int) []fwk.NodeInfo {
	nodes := benchFleet(n)
	out := make([]fwk.NodeInfo, n)
	for i, ni := range nodes {
		name := ni.Node().Name
		k := 2
		if i%5 < 3 {
			k = 8
		}
		pods := make([]*v1.Pod, k)
		for p := range pods {
			pods[p] = boundPod(fmt.Sprint(name, "-", p), name, "1", 0)
		}
		out[i] = infoWith(ni.Node(), pods...)
	}
	return out
}

// BenchmarkPreFilterLoaded is PreFilter on a fleet three fifths full: the
// candidate list names the other two fifths (2000 of 5000 nodes), and
// every full node is asked whether preemption could free devices there.
// Each iteration binds no pod: the steady state of a job's identical
// pods, between which one node changes.
func BenchmarkPreFilterLoaded(b *testing.B) { benchPreFilter(b, benchLoadedFleet, true) }

// cpuClock is the process's CPU time (user + system, GC included) at the
// start of a benchmark loop. On a shared machine ns/op counts the time the
// benchmark waited for a core; cpu-ns/op does not, and is what to compare.
type cpuClock time.Duration

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU() cpuClock { return cpuClock(processCPU()) }

// report adds cpu-ns/op, the CPU time since startCPU per iteration.
func (c cpuClock) report(b *testing.B) {
	if b.N > 0 {
		b.ReportMetric(float64(processCPU()-time.Duration(c))/float64(b.N), "cpu-ns/op")
	}
}
