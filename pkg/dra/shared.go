package dra

import (
	"reflect"
	"sync"

	fwk "k8s.io/kube-scheduler/framework"
)

// trackers holds the Tracker each scheduling framework's devicefit plugins
// share, by the framework's Handle. DeviceFit and DevicePack read the same
// View per cycle (ForCycle), built by whichever of them asks first; with a
// tracker each, the held state and inventory of the one that did not build
// it fell behind, and both kept a copy of the inventory and its verdicts.
var trackers = struct {
	sync.Mutex
	m map[fwk.Handle]*sharedTracker
}{m: map[fwk.Handle]*sharedTracker{}}

type sharedTracker struct {
	t    *Tracker
	refs int
}

// TrackerFor returns the Tracker of h's framework, and the function that
// gives it back, once, when the plugin closes (the framework's Close calls
// every plugin that is an io.Closer): the last one given back drops it. A
// nil handle, or one that cannot be a map key, gets a tracker of its own.
func TrackerFor(h fwk.Handle) (*Tracker, func()) {
	if h == nil || !reflect.TypeOf(h).Comparable() {
		return NewTracker(), func() {}
	}
	trackers.Lock()
	defer trackers.Unlock()
	s := trackers.m[h]
	if s == nil {
		s = &sharedTracker{t: NewTracker()}
		trackers.m[h] = s
	}
	s.refs++
	var once sync.Once
	return s.t, func() {
		once.Do(func() {
			trackers.Lock()
			defer trackers.Unlock()
			if s.refs--; s.refs == 0 && trackers.m[h] == s {
				delete(trackers.m, h)
			}
		})
	}
}
