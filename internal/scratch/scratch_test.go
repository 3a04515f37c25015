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

func TestPositions(t *testing.T) {
	var all []int
	for _, n := range []int{3, 1, 5, 0} {
		got := Positions(&all, n)
		if len(got) != n {
			t.Fatalf("Positions(%d): %v", n, got)
		}
		for j, v := range got {
			if v != j {
				t.Errorf("Positions(%d)[%d] = %d", n, j, v)
			}
		}
	}
	if len(all) != 5 {
		t.Errorf("kept %d positions, want the most asked for (5)", len(all))
	}
}

func TestLeastRecent(t *testing.T) {
	used := func(v uint64) uint64 { return v }
	tests := []struct {
		name string
		m    map[string]uint64
		want string
	}{
		{"empty", nil, ""},
		{"one", map[string]uint64{"a": 7}, "a"},
		{"lowest stamp", map[string]uint64{"a": 7, "b": 2, "c": 9}, "b"},
		{"stamp zero", map[string]uint64{"a": 7, "b": 0}, "b"},
	}
	for _, tc := range tests {
		if got := LeastRecent(tc.m, used); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
