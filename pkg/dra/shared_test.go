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
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"the plugins of one framework share its tracker", func(t *testing.T) {
			fit, releaseFit := TrackerFor(a)
			defer releaseFit()
			pack, releasePack := TrackerFor(a)
			defer releasePack()
			if fit != pack {
				t.Error("two trackers for one framework")
			}
		}},
		{"two frameworks, two trackers", func(t *testing.T) {
			ta, ra := TrackerFor(a)
			defer ra()
			tb, rb := TrackerFor(b)
			defer rb()
			if ta == tb {
				t.Error("one tracker for two frameworks")
			}
		}},
		{"kept until the last plugin closes, a second Close counting once", func(t *testing.T) {
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
			defer r4()
			if again == first {
				t.Error("kept after every plugin closed")
			}
		}},
		{"no handle, or one that is no map key: a tracker of its own", func(t *testing.T) {
			n1, _ := TrackerFor(nil)
			n2, _ := TrackerFor(nil)
			v := valueHandle{names: []string{"x"}}
			v1, _ := TrackerFor(v)
			v2, _ := TrackerFor(v)
			if n1 == nil || n1 == n2 || v1 == nil || v1 == v2 {
				t.Error("shared a tracker without a framework to share it by")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
	if n := len(trackers.m); n != 0 {
		t.Errorf("%d trackers left after every plugin closed", n)
	}
}
