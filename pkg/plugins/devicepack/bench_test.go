package devicepack

import (
	"testing"

	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
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
