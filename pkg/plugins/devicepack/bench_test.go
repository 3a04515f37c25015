package devicepack

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/devicefit/devicefit/pkg/devices"
)

// BenchmarkScore measures Score for one node with the default (Observed)
// workload of 4 prior classes: report ns/op and allocs/op per node.
func BenchmarkScore(b *testing.B) {
	_, ctx := ktesting.NewTestContext(b)
	pl, err := New(ctx, defaultArgs(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	pack := pl.(*DevicePack)
	pod := gpuPod("p", "2")
	ni := gpuNodeInfo("n", "NVIDIA-A100", "40960", "8", "3")
	state := framework.NewCycleState()
	if s := pack.PreScore(ctx, state, pod, []fwk.NodeInfo{ni}); !s.IsSuccess() {
		b.Fatal(s)
	}
	b.ReportAllocs()
	for b.Loop() {
		_, _ = pack.Score(ctx, state, pod, ni)
	}
}

// BenchmarkStrandingWorkload measures what a /metrics scrape adds for the
// stranded gauge's workload: EstimateWorkload over 20000 pods, 3/4 of them
// device pods of a few shapes and selectors (the Collect benchmark's
// cluster in pkg/metrics).
func BenchmarkStrandingWorkload(b *testing.B) {
	args := defaultArgs(b)
	pods := make([]*v1.Pod, 20000)
	for i := range pods {
		n := []string{"0", "1", "2", "8"}[i%4]
		p := gpuPod(fmt.Sprintf("p-%05d", i), n)
		if i%7 == 0 {
			p.Annotations = map[string]string{devices.AnnotationProducts: "NVIDIA-H100-80GB-HBM3"}
		}
		pods[i] = p
	}
	b.ReportAllocs()
	for b.Loop() {
		if w := strandingWorkload(args, pods); w == nil {
			b.Fatal("no workload")
		}
	}
}
