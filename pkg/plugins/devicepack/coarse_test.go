package devicepack

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/apis/config"
)

func TestFGDBand(t *testing.T) {
	tests := []struct {
		frag, want int64
	}{
		{frag: 0, want: 50},
		{frag: 19, want: 50}, // 100·sigmoid(0.019) = 50.47: one band with 0
		{frag: 40, want: 50},
		{frag: 41, want: 51},
		{frag: -1, want: 49}, // truncated, as FGD's int64(...)
		{frag: -1000, want: 26},
		{frag: 1000, want: 73},
		{frag: -50_000, want: 0},
		{frag: 50_000, want: 100},
	}
	for _, tt := range tests {
		if got := fgdBand(tt.frag); got != tt.want {
			t.Errorf("fgdBand(%d) = %d, want %d", tt.frag, got, tt.want)
		}
	}
}

// TestCoarseWhereNothingIsScarce: the cause of devicefit falling below FGD
// on the default Alibaba trace (docs/placement.md). Where no job is tied to a
// product, nodes whose fragmentation grows alike are taken in name order,
// not by best fit or by differences of a few hundredths of a device; where
// a product is in demand, the exact score (best fit among its terms) stays.
func TestCoarseWhereNothingIsScarce(t *testing.T) {
	halfAndEmpty := []fwk.NodeInfo{
		gpuNodeInfo("b-half", "NVIDIA-A100", "40960", "8", "4"),
		gpuNodeInfo("a-empty", "NVIDIA-A100", "40960", "8", "0"),
	}
	a100only := config.WorkloadClass{Resource: string(gpu), Devices: 1, Products: "NVIDIA-A100", Weight: 1}
	tests := []struct {
		name    string
		classes []config.WorkloadClass
		pod     string
		nodes   []fwk.NodeInfo
		want    map[string]int64
	}{{
		// 1-GPU jobs fit anywhere: fragmentation 0 on both. Best fit would
		// take b-half; FGD's band ties them and the first name wins.
		name:    "equal band: the first name, not the fuller node",
		classes: []config.WorkloadClass{gpuClass(1, 1)},
		pod:     "1",
		nodes:   halfAndEmpty,
		want:    map[string]int64{"a-empty": 100, "b-half": 99},
	}, {
		// 4-GPU jobs are 1%: on a-four-free one GPU strands the 3 left
		// for them, growth 0.03 device (band 49); b-empty 0 (band 50).
		name:    "a lower band loses to the first name's",
		classes: []config.WorkloadClass{gpuClass(1, 99), gpuClass(4, 1)},
		pod:     "1",
		nodes: []fwk.NodeInfo{
			gpuNodeInfo("a-four-free", "NVIDIA-A100", "40960", "8", "4"),
			gpuNodeInfo("b-empty", "NVIDIA-A100", "40960", "8", "0"),
		},
		want: map[string]int64{"a-four-free": 0, "b-empty": 100},
	}, {
		// The same nodes as the first row, an A100-only class in the
		// workload: the exact score, where best fit takes b-half.
		name:    "a product in demand: the exact score",
		classes: []config.WorkloadClass{gpuClass(1, 1), a100only},
		pod:     "1",
		nodes:   halfAndEmpty,
		want:    map[string]int64{"a-empty": 0, "b-half": 100},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := defaultArgs(t)
			args.Workload = config.WorkloadSpec{Mode: config.WorkloadStatic, HalfLifePods: 1, Classes: tt.classes}
			got := scores(t, newPlugin(t, args), gpuPod("p", tt.pod), tt.nodes...)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("scores (-want,+got):\n%s", diff)
			}
		})
	}
}
