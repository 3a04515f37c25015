package scratch

import "testing"

func TestResize(t *testing.T) {
	tests := []struct {
		name     string
		s        []int
		n        int
		wantSame bool
		wantCap  int
	}{
		{name: "grows past the array", s: make([]int, 2, 2), n: 5, wantCap: 5},
		{name: "shrinks in place", s: []int{1, 2, 3, 4}, n: 2, wantSame: true, wantCap: 4},
		{name: "nil to empty", s: nil, n: 0, wantCap: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Resize(tc.s, tc.n)
			if len(got) != tc.n || cap(got) < tc.wantCap {
				t.Fatalf("len %d cap %d, want len %d cap >= %d", len(got), cap(got), tc.n, tc.wantCap)
			}
			for i, v := range got {
				if v != 0 {
					t.Errorf("[%d] = %d, want 0", i, v)
				}
			}
			if tc.wantSame && tc.n > 0 && &got[0] != &tc.s[0] {
				t.Error("a new array, want the old one reused")
			}
		})
	}
}
