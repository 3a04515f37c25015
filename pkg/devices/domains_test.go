package devices

import (
	"math"
	"testing"
)

func TestDomainHoldsAndStranded(t *testing.T) {
	gang4x8 := GroupShape{Resource: NVIDIAGPU, Pods: 4, PerPod: 8, Weight: 1}
	pairs2x4 := GroupShape{Resource: NVIDIAGPU, Pods: 2, PerPod: 4, Weight: 1}
	tests := []struct {
		name         string
		domain       Domain
		shape        GroupShape
		holds        bool
		stranded     int64
		whole        bool
		freeDevicesN int64
	}{
		// Four free 8-GPU nodes: 4 pods of 8, nothing left over.
		{"exactly four nodes", Domain{Free: []int64{8, 8, 8, 8}, Total: 32}, gang4x8, true, 0, true, 32},
		// Three whole nodes and a half one: 3 pods of 8 < 4, all 28 stranded.
		{"one node half used", Domain{Free: []int64{8, 8, 8, 4}, Total: 32}, gang4x8, false, 28, false, 28},
		// Five free nodes and two full ones: holds; no piece below 8.
		{"partly used, still holds", Domain{Free: []int64{0, 0, 8, 8, 8, 8}, Total: 48}, gang4x8, true, 0, false, 32},
		// Pods of 4 share nodes: 3+1 = 4 pods ≥ 2; stranded 6 mod 4 + 5 mod 4 = 2 + 1.
		{"pods share nodes", Domain{Free: []int64{6, 5}, Total: 16}, pairs2x4, true, 3, false, 11},
		{"empty domain", Domain{Free: []int64{0, 0}, Total: 16}, pairs2x4, false, 0, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.domain.Holds(tc.shape); got != tc.holds {
				t.Errorf("Holds = %v, want %v", got, tc.holds)
			}
			if got := tc.domain.Stranded(tc.shape); got != tc.stranded {
				t.Errorf("Stranded = %d, want %d", got, tc.stranded)
			}
			if got := tc.domain.Whole(); got != tc.whole {
				t.Errorf("Whole = %v, want %v", got, tc.whole)
			}
			if got := tc.domain.FreeDevices(); got != tc.freeDevicesN {
				t.Errorf("FreeDevices = %d, want %d", got, tc.freeDevicesN)
			}
		})
	}
}

func TestGroupLoss(t *testing.T) {
	gang4x8 := GroupShape{Resource: NVIDIAGPU, Pods: 4, PerPod: 8, Weight: 1}
	gang5x8 := GroupShape{Resource: NVIDIAGPU, Pods: 5, PerPod: 8, Weight: 1}
	// Clique a: six 8-GPU nodes, two full. Clique b: five 8-GPU nodes, untouched.
	// Free: 32 + 40 = 72.
	domains := []Domain{
		{Free: []int64{0, 0, 8, 8, 8, 8}, Total: 48},
		{Free: []int64{8, 8, 8, 8, 8}, Total: 40},
	}
	tests := []struct {
		name                    string
		shapes                  []GroupShape
		i                       int
		after                   Domain
		wantWhole, wantStranded float64
	}{{
		// a fills up: not whole before, nothing stranded before or after.
		name:   "4x8 into the used clique",
		shapes: []GroupShape{gang4x8},
		i:      0, after: Domain{Free: []int64{0, 0, 0, 0, 0, 0}, Total: 48},
	}, {
		// b was the only whole clique holding 4x8: whole 1/1. One node of 8
		// left, which holds no 4x8: stranded 8/72.
		name:   "4x8 into the untouched clique",
		shapes: []GroupShape{gang4x8},
		i:      1, after: Domain{Free: []int64{0, 0, 0, 0, 8}, Total: 40},
		wantWhole: 1, wantStranded: 8.0 / 72,
	}, {
		// Half the groups are 5x8, which only b holds: the same loss, since
		// both shapes held b whole (whole 1/2 + 1/2; stranded 8/72 each half).
		name:   "mixed shapes into the untouched clique",
		shapes: []GroupShape{gang4x8, gang5x8},
		i:      1, after: Domain{Free: []int64{0, 0, 0, 0, 8}, Total: 40},
		wantWhole: 1, wantStranded: 8.0 / 72,
	}, {
		// Shapes of another resource do not count.
		name:   "other resource",
		shapes: []GroupShape{{Resource: "example.com/fpga", Pods: 4, PerPod: 8, Weight: 1}},
		i:      1, after: Domain{Free: []int64{0, 0, 0, 0, 8}, Total: 40},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			whole, stranded := GroupLoss(tc.shapes, NVIDIAGPU, domains, tc.i, tc.after)
			if math.Abs(whole-tc.wantWhole) > 1e-9 || math.Abs(stranded-tc.wantStranded) > 1e-9 {
				t.Errorf("GroupLoss = (%v, %v), want (%v, %v)", whole, stranded, tc.wantWhole, tc.wantStranded)
			}
		})
	}
}
