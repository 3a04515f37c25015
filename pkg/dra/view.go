package dra

import (
	"cmp"
	"context"
	"math"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/devices"
)

// Class is a DeviceClass as the plugins count its devices.
type Class struct {
	Name string
	// Resource names the class's devices in demand, workload and metrics:
	// the class's spec.extendedResourceName (KEP-5004), so that a pod asking
	// nvidia.com/gpu and a claim for the class are one kind of job, else the
	// class's implicit extended resource name,
	// deviceclass.resource.kubernetes.io/<class> (which pods may request
	// too).
	Resource v1.ResourceName
	// matches[id]: the class's selectors select device id of the inventory.
	matches []bool
	// uncountable, when not empty, says why the class's free devices on a
	// node are not what the allocator can give there (CountsExactly).
	uncountable string
	obj         *resourceapi.DeviceClass
}

// Selects reports whether the class selects d.
func (c *Class) Selects(d *devices.DRADevice) bool {
	return d.ID < len(c.matches) && c.matches[d.ID]
}

func sortClasses(cs []*Class) {
	slices.SortFunc(cs, func(a, b *Class) int { return cmp.Compare(a.Name, b.Name) })
}

// Entry is one device resource of a node served from ResourceSlices: the
// devices one DeviceClass selects there that have the same facts, the
// counterpart of a device plugin's resource and its GFD labels.
type Entry struct {
	Resource v1.ResourceName
	Class    string
	Device   devices.Device
	// Kind indexes View.Kinds(); devices.NoKind past MaxKinds.
	Kind int
	// Total is the devices the class selects there; Free what one claim
	// could get now by first fit, all at once (partitions that exclude each
	// other count once).
	Total, Free int64
	// Held is the devices of the entry that claims hold.
	Held int64
	// Size is a device's share of its hardware (devices.DRADevice.Size).
	Size float64
	// Partial are the free shares of the entry's shared devices that
	// claims use (consumable capacity, KEP-5075; devices.DRAUsage.FreeShare
	// above 0): FGD's partly allocated GPUs. Untouched ones are in Free.
	Partial []float64
	// Sample is one of the entry's devices: its capacities say what share
	// of such a device a request takes (devices.DRADevice.Share).
	Sample *devices.DRADevice
}

// View is the DRA devices of the cluster in one scheduling cycle. Its
// methods are for the serial phases (PreFilter, PreScore): they take
// devices tentatively and give them back, and they memoise.
type View struct {
	ctx      context.Context
	tracker  *Tracker
	inv      *devices.DRAInventory
	usage    *devices.DRAUsage
	classes  []*Class
	byName   map[string]*Class
	resolver fwk.DeviceClassResolver
	claims   fwk.ResourceClaimTracker
	// held is the tracker's state the view was made from, at generation
	// gen; memo memoises Entries and Capacity per node (DRANode.Index) for
	// the cycle, held.memo across cycles.
	held    *held
	gen     uint64
	nodes   []*nodeData
	caps    []capMemo
	scratch []*devices.DRADevice
	// chooser is the framework's DRA manager when it implements
	// DeviceChooser (a simulator's oracle): nil, first fit.
	chooser DeviceChooser
}

// nodeData is a node's entries and, per class (index into View.classes),
// what its first fit gives there: every device a claim of it could get at
// once, in order. Never modified once made; views and the tracker share it.
type nodeData struct {
	entries []Entry
	free    [][]*devices.DRADevice
}

type capMemo struct {
	capacity float64
	ok       bool
}

// Node returns the DRA devices published for node, or nil.
func (v *View) Node(name string) *devices.DRANode {
	if v == nil {
		return nil
	}
	return v.inv.Nodes[name]
}

// Nodes returns the names of the nodes with DRA devices.
func (v *View) Nodes() map[string]*devices.DRANode {
	if v == nil {
		return nil
	}
	return v.inv.Nodes
}

// Usage returns what claims hold (and, tentatively, what the cycle holds).
func (v *View) Usage() *devices.DRAUsage { return v.usage }

// Classes returns the DeviceClasses, sorted by name.
func (v *View) Classes() []*Class { return v.classes }

// ClassFor returns the class serving the extended resource name
// (DRAExtendedResource), as the scheduler resolves it, or nil.
func (v *View) ClassFor(name v1.ResourceName) *Class {
	if v == nil || v.resolver == nil {
		return nil
	}
	c := v.resolver.GetDeviceClass(name)
	if c == nil {
		return nil
	}
	return v.byName[c.Name]
}

// CountsExactly returns "" when, on every node, the devices of class c
// that the view finds free are exactly as many as the allocator could give
// a claim asking c's devices by count alone: the claim the scheduler makes
// for a DRA-backed extended resource (KEP-5004: one request per container,
// each an exact count of the class, no selectors, constraints or
// tolerations). Else it says why not. The count is exact when every device
// the class selects is plain (no shared counters, for which the allocator
// searches combinations; one claim at a time; no binding conditions), its
// selectors evaluate without error (an error fails the allocator's Filter),
// and every pool is one the model reads as the allocator does.
func (v *View) CountsExactly(c *Class) string {
	if v.inv.Irregular != "" {
		return v.inv.Irregular
	}
	return c.uncountable
}

// Count returns how many of the devices the class named class selects are
// on node n, and how many of them no claim holds, in flight included (nil
// n: none).
func (v *View) Count(n *devices.DRANode, class string) (total, free int64) {
	for _, e := range v.NodeEntries(n) {
		if e.Class == class {
			total += e.Total
			free += e.Free
		}
	}
	return total, free
}

// Kinds returns the kind table Entry.Kind indexes.
func (v *View) Kinds() []devices.DeviceKind {
	v.tracker.mu.Lock()
	defer v.tracker.mu.Unlock()
	return v.tracker.kindTab
}

// Entries returns node's device resources served from slices, one per
// class and kind of device, in class order; nil for a node without DRA
// devices. Memoised, across cycles too: the tracker keeps them until the
// node's devices or the DeviceClasses change (held.go). The entries are
// shared: callers must not modify them.
func (v *View) Entries(node string) []Entry {
	if v == nil {
		return nil
	}
	return v.NodeEntries(v.inv.Nodes[node])
}

// NodeEntries is Entries for a node Node returned (nil: none).
func (v *View) NodeEntries(n *devices.DRANode) []Entry {
	if v == nil || n == nil {
		return nil
	}
	return v.nodeData(n).entries
}

// nodeData returns n's entries and first-fit orders, memoised.
func (v *View) nodeData(n *devices.DRANode) *nodeData {
	if d := v.nodes[n.Index]; d != nil {
		return d
	}
	t := v.tracker
	t.mu.Lock()
	hm := &v.held.memo[n.Index]
	d := hm.data
	if t.held != v.held || !v.held.valid(n.Index, hm.entriesGen, v.gen) {
		d = nil
	}
	t.mu.Unlock()
	if d == nil {
		d = &nodeData{free: make([][]*devices.DRADevice, len(v.classes))}
		d.entries = v.computeInto(n, nil, d.free)
		t.mu.Lock()
		// A view older than the node's last change would store entries
		// that valid never accepts again (harmless, but it would replace
		// good ones).
		if t.held == v.held && v.held.changed[n.Index] <= v.gen {
			hm.data, hm.entriesGen = d, v.gen
		}
		t.mu.Unlock()
	}
	v.nodes[n.Index] = d
	return d
}

// firstFree returns the devices of n that class c's first fit gives, all
// it can, in order (nil when c is not one of the view's classes): a
// request of c for k devices asking no capacity gets the first k.
func (v *View) firstFree(n *devices.DRANode, c *Class) ([]*devices.DRADevice, bool) {
	for i, vc := range v.classes {
		if vc == c {
			return v.nodeData(n).free[i], true
		}
	}
	return nil, false
}

// FreeByKind returns, appended to out[:0] and indexed by kind (Entry.Kind),
// the free devices of every node's entries: Free summed over the cluster.
// The tracker keeps the sums and recounts only the nodes changed since
// (held.go); a view older than the tracker's state counts every node.
func (v *View) FreeByKind(out []int64) []int64 {
	out = out[:0]
	if v == nil {
		return out
	}
	t, h := v.tracker, v.held
	t.mu.Lock()
	current := t.held == h && h.gen == v.gen
	var pending []int
	all := h.totalsGen == 0
	if current && !all {
		pending = slices.Clone(h.pending)
	}
	t.mu.Unlock()
	if !current {
		for _, n := range v.inv.Nodes {
			for _, e := range v.NodeEntries(n) {
				if e.Kind >= 0 {
					for len(out) <= e.Kind {
						out = append(out, 0)
					}
					out[e.Kind] += e.Free
				}
			}
		}
		return out
	}
	// The entries first (computing them takes the tracker's lock), then
	// the sums under it, unless the tracker moved on meanwhile.
	nodes := v.inv.ByIndex
	if all {
		for _, n := range nodes {
			v.nodeData(n)
		}
	} else {
		for _, i := range pending {
			v.nodeData(nodes[i])
		}
	}
	t.mu.Lock()
	if t.held != h || h.gen != v.gen || (h.totalsGen == 0) != all || len(h.pending) != len(pending) {
		t.mu.Unlock()
		return v.FreeByKind(out)
	}
	count := func(i int) {
		for _, e := range h.counted[i].entriesOrNil() {
			if e.Kind >= 0 {
				h.kindFree[e.Kind] -= e.Free
			}
		}
		d := v.nodes[i]
		for _, e := range d.entries {
			if e.Kind >= 0 {
				for len(h.kindFree) <= e.Kind {
					h.kindFree = append(h.kindFree, 0)
				}
				h.kindFree[e.Kind] += e.Free
			}
		}
		h.counted[i] = d
	}
	if all {
		for i := range nodes {
			count(i)
		}
	} else {
		for _, i := range pending {
			count(i)
		}
	}
	h.pending = h.pending[:0]
	h.totalsGen = v.gen
	out = append(out, h.kindFree...)
	t.mu.Unlock()
	return out
}

func (d *nodeData) entriesOrNil() []Entry {
	if d == nil {
		return nil
	}
	return d.entries
}

// Capacity returns the node's free DRA capacity in whole devices
// (devices.DRAUsage.FreeCapacity). Memoised as Entries is.
func (v *View) Capacity(node string) float64 {
	if v == nil {
		return 0
	}
	return v.NodeCapacity(v.inv.Nodes[node])
}

// NodeCapacity is Capacity for a node Node returned (nil: none).
func (v *View) NodeCapacity(n *devices.DRANode) float64 {
	if v == nil || n == nil {
		return 0
	}
	if v.caps == nil {
		v.caps = make([]capMemo, len(v.nodes))
	}
	m := &v.caps[n.Index]
	if m.ok {
		return m.capacity
	}
	t := v.tracker
	t.mu.Lock()
	hm := &v.held.memo[n.Index]
	found := t.held == v.held && v.held.valid(n.Index, hm.capacityGen, v.gen)
	if found {
		m.capacity = hm.capacity
	}
	t.mu.Unlock()
	if !found {
		m.capacity = v.usage.FreeCapacity(n)
		t.mu.Lock()
		if t.held == v.held && v.held.changed[n.Index] <= v.gen {
			hm.capacity, hm.capacityGen = m.capacity, v.gen
		}
		t.mu.Unlock()
	}
	m.ok = true
	return m.capacity
}

// EntriesAfter returns node's entries and free capacity as they would be
// with picks (of reqs, as Picks returned them) held by claims: what a
// placement leaves. Not memoised; out is reused.
func (v *View) EntriesAfter(node string, picks []Pick, reqs []Request, out []Entry) ([]Entry, float64) {
	return v.NodeEntriesAfter(v.inv.Nodes[node], picks, reqs, out)
}

// NodeEntriesAfter is EntriesAfter for a node Node returned.
func (v *View) NodeEntriesAfter(n *devices.DRANode, picks []Pick, reqs []Request, out []Entry) ([]Entry, float64) {
	v.hold(picks, reqs)
	defer v.release(picks, reqs)
	return v.computeInto(n, out[:0], nil), v.usage.FreeCapacity(n)
}

// computeInto appends n's entries to out; free, when not nil, gets per
// class (of v.classes) the devices of its first fit.
func (v *View) computeInto(n *devices.DRANode, out []Entry, free [][]*devices.DRADevice) []Entry {
	if n == nil {
		return out
	}
	for ci, c := range v.classes {
		start := len(out)
		for _, d := range n.Devices {
			if !c.Selects(d) {
				continue
			}
			e := entryFor(&out, start, c, d.Facts)
			if e.Total == 0 {
				e.Size, e.Sample = d.Size, d
			}
			e.Total++
			if v.usage.InUse(d) {
				e.Held++
				if d.Shared() {
					if f := v.usage.FreeShare(d); f > 0 {
						e.Partial = append(e.Partial, f)
					}
				}
			}
		}
		if len(out) == start {
			continue
		}
		var picks []*devices.DRADevice
		picks, _ = v.usage.FirstFit(n, c.Selects, math.MaxInt64, devices.CapacityRequest{}, v.scratch[:0])
		for _, d := range picks {
			entryFor(&out, start, c, d.Facts).Free++
		}
		if free != nil && len(picks) > 0 {
			free[ci] = slices.Clone(picks)
		}
		v.scratch = picks[:0]
	}
	if len(out) > 0 {
		v.tracker.mu.Lock()
		for i := range out {
			if out[i].Kind == unset {
				out[i].Kind = v.tracker.kind(devices.DeviceKind{Resource: out[i].Resource, Device: out[i].Device})
			}
		}
		v.tracker.mu.Unlock()
	}
	return out
}

const unset = math.MinInt

// entryFor finds (or appends) the entry of class c with facts f among
// (*out)[start:].
func entryFor(out *[]Entry, start int, c *Class, f devices.Device) *Entry {
	for i := start; i < len(*out); i++ {
		if (*out)[i].Device == f {
			return &(*out)[i]
		}
	}
	*out = append(*out, Entry{Resource: c.Resource, Class: c.Name, Device: f, Kind: unset})
	return &(*out)[len(*out)-1]
}
