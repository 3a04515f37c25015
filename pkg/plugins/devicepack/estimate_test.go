package devicepack

import (
	"math"
	"testing"

	v1 "k8s.io/api/core/v1"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/devicefit/devicefit/pkg/apis/config"
	"github.com/devicefit/devicefit/pkg/devices"
)

// TestEstimateWorkload: a Static workload is the args' classes; an
// Observed one adds each device pod once, with equal weights, to the prior,
// as PreFilter classes it; terminated pods and pods DeviceFit would reject
// for their annotations are no evidence.
func TestEstimateWorkload(t *testing.T) {
	observed := func(prior int64) *config.DevicePackArgs {
		return &config.DevicePackArgs{
			DeviceResources: devices.DefaultResourcePatterns(),
			Workload: config.WorkloadSpec{Mode: config.WorkloadObserved, HalfLifePods: 10, PriorPods: prior,
				Classes: []config.WorkloadClass{{Resource: string(gpu), Devices: 8, Weight: 1}}},
		}
	}
	mk := func(name, n string) *v1.Pod {
		return st.MakePod().Name(name).Namespace("ns").UID(name).Res(map[v1.ResourceName]string{gpu: n}).Obj()
	}
	done := mk("done", "4")
	done.Status.Phase = v1.PodFailed
	bad := mk("bad", "4")
	bad.Annotations = map[string]string{devices.AnnotationMinMemory: "lots"}
	pods := []*v1.Pod{mk("a", "1"), mk("b", "1"), mk("c", "2"), done, bad, st.MakePod().Name("cpu").Obj()}

	tests := []struct {
		name string
		args *config.DevicePackArgs
		// want is the weight per device count.
		want map[int64]float64
	}{
		{
			name: "static",
			args: &config.DevicePackArgs{DeviceResources: devices.DefaultResourcePatterns(), Workload: config.WorkloadSpec{
				Mode: config.WorkloadStatic, Classes: []config.WorkloadClass{{Resource: string(gpu), Devices: 2, Weight: 3}, {Resource: string(gpu), Devices: 4, Weight: 1}},
			}},
			want: map[int64]float64{2: 0.75, 4: 0.25},
		},
		// Prior 1 and three pods, each weighing 1 although the half-life
		// is short: 8 GPUs 1/4, 1 GPU 2/4, 2 GPUs 1/4.
		{name: "observed", args: observed(1), want: map[int64]float64{8: 0.25, 1: 0.5, 2: 0.25}},
		{name: "observed without prior", args: observed(0), want: map[int64]float64{1: 2.0 / 3, 2: 1.0 / 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := EstimateWorkload(tt.args, pods)
			if err != nil {
				t.Fatal(err)
			}
			got := map[int64]float64{}
			for _, c := range w.Classes() {
				got[c.Devices] += c.Weight
			}
			if len(got) != len(tt.want) {
				t.Fatalf("classes %v, want %v", got, tt.want)
			}
			for n, wt := range tt.want {
				if math.Abs(got[n]-wt) > 1e-12 {
					t.Errorf("weight of %d-device jobs %v, want %v (all: %v)", n, got[n], wt, got)
				}
			}
		})
	}
	// Nothing to go on: no known workload.
	w, err := EstimateWorkload(observed(0), nil)
	if err != nil || w != nil {
		t.Errorf("observed, no prior, no pods: want nil, got %v, %v", w, err)
	}
}
