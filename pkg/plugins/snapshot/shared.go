package snapshot

import (
	"reflect"

	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/internal/refcount"
	"github.com/devicefit/devicefit/pkg/devices"
)

// tables holds the Table each scheduling framework's devicefit plugins
// share, by the framework's Handle and the device resources they read
// (shared.ResourcesKey): DeviceFit and DevicePack of one profile walk the
// same nodes in the same cycle, and with one Table the second walk reads
// what the first refreshed.
var tables refcount.Map[tableKey, *Table]

type tableKey struct {
	h         fwk.Handle
	resources string
}

// For returns the Table of h's framework for the device resources set
// (named resources, shared.ResourcesKey), and the function that gives it
// back, once, when the plugin closes: the last one given back drops it. A
// nil handle, or one that cannot be a map key, gets a Table of its own.
func For(h fwk.Handle, set devices.ResourceSet, resources string) (*Table, func()) {
	if h == nil || !reflect.TypeOf(h).Comparable() {
		return NewTable(set), func() {}
	}
	return tables.Get(tableKey{h, resources}, func() *Table { return NewTable(set) })
}
