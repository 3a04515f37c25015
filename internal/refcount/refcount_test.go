package refcount

import "testing"

func TestGetSharesUntilTheLastGivesBack(t *testing.T) {
	var m Map[string, *int]
	builds := 0
	build := func() *int { builds++; v := builds; return &v }
	a, giveA := m.Get("k", build)
	b, giveB := m.Get("k", build)
	if a != b || builds != 1 {
		t.Fatalf("two asks for one key got %p and %p after %d builds, want one value", a, b, builds)
	}
	giveA()
	giveA() // a second give-back of the same ask counts once
	if m.Len() != 1 {
		t.Fatalf("dropped while still held: %d values", m.Len())
	}
	giveB()
	if m.Len() != 0 {
		t.Fatalf("%d values held after the last give-back, want none", m.Len())
	}
	if c, _ := m.Get("k", build); c == a || builds != 2 {
		t.Error("a value given back by all was handed out again")
	}
}
