package shared

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/devicefit/devicefit/pkg/devices"
)

func TestReadPod(t *testing.T) {
	set, err := devices.NewResourceSet([]string{"nvidia.com/gpu"})
	if err != nil {
		t.Fatal(err)
	}
	key := ResourcesKey([]string{"nvidia.com/gpu"})
	gpus := func(n string) *v1.Pod {
		p := st.MakePod().Name("p").Req(map[v1.ResourceName]string{v1.ResourceCPU: "1500m", v1.ResourceMemory: "2Gi", "nvidia.com/gpu": n}).Obj()
		p.Spec.Containers[0].Resources.Limits = v1.ResourceList{"nvidia.com/gpu": resource.MustParse(n)}
		return p
	}
	onePod := gpus("2")
	// A device limit without its request is what PodDemand rejects.
	noRequest := gpus("1")
	delete(noRequest.Spec.Containers[0].Resources.Requests, "nvidia.com/gpu")
	tests := []struct {
		name string
		// first is read into a fresh cycle state (nil: none), then second
		// with secondKey; wantSame: the second read returns the first's.
		first, second *v1.Pod
		noState       bool
		secondKey     string
		wantSame      bool
		wantGPUs      int64
		wantErr       bool
	}{
		{name: "the same pod object and resources: computed once", first: onePod, second: onePod, secondKey: key, wantSame: true, wantGPUs: 2},
		{name: "another pod object: computed again", first: onePod, second: gpus("4"), secondKey: key, wantGPUs: 4},
		{name: "other resources: computed again", first: onePod, second: onePod, secondKey: "amd.com/gpu", wantGPUs: 2},
		{name: "no cycle state: computed", second: onePod, noState: true, secondKey: key, wantGPUs: 2},
		{name: "a malformed request: the error, no requests", second: noRequest, secondKey: key, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cs fwk.CycleState
			if !tt.noState {
				cs = framework.NewCycleState()
			}
			var first *Pod
			if tt.first != nil {
				first = ReadPod(cs, tt.first, set, key)
			}
			got := ReadPod(cs, tt.second, set, tt.secondKey)
			if same := first != nil && got == first; same != tt.wantSame {
				t.Errorf("second read returned the first's: %v, want %v", same, tt.wantSame)
			}
			if (got.Err != nil) != tt.wantErr {
				t.Fatalf("error %v, want one: %v", got.Err, tt.wantErr)
			}
			if tt.wantErr {
				if got.Demand != nil || got.MilliCPU != 0 {
					t.Errorf("with the error: demand %v, %dm CPU; want none", got.Demand, got.MilliCPU)
				}
				return
			}
			if got.Demand.Count("nvidia.com/gpu") != tt.wantGPUs || got.MilliCPU != 1500 || got.MemoryBytes != 2<<30 {
				t.Errorf("demand %v, %dm CPU, %d bytes; want %d GPUs, 1500m, 2Gi", got.Demand, got.MilliCPU, got.MemoryBytes, tt.wantGPUs)
			}
			if cs != nil {
				if stored := ReadAs[*Pod](cs, PodKey); stored != got {
					t.Error("the cycle state does not hold the last read")
				}
			}
		})
	}
}

// TestReadPodSelector: the pod's devicefit.io annotations are parsed with
// its demand, once per cycle, for DeviceFit's PreFilter and the observed
// workload.
func TestReadPodSelector(t *testing.T) {
	set, err := devices.NewResourceSet([]string{"nvidia.com/gpu"})
	if err != nil {
		t.Fatal(err)
	}
	key := ResourcesKey([]string{"nvidia.com/gpu"})
	tests := []struct {
		name        string
		annotations map[string]string
		wantMinMiB  int64
		wantErr     bool
	}{
		{name: "no annotations: the empty selector"},
		{name: "min-memory", annotations: map[string]string{devices.AnnotationMinMemory: "40Gi"}, wantMinMiB: 40 << 10},
		{name: "malformed: the annotation's error", annotations: map[string]string{devices.AnnotationMinMemory: "lots"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := st.MakePod().Name("p").Annotations(tt.annotations).Obj()
			got := ReadPod(framework.NewCycleState(), pod, set, key)
			if (got.SelectorErr != nil) != tt.wantErr {
				t.Fatalf("selector error %v, want one: %v", got.SelectorErr, tt.wantErr)
			}
			if got.Selector.MinMemoryMiB != tt.wantMinMiB {
				t.Errorf("min memory %d MiB, want %d", got.Selector.MinMemoryMiB, tt.wantMinMiB)
			}
		})
	}
}
