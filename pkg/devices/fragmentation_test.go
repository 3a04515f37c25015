package devices

import (
	"math"
	"testing"

	v1 "k8s.io/api/core/v1"
)

const gi = int64(1) << 30

func mustWorkload(t *testing.T, classes ...Class) *Workload {
	t.Helper()
	w, err := NewWorkload(classes)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestStranded(t *testing.T) {
	h100 := Device{Product: "NVIDIA-H100-80GB-HBM3", MemoryMiB: 81559}
	l4 := Device{Product: "NVIDIA-L4", MemoryMiB: 23034}
	// Jobs: half want 1 GPU, a quarter 4 GPUs, a quarter 8 GPUs on an H100.
	h100Only, err := ParseSelector(map[string]string{AnnotationProducts: "H100-80GB-HBM3"})
	if err != nil {
		t.Fatal(err)
	}
	w := mustWorkload(t,
		Class{Resource: NVIDIAGPU, Devices: 1, MilliCPU: 4000, MemoryBytes: 16 * gi, Weight: 2},
		Class{Resource: NVIDIAGPU, Devices: 4, MilliCPU: 16000, MemoryBytes: 64 * gi, Weight: 1},
		Class{Resource: NVIDIAGPU, Devices: 8, MilliCPU: 32000, MemoryBytes: 128 * gi, Weight: 1, Selector: h100Only},
	)
	tests := []struct {
		name string
		node NodeFree
		want float64
	}{
		// All classes fit: nothing stranded.
		{name: "empty H100 node", node: NodeFree{Resource: NVIDIAGPU, Devices: 8, MilliCPU: 96000, MemoryBytes: 1024 * gi, Device: h100}, want: 0},
		// The 8-GPU class is H100-only: 0.25 · 8 = 2.
		{name: "empty L4 node", node: NodeFree{Resource: NVIDIAGPU, Devices: 8, MilliCPU: 96000, MemoryBytes: 1024 * gi, Device: l4}, want: 2},
		// 3 free: the 4- and 8-GPU classes cannot use them: 0.5 · 3 = 1.5.
		{name: "3 free GPUs", node: NodeFree{Resource: NVIDIAGPU, Devices: 3, MilliCPU: 96000, MemoryBytes: 1024 * gi, Device: h100}, want: 1.5},
		// CPU used up: no class fits, all 8 stranded.
		{name: "cpu exhausted", node: NodeFree{Resource: NVIDIAGPU, Devices: 8, MilliCPU: 2000, MemoryBytes: 1024 * gi, Device: h100}, want: 8},
		// Memory leaves room for 1-GPU jobs only: 0.5 · 8 = 4.
		{name: "memory tight", node: NodeFree{Resource: NVIDIAGPU, Devices: 8, MilliCPU: 96000, MemoryBytes: 32 * gi, Device: h100}, want: 4},
		// Another resource: no class can use these devices.
		{name: "other resource", node: NodeFree{Resource: "amd.com/gpu", Devices: 2, MilliCPU: 96000, MemoryBytes: 1024 * gi}, want: 2},
		{name: "nothing free", node: NodeFree{Resource: NVIDIAGPU, Devices: 0, MilliCPU: 96000, MemoryBytes: 1024 * gi, Device: h100}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := w.Stranded(tt.node); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("Stranded = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestStrandedDelta(t *testing.T) {
	w := mustWorkload(t,
		Class{Resource: NVIDIAGPU, Devices: 4, Weight: 1},
		Class{Resource: NVIDIAGPU, Devices: 1, Weight: 1},
	)
	node := func(free int64) NodeFree { return NodeFree{Resource: NVIDIAGPU, Devices: free} }
	// 1 GPU onto 5 free: 4 left, both classes fit: 0 - 0 = 0.
	if got := w.StrandedDelta(node(5), 1, 0, 0); got != 0 {
		t.Errorf("5 free, take 1: delta %v, want 0", got)
	}
	// 1 GPU onto 4 free: 3 left, the 4-GPU class is stuck: 0.5·3 - 0 = 1.5.
	if got := w.StrandedDelta(node(4), 1, 0, 0); got != 1.5 {
		t.Errorf("4 free, take 1: delta %v, want 1.5", got)
	}
	// 1 GPU onto 3 free: 0.5·2 - 0.5·3 = -0.5 (it used a stranded device).
	if got := w.StrandedDelta(node(3), 1, 0, 0); got != -0.5 {
		t.Errorf("3 free, take 1: delta %v, want -0.5", got)
	}
}

func TestNewWorkloadErrors(t *testing.T) {
	for name, classes := range map[string][]Class{
		"empty":           nil,
		"zero weights":    {{Resource: NVIDIAGPU, Devices: 1}},
		"zero devices":    {{Resource: NVIDIAGPU, Weight: 1}},
		"negative cpu":    {{Resource: NVIDIAGPU, Devices: 1, MilliCPU: -1, Weight: 1}},
		"NaN weight":      {{Resource: NVIDIAGPU, Devices: 1, Weight: math.NaN()}},
		"infinite":        {{Resource: NVIDIAGPU, Devices: 1, Weight: math.Inf(1)}},
		"negative weight": {{Resource: NVIDIAGPU, Devices: 1, Weight: -1}},
	} {
		if _, err := NewWorkload(classes); err == nil {
			t.Errorf("%s: NewWorkload accepted %v", name, classes)
		}
	}
}

func TestStrandedAllocations(t *testing.T) {
	sel, _ := ParseSelector(map[string]string{AnnotationProducts: "H100*", AnnotationMinMemory: "40G"})
	w := mustWorkload(t,
		Class{Resource: NVIDIAGPU, Devices: 1, Weight: 1, Selector: sel},
		Class{Resource: v1.ResourceName("nvidia.com/mig-1g.10gb"), Devices: 1, Weight: 1},
	)
	n := NodeFree{Resource: NVIDIAGPU, Devices: 4, MilliCPU: 1000, MemoryBytes: gi, Device: Device{Product: "NVIDIA-H100-80GB-HBM3", MemoryMiB: 81559}}
	if allocs := testing.AllocsPerRun(100, func() { w.StrandedDelta(n, 1, 100, 100) }); allocs != 0 {
		t.Errorf("StrandedDelta allocated %v times per run, want 0", allocs)
	}
}

// TestStrandedDeltaWith checks the precomputed-acceptance path against the
// direct one on a mixed workload.
func TestStrandedDeltaWith(t *testing.T) {
	h100, err := ParseSelector(map[string]string{AnnotationProducts: "H100*"})
	if err != nil {
		t.Fatal(err)
	}
	w := mustWorkload(t,
		Class{Resource: NVIDIAGPU, Devices: 1, MilliCPU: 8000, Weight: 5},
		Class{Resource: NVIDIAGPU, Devices: 4, MemoryBytes: 64 * gi, Weight: 2, Selector: h100},
		Class{Resource: NVIDIAGPU, Devices: 8, Weight: 1},
		Class{Resource: "amd.com/gpu", Devices: 2, Weight: 1},
	)
	for _, d := range []Device{{Product: "NVIDIA-H100-80GB-HBM3"}, {Product: "NVIDIA-L4"}} {
		acc := w.Acceptance(NVIDIAGPU, d)
		for free := int64(0); free <= 8; free++ {
			n := NodeFree{Resource: NVIDIAGPU, Devices: free, MilliCPU: 32000, MemoryBytes: 128 * gi, Device: d}
			for take := int64(0); take <= free; take++ {
				want := w.StrandedDelta(n, take, 4000, 16*gi)
				if got := w.StrandedDeltaWith(acc, n, take, 4000, 16*gi); got != want {
					t.Errorf("%s free %d take %d: StrandedDeltaWith %v, StrandedDelta %v", d.Product, free, take, got, want)
				}
			}
		}
	}
}

func TestStrandedOf(t *testing.T) {
	const mig = v1.ResourceName("nvidia.com/mig-1g.10gb")
	// Jobs: whole GPUs (weight 6), 4 slices (1), 1 slice (1).
	w := mustWorkload(t,
		Class{Resource: NVIDIAGPU, Devices: 8, Weight: 6},
		Class{Resource: mig, Devices: 4, MilliCPU: 1000, Weight: 1},
		Class{Resource: mig, Devices: 1, MilliCPU: 1000, Weight: 1},
	)
	tests := []struct {
		name         string
		node         NodeFree
		over, within float64 // Stranded (every job), StrandedOf (jobs asking for the resource)
	}{
		// 3 slices: the 4-slice job cannot run, the 1-slice job can; to the
		// whole-GPU jobs every slice is unusable.
		// Stranded: 3 · (6 + 1) / 8 = 2.625. StrandedOf: 3 · 1 / 2 = 1.5.
		{name: "3 free slices", node: NodeFree{Resource: mig, Devices: 3, MilliCPU: 8000}, over: 2.625, within: 1.5},
		// 7 slices: both slice jobs fit. Stranded: 7 · 6 / 8 = 5.25.
		{name: "7 free slices", node: NodeFree{Resource: mig, Devices: 7, MilliCPU: 8000}, over: 5.25, within: 0},
		// No CPU left: no slice job fits.
		{name: "slices without CPU", node: NodeFree{Resource: mig, Devices: 7}, over: 7, within: 7},
		// No job asks for AMD GPUs: nothing is known to be stranded.
		{name: "a resource no job asks for", node: NodeFree{Resource: "amd.com/gpu", Devices: 4, MilliCPU: 8000}, over: 4, within: 0},
		{name: "nothing free", node: NodeFree{Resource: mig, MilliCPU: 8000}, over: 0, within: 0},
	}
	for _, tc := range tests {
		if got := w.Stranded(tc.node); math.Abs(got-tc.over) > 1e-9 {
			t.Errorf("%s: Stranded = %v, want %v", tc.name, got, tc.over)
		}
		if got := w.StrandedOf(tc.node); math.Abs(got-tc.within) > 1e-9 {
			t.Errorf("%s: StrandedOf = %v, want %v", tc.name, got, tc.within)
		}
	}
}
