package dra

import (
	"testing"

	fwk "k8s.io/kube-scheduler/framework"
)

// handle stands for a framework's Handle: a pointer, as the framework's.
type handle struct {
	fwk.Handle
	name string
}

// valueHandle cannot be a map key (it holds a slice).
type valueHandle struct {
	fwk.Handle
	names []string
}

func TestTrackerFor(t *testing.T) {
	a, b := &handle{name: "a"}, &handle{name: "b"}
	v := valueHandle{names: []string{"x"}}
	tests := []struct {
		name      string
		fit, pack fwk.Handle
		wantSame  bool
	}{
		{"the plugins of one framework share its tracker", a, a, true},
		{"two frameworks, two trackers", a, b, false},
		{"no handle: a tracker of its own", nil, nil, false},
		{"a handle that is no map key: a tracker of its own", v, v, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fit, releaseFit := TrackerFor(tt.fit)
			defer releaseFit()
			pack, releasePack := TrackerFor(tt.pack)
			defer releasePack()
			if fit == nil || pack == nil || (fit == pack) != tt.wantSame {
				t.Errorf("DeviceFit's tracker %p, DevicePack's %p; want the same: %v", fit, pack, tt.wantSame)
			}
		})
	}
	if n := trackers.Len(); n != 0 {
		t.Errorf("%d trackers left after every plugin closed", n)
	}
}

// TestTrackerForRelease: the tracker is kept until the last plugin of its
// framework closes, and a second Close counts once.
func TestTrackerForRelease(t *testing.T) {
	a := &handle{name: "a"}
	first, r1 := TrackerFor(a)
	_, r2 := TrackerFor(a)
	r1()
	r1()
	kept, r3 := TrackerFor(a)
	if kept != first {
		t.Error("dropped while a plugin still holds it")
	}
	r2()
	r3()
	again, r4 := TrackerFor(a)
	if again == first {
		t.Error("kept after every plugin closed")
	}
	r4()
	if n := trackers.Len(); n != 0 {
		t.Errorf("%d trackers left after every plugin closed", n)
	}
}
