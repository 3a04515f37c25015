package dra

import (
	"reflect"

	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/internal/refcount"
)

// trackers holds the Tracker each scheduling framework's devicefit plugins
// share, by the framework's Handle. DeviceFit and DevicePack read the same
// View per cycle (ForCycle), built by whichever of them asks first; with a
// tracker each, the held state and inventory of the one that did not build
// it fell behind, and both kept a copy of the inventory and its verdicts.
var trackers refcount.Map[fwk.Handle, *Tracker]

// TrackerFor returns the Tracker of h's framework, and the function that
// gives it back, once, when the plugin closes (the framework's Close calls
// every plugin that is an io.Closer): the last one given back drops it. A
// nil handle, or one that cannot be a map key, gets a tracker of its own.
func TrackerFor(h fwk.Handle) (*Tracker, func()) {
	if h == nil || !reflect.TypeOf(h).Comparable() {
		return NewTracker(), func() {}
	}
	return trackers.Get(h, NewTracker)
}
