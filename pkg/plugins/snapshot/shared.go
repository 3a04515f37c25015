package snapshot

import (
	"reflect"
	"sync"

	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/devices"
)

// tables holds the Table each scheduling framework's devicefit plugins
// share, by the framework's Handle and the device resources they read
// (shared.ResourcesKey): DeviceFit and DevicePack of one profile walk the
// same nodes in the same cycle, and with one Table the second walk reads
// what the first refreshed.
var tables = struct {
	sync.Mutex
	m map[tableKey]*sharedTable
}{m: map[tableKey]*sharedTable{}}

type tableKey struct {
	h         fwk.Handle
	resources string
}

type sharedTable struct {
	t    *Table
	refs int
}

// For returns the Table of h's framework for the device resources set
// (named resources, shared.ResourcesKey), and the function that gives it
// back, once, when the plugin closes: the last one given back drops it. A
// nil handle, or one that cannot be a map key, gets a Table of its own.
func For(h fwk.Handle, set devices.ResourceSet, resources string) (*Table, func()) {
	if h == nil || !reflect.TypeOf(h).Comparable() {
		return NewTable(set), func() {}
	}
	k := tableKey{h, resources}
	tables.Lock()
	defer tables.Unlock()
	s := tables.m[k]
	if s == nil {
		s = &sharedTable{t: NewTable(set)}
		tables.m[k] = s
	}
	s.refs++
	var once sync.Once
	return s.t, func() {
		once.Do(func() {
			tables.Lock()
			defer tables.Unlock()
			if s.refs--; s.refs == 0 && tables.m[k] == s {
				delete(tables.m, k)
			}
		})
	}
}
