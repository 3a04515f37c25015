package devices

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
)

func TestNodeInventory(t *testing.T) {
	set, err := NewResourceSet(DefaultResourcePatterns())
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{
		LabelGPUProduct: "NVIDIA-A100-SXM4-80GB", LabelGPUMemory: "81920", LabelGPUCount: "4",
		LabelGPUFamily: "ampere", LabelGPUComputeMajor: "8", LabelGPUComputeMinor: "0",
		LabelMIGStrategy:                 "mixed",
		"nvidia.com/mig-3g.40gb.product": "NVIDIA-A100-SXM4-80GB-MIG-3g.40gb",
		"nvidia.com/mig-3g.40gb.memory":  "40192",
		"nvidia.com/mig-3g.40gb.count":   "4",
	}
	allocatable := map[v1.ResourceName]int64{
		NVIDIAGPU: 2, "nvidia.com/mig-3g.40gb": 4, "nvidia.com/mig-1g.10gb": 0, "example.com/foo": 3,
	}
	requested := map[v1.ResourceName]int64{NVIDIAGPU: 3, "nvidia.com/mig-3g.40gb": 1}

	got := NodeInventory(labels, allocatable, requested, set)
	want := Inventory{
		{
			// Allocatable fell under requests (an unhealthy GPU): free is 0.
			Name: NVIDIAGPU, Allocatable: 2, Requested: 3,
			Device: Device{Product: "NVIDIA-A100-SXM4-80GB", MemoryMiB: 81920, Count: 4, Family: "ampere",
				Compute: Compute{Major: 8}, HasCompute: true, MIGStrategy: MIGStrategyMixed},
		},
		{
			Name: "nvidia.com/mig-3g.40gb", Allocatable: 4, Requested: 1,
			Device: Device{Product: "NVIDIA-A100-SXM4-80GB-MIG-3g.40gb", MemoryMiB: 40192, Count: 4, Family: "ampere",
				Compute: Compute{Major: 8}, HasCompute: true, MIGStrategy: MIGStrategyMixed},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("unexpected inventory (-want,+got):\n%s", diff)
	}
	if free := []int64{got[0].Free(), got[1].Free()}; !cmp.Equal(free, []int64{0, 3}) {
		t.Errorf("free = %v, want [0 3]", free)
	}
}
