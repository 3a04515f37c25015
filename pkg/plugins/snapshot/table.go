// Package snapshot is the devicefit plugins' view of a scheduling cycle's
// nodes, owned by neither plugin: what each node object says about its
// devices (one devices.NodeCache, whose kind table both plugins index) and,
// per node, what is free on it. DeviceFit's PreFilter and DevicePack's
// shortlist each walk every node of the cycle; reading a node's allocatable
// and requested resources through its NodeInfo costs several cache misses
// per node (the NodeInfo, its two Resource structs and their scalar maps,
// whose keys are strings of their own), which grew faster than the fleet:
// at 15,000 nodes DevicePack's PreFilter spent a fifth of its time in map
// look-ups and string compares (docs/performance.md, "15,000 nodes").
// A Table keeps those figures per node between cycles in one slice, and
// reads a NodeInfo again only when its state moved (NodeState), looking
// at no more of an unmoved one than its state (readMoved); with them
// the free devices per kind over the cluster (FreeByKind), which
// DevicePack's scarcity weighs and which no plugin adds up per pod.
package snapshot

import (
	"fmt"
	"iter"
	"math"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/devices"
)

// Row is one node of the cycle, as its NodeInfo stood when the Table last
// read it.
type Row struct {
	Info fwk.NodeInfo
	// Devices is the node object's entry in the Table's cache (nil for a
	// node info without a node).
	Devices *devices.NodeDevices
	// Used[i] is the node info's request of Devices.Devices[i].Resource,
	// Free[i] the allocatable left, never negative.
	Used, Free []int64
	// MilliCPU, Memory and Storage are allocatable minus requested (negative
	// when the node is overcommitted); Pods is the room for more pods.
	MilliCPU, Memory, Storage int64
	Pods                      int64
	// MinPriority is the lowest priority of the node's pods, MaxInt32 for
	// none: whether preemption could free anything there (DeviceFit's
	// candidate list). A pod's priority is immutable, so it moves only
	// with the pods, which the row's NodeState follows.
	MinPriority int32
	// Images: the node reports images (ImageLocality may score it); they
	// come with the node object, so they move only with Devices.
	Images bool
	// Shape numbers the row's shape among the Table's (shape.go), below
	// Cycle.Shapes; NoShape when it has none.
	Shape int
	epoch uint64

	key     NodeState
	entryID uint64
	// obj is the node object the row was read from (readMoved).
	obj *v1.Node
}

// Table is the node view both plugins of a framework share (For).
type Table struct {
	cache *devices.NodeCache
	// key is the cycle state key of the Table's Cycle.
	key fwk.StateKey

	mu      sync.Mutex
	entries []*devices.NodeDevices
	rows    []Row
	// marks[j] is what readMoved compares of rows[j] (readmoved.go).
	marks []mark
	// rules are the node rules' verdicts by rules key (rules.go).
	rules map[string]*ruleMemo
	// shapes interns the rows' shapes, in epoch (shape.go).
	shapes map[shapeKey]int
	epoch  uint64
	// free is the rows' free devices per kind of the cache's kind table,
	// kept as rows move (FreeByKind).
	free []int64
	// states are the node infos' states as the refresh found them
	// (objectsAndStates), aligned with its nodes.
	states []NodeState
	// log is the rows read since a point (moves.go).
	log moveLog
	// quick: the last refresh read only the rows that moved (readMoved);
	// readInGroup: it ran in a pod-group cycle, so the next one reads all.
	quick, readInGroup bool
}

// NewTable returns an empty table of the device resources in set.
func NewTable(set devices.ResourceSet) *Table {
	t := &Table{cache: devices.NewNodeCache(set), rules: map[string]*ruleMemo{}, shapes: map[shapeKey]int{}}
	t.key = fwk.StateKey(fmt.Sprintf("devicefit.io/snapshot/%p", t))
	return t
}

// Cache is the node cache the Table refreshes: its kind table is the one
// the rows' entries index. Only the Table refreshes it; readers Lookup.
func (t *Table) Cache() *devices.NodeCache { return t.cache }

// Cycle is the Table brought up to one cycle's nodes.
type Cycle struct {
	// Kinds is the cache's kind table; Entries and Rows are aligned with
	// the nodes. Both slices are the Table's and are reused by its next
	// refresh: read them within the PreFilter that got them.
	Kinds   []devices.DeviceKind
	Entries []*devices.NodeDevices
	Rows    []Row
	// Shapes is the number of shapes the rows' Shape ids are below.
	Shapes int
	nodes  *fwk.NodeInfo
	n      int
	// free is FreeByKind's, the Table's as of this refresh.
	free []int64
	// log is the Table's as of this refresh (Moved).
	log moveLog
	// table is the Table the Cycle is of; lastKey and lastMemo the rule
	// memo Judge last used (rules.go).
	table    *Table
	lastKey  string
	lastMemo *ruleMemo
}

// Cache is the node cache the Cycle's entries are of.
func (c *Cycle) Cache() *devices.NodeCache { return c.table.cache }

// FreeByKind returns the free devices (allocatable minus requested, per
// node, never negative) of each kind of Kinds over all the cycle's nodes:
// what scarcity weighs (in a pod-group cycle, as the pod's first refresh
// counted them: RefreshFor). The Table keeps the sums as rows move,
// instead of adding up every node per pod; read-only, and possibly shorter
// than Kinds.
func (c *Cycle) FreeByKind() []int64 { return c.free }

// Clone implements fwk.StateData: the marker that this cycle's refresh
// happened, shared rather than copied. What it computes on demand (the
// rule memo Judge uses) is asked for by the cycle's PreFilter and PreScore
// plugins, which run one after another.
func (c *Cycle) Clone() fwk.StateData { return c }

// Refresh brings the Table up to nodes and returns it. In one scheduling
// cycle the first caller refreshes and the others (the other plugin's
// PreFilter, same nodes) get the same Cycle from the cycle state; a
// pod-group cycle refreshes on every call, because its placements assume
// and forget pods between PreFilters of the same cycle state.
func (t *Table) Refresh(cs fwk.CycleState, nodes []fwk.NodeInfo) *Cycle {
	key := t.key
	group := cs != nil && cs.IsPodGroupSchedulingCycle()
	reuse := cs != nil && !group
	if reuse && len(nodes) > 0 {
		if d, err := cs.Read(key); err == nil {
			if c, ok := d.(*Cycle); ok && c.n == len(nodes) && c.nodes == &nodes[0] {
				return c
			}
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	// Rows read in a pod-group cycle may hold pods the cycle assumed and
	// then forgot, with the generation restored: the next refresh compares
	// every row's whole state (readAll).
	t.quick = reuse && !t.readInGroup && t.readMoved(nodes)
	if !t.quick {
		t.readAll(nodes)
		t.readInGroup = group
	}
	kinds := t.cache.Kinds()
	c := &Cycle{Kinds: kinds, Entries: t.entries, Rows: t.rows, Shapes: len(t.shapes), n: len(nodes), table: t, free: slices.Clone(t.free), log: t.log}
	if len(nodes) > 0 {
		c.nodes = &nodes[0]
	}
	if reuse {
		cs.Write(key, c)
	}
	return c
}

// readAll brings every row up to nodes: the node cache refreshed with
// every node object, each row's whole state compared. Under Table.mu.
func (t *Table) readAll(nodes []fwk.NodeInfo) {
	kinds, entries := t.cache.Refresh(t.objectsAndStates(nodes), true, t.entries)
	t.entries = entries
	// The kind table only grows, but for a cache that started over (too
	// many kinds): its kinds are numbered anew, and the sums with them.
	recount := len(kinds) < len(t.free)
	if recount || len(nodes) != len(t.rows) {
		// Positions no longer line up, or the kinds are numbered anew.
		t.log.restart()
	}
	kept := len(t.free)
	if recount {
		kept = 0
	}
	t.free = slices.Grow(t.free[:kept], len(kinds)-kept)[:len(kinds)]
	clear(t.free[kept:])
	for j := len(nodes); j < len(t.rows); j++ {
		// Gone: its devices are free nowhere, and a row that comes back
		// here is read anew.
		t.count(&t.rows[j], -1, recount)
		t.rows[j] = Row{}
		t.marks[j] = mark{}
	}
	if cap(t.rows) < len(nodes) {
		rows := make([]Row, len(nodes))
		copy(rows, t.rows)
		t.rows = rows
		marks := make([]mark, len(nodes))
		copy(marks, t.marks)
		t.marks = marks
	}
	t.rows = t.rows[:len(nodes)]
	t.marks = t.marks[:len(nodes)]
	t.resetShapes(len(nodes))
	for j, ni := range nodes {
		r := &t.rows[j]
		if key, moved := r.moved(ni, t.states[j], entries[j]); moved {
			t.reread(j, ni, key, entries[j], recount)
		} else {
			if recount {
				t.count(r, 1, false)
			}
			if r.epoch != t.epoch {
				t.intern(r)
			}
		}
	}
}

// Current returns the Cycle this cycle's Refresh wrote into the cycle
// state, nil when there was none (or in a pod-group cycle).
func (t *Table) Current(cs fwk.CycleState) *Cycle {
	if cs == nil {
		return nil
	}
	d, err := cs.Read(t.key)
	if err != nil {
		return nil
	}
	c, _ := d.(*Cycle)
	return c
}

// reread reads row j again from ni, in state key, with entry e: its free
// devices taken out of the sums and put back as read, the move logged, its
// shape interned. Under Table.mu.
func (t *Table) reread(j int, ni fwk.NodeInfo, key NodeState, e *devices.NodeDevices, recount bool) {
	r := &t.rows[j]
	t.count(r, -1, recount)
	r.read(ni, key, e)
	t.marks[j] = r.mark()
	t.log.add(j, len(t.rows))
	t.count(r, 1, false)
	t.intern(r)
}

// count adds the row's free devices, sign times, to the Table's sums; a
// subtraction is skipped when the sums are being recounted (they hold none
// of the old rows). Under Table.mu.
func (t *Table) count(r *Row, sign int64, recount bool) {
	if r.Devices == nil || sign < 0 && recount {
		return
	}
	for i := range r.Devices.Devices {
		d := &r.Devices.Devices[i]
		if d.Allocatable > 0 && d.Kind >= 0 && d.Kind < len(t.free) {
			t.free[d.Kind] += sign * r.Free[i]
		}
	}
}

// moved reports whether the row must be read again: its node info's state
// or node object moved since. The generation alone is no change signal
// (NodeState): the pod count and the last pod tell apart what a pod-group
// cycle assumes and forgets.
func (r *Row) moved(ni fwk.NodeInfo, key NodeState, e *devices.NodeDevices) (NodeState, bool) {
	id := entryID(e)
	return key, r.Info != ni || r.key != key || r.entryID != id || id == 0
}

// read reads the row from the node info ni, in state key, with entry e.
func (r *Row) read(ni fwk.NodeInfo, key NodeState, e *devices.NodeDevices) {
	r.Info, r.key, r.entryID, r.Devices, r.obj = ni, key, entryID(e), e, nil
	r.Used, r.Free = r.Used[:0], r.Free[:0]
	r.MinPriority = math.MaxInt32
	if ni != nil {
		r.obj = ni.Node()
	}
	if ni == nil || ni.Node() == nil {
		r.MilliCPU, r.Memory, r.Storage, r.Pods, r.Images = 0, 0, 0, 0, false
		return
	}
	alloc, req := ni.GetAllocatable(), ni.GetRequested()
	r.MilliCPU = alloc.GetMilliCPU() - req.GetMilliCPU()
	r.Memory = alloc.GetMemory() - req.GetMemory()
	r.Storage = alloc.GetEphemeralStorage() - req.GetEphemeralStorage()
	pods := ni.GetPods()
	r.Pods = int64(alloc.GetAllowedPodNumber()) - int64(len(pods))
	for _, pi := range pods {
		r.MinPriority = min(r.MinPriority, corev1helpers.PodPriority(pi.GetPod()))
	}
	r.Images = len(ni.GetImageStates()) > 0
	if e == nil {
		return
	}
	requested := req.GetScalarResources()
	for i := range e.Devices {
		d := &e.Devices[i]
		u := requested[d.Resource]
		r.Used = append(r.Used, u)
		r.Free = append(r.Free, max(d.Allocatable-u, 0))
	}
}

func entryID(e *devices.NodeDevices) uint64 {
	if e == nil {
		return 0
	}
	return e.ID()
}

// objectsAndStates iterates the node objects of nodes for the cache's
// refresh and, on the same pass, notes each node info's state in t.states
// (aligned with nodes): one cache miss per node info where two passes paid
// two. Under Table.mu.
func (t *Table) objectsAndStates(nodes []fwk.NodeInfo) iter.Seq[*v1.Node] {
	t.states = slices.Grow(t.states[:0], len(nodes))[:len(nodes)]
	return func(yield func(*v1.Node) bool) {
		for j, ni := range nodes {
			var node *v1.Node
			if ni != nil {
				node = ni.Node()
				t.states[j] = StateOf(ni)
			} else {
				t.states[j] = NodeState{}
			}
			if !yield(node) {
				return
			}
		}
	}
}

// NodeObjects iterates the node objects of the snapshot's node infos.
func NodeObjects(nodes []fwk.NodeInfo) iter.Seq[*v1.Node] {
	return func(yield func(*v1.Node) bool) {
		for _, n := range nodes {
			if !yield(n.Node()) {
				return
			}
		}
	}
}

// NodeState identifies what a node info holds: its generation, its number
// of pods and the last of them (an identity: a pointer the caller
// compares, the fwk.PodInfo).
//
// The generation alone is no change signal: in v1.37.2 the snapshot's
// AssumePod/ForgetPod (pod-group scheduling, schedule_one_podgroup.go; the
// replay) add or remove one pod, at the end of the node info's pod list,
// and restore the old generation. The pod count and the last pod tell
// those states apart: an assumed pod is appended (count + 1, itself last),
// a forgotten one is removed from the end again, and a pod assumed for
// another placement is another identity.
type NodeState struct {
	Generation int64
	Pods       int
	Last       any
}

// StateOf is the node info's NodeState.
func StateOf(ni fwk.NodeInfo) NodeState {
	pods := ni.GetPods()
	k := NodeState{Generation: ni.GetGeneration(), Pods: len(pods)}
	if len(pods) > 0 {
		k.Last = pods[len(pods)-1]
	}
	return k
}
