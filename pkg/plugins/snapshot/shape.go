package snapshot

import (
	"github.com/devicefit/devicefit/pkg/devices"
)

// A row's shape is everything DevicePack's per-node score reads of it but
// the node's name: its device resources (kind and allocatable), what is
// taken of each, and the CPU and memory left. Nodes of one pool holding
// the same pods share a shape, and a fleet of thousands of nodes has far
// fewer shapes than nodes: the shortlist scores each shape once per pod
// instead of each node (devicepack.scoreShapes). Shapes are interned per
// Table as rows are read, and numbered from 0.

// maxShapeDevices bounds the device resources of a row with a shape: an
// entry with more (or with a device past the kind bound) gets none, and
// is scored by itself.
const maxShapeDevices = 4

// A Table interns at most maxShapesPerRow shapes per row, plus
// spareShapes; past that it starts over and every row is interned again.
// Each row has one shape at a time, and shapes churn with the pods (the
// CPU and memory left): without the bound the ones no row has any more
// pile up (a soak of a million arrivals on 1000 nodes held 18 MiB of them
// with a bound of 65536).
const (
	maxShapesPerRow = 2
	spareShapes     = 1024
)

// NoShape is the Shape of a row that has none.
const NoShape = -1

type shapeDevice struct {
	kind        int
	alloc, used int64
}

type shapeKey struct {
	n                int
	devices          [maxShapeDevices]shapeDevice
	milliCPU, memory int64
}

// shapeOf returns the row's shape key, false when it has none. The devices
// are ordered by kind: a node object's device resources come in its map's
// order, and the score sums over them.
func (r *Row) shapeOf() (shapeKey, bool) {
	e := r.Devices
	if e == nil || len(e.Devices) > maxShapeDevices {
		return shapeKey{}, false
	}
	k := shapeKey{n: len(e.Devices), milliCPU: r.MilliCPU, memory: r.Memory}
	for i := range e.Devices {
		d := &e.Devices[i]
		if d.Kind == devices.NoKind {
			return shapeKey{}, false
		}
		sd := shapeDevice{kind: d.Kind, alloc: d.Allocatable, used: r.Used[i]}
		j := i
		for ; j > 0 && k.devices[j-1].kind > sd.kind; j-- {
			k.devices[j] = k.devices[j-1]
		}
		k.devices[j] = sd
	}
	return k, true
}

// intern gives the row its shape id; under Table.mu.
func (t *Table) intern(r *Row) {
	r.epoch = t.epoch
	k, ok := r.shapeOf()
	if !ok {
		r.Shape = NoShape
		return
	}
	id, ok := t.shapes[k]
	if !ok {
		id = len(t.shapes)
		t.shapes[k] = id
	}
	r.Shape = id
}

// resetShapes starts the shape table over when it is full for rows rows:
// the rows then intern again (their epoch is behind). Otherwise a row's
// shape id changes only when the row is read again (logged, moves.go).
func (t *Table) resetShapes(rows int) {
	if len(t.shapes) < maxShapesPerRow*rows+spareShapes {
		return
	}
	clear(t.shapes)
	t.epoch++
	// Every row gets a new id: a result kept by shape id (DevicePack's kept
	// shortlist) is of another numbering.
	t.log.restart()
}
