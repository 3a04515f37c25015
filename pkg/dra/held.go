package dra

import (
	"iter"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	draapi "k8s.io/dynamic-resource-allocation/api"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/devicefit/devicefit/pkg/devices"
)

// held is what allocated claims hold of the tracker's inventory, kept from
// one cycle to the next, and what each node's entries were.
//
// The scheduler's claim tracker hands out the allocated state (claims in
// the claim cache plus allocations in flight) as a fresh copy each cycle,
// with no word of what changed. Turning all of it into per-device usage
// every cycle was a third of a shares replay: a walk over every allocated
// share and, per shared device, over the map of what it consumes. held
// keeps the usage and the keys of the state it was computed from. A
// cycle walks only the keys (allocated device and share IDs), finds those
// added and removed since, and recomputes the usage of their devices alone,
// reading what they consume from the state. That is exact because an
// allocation never changes what it consumes: a share ID is made by the
// allocator for one allocation (a new allocation of the same device is a
// new share ID), and a claim's allocation can only be cleared, not
// changed, so the same share IDs of a device consume the same capacity.
// (Two allocations written with one share ID of one device would be one
// key in the state; the scheduler's own cache miscounts those too.)
// A changed slice (a new inventory) starts over.
//
// The nodes whose devices changed are recorded with the generation of the
// change, so that a node's entries (View.Entries, View.Capacity) are kept
// until its devices or the DeviceClasses change.
type held struct {
	inv   *devices.DRAInventory
	usage *devices.DRAUsage
	// dedicated and shares are the keys of the last state, each with the id
	// of its device in inv (-1: a device the inventory does not have).
	dedicated map[structured.DeviceID]int
	shares    shareSet
	// count is, per device id, how many of the keys name it.
	count []int
	// devIDs is each device's structured.DeviceID.
	devIDs []structured.DeviceID
	// nodeOf is each device's node (DRANode.Index); setNodes lists, per
	// shared counter set, the nodes whose devices consume it.
	nodeOf   []int
	setNodes [][]int

	// gen counts the changes of the usage or the classes; changed is, per
	// node (DRANode.Index), the generation at which its entries last
	// changed; classes are the DeviceClass objects of the last view and
	// resources the names they served there (ClassResource: which class
	// serves a name can change with another class's event).
	gen       uint64
	changed   []uint64
	classes   []*resourceapi.DeviceClass
	resources []v1.ResourceName
	// memo keeps each node's entries and capacity with the generation they
	// were computed at.
	memo []nodeMemo
	// kindFree is, per kind (Tracker.kind), the free devices of every
	// node's entries at generation totalsGen (0: not counted); counted
	// holds the node data counted, pending the nodes changed since.
	kindFree  []int64
	totalsGen uint64
	counted   []*nodeData
	pending   []int
	// dirty and mark are scratch space.
	dirty []int
	mark  []bool
	sets  []int
}

type nodeMemo struct {
	entriesGen, capacityGen uint64
	data                    *nodeData
	capacity                float64
}

// valid reports whether what was computed at generation at still holds
// for a view at generation view on node i: the node has not changed since
// the earlier of the two.
func (h *held) valid(i int, at, view uint64) bool {
	return at != 0 && h.changed[i] <= min(at, view)
}

// newHeld computes the usage of inv from state from scratch.
func newHeld(inv *devices.DRAInventory, ids map[structured.DeviceID]*devices.DRADevice, state *structured.AllocatedState) *held {
	h := &held{
		inv:       inv,
		dedicated: map[structured.DeviceID]int{},
		shares:    shareSet{byShare: map[draapi.UniqueString]shareKey{}, full: map[structured.SharedDeviceID]int{}},
		count:     make([]int, len(inv.Devices)),
		devIDs:    make([]structured.DeviceID, len(inv.Devices)),
		gen:       1,
		changed:   make([]uint64, len(inv.Nodes)),
		memo:      make([]nodeMemo, len(inv.Nodes)),
		mark:      make([]bool, len(inv.Devices)),
		nodeOf:    make([]int, len(inv.Devices)),
		counted:   make([]*nodeData, len(inv.Nodes)),
	}
	for id, d := range ids {
		h.devIDs[d.ID] = id
	}
	for _, n := range inv.Nodes {
		for _, d := range n.Devices {
			h.nodeOf[d.ID] = n.Index
		}
		for _, set := range n.CounterSets() {
			for len(h.setNodes) <= set {
				h.setNodes = append(h.setNodes, nil)
			}
			h.setNodes[set] = append(h.setNodes[set], n.Index)
		}
	}
	var heldDevices []*devices.DRADevice
	if state != nil {
		for id := range state.AllocatedDevices {
			h.dedicated[id] = h.add(ids[id])
			if d := ids[id]; d != nil {
				heldDevices = append(heldDevices, d)
			}
		}
		// Each allocation of a shared device (KEP-5075) has a share ID of
		// its own; what they consume is summed per device.
		for sid := range state.AllocatedSharedDeviceIDs {
			d := ids[sid.GetDeviceID()]
			h.shares.insert(sid, h.add(d))
			if d != nil {
				heldDevices = append(heldDevices, d)
			}
		}
	}
	h.usage = devices.NewDRAUsage(inv, heldDevices)
	if state != nil {
		for id, consumed := range state.AggregatedCapacity {
			if d := ids[id]; d != nil {
				for name, q := range consumed {
					if q != nil {
						h.usage.AddConsumed(d, name, milli(q))
					}
				}
			}
		}
	}
	return h
}

// add counts one key naming d and returns d's id (-1 for nil).
func (h *held) add(d *devices.DRADevice) int {
	if d == nil {
		return -1
	}
	h.count[d.ID]++
	return d.ID
}

// update brings the usage to state: the keys added and removed since the
// last state, then the devices they name recomputed. It reports whether
// anything changed (the generation moved on).
func (h *held) update(ids map[structured.DeviceID]*devices.DRADevice, state *structured.AllocatedState) bool {
	dirty := h.dirty[:0]
	var allocated = state.AllocatedDevices
	var shared = state.AllocatedSharedDeviceIDs
	// Keys added: counted and their devices marked. Keys removed are the
	// old ones not seen; there are some when fewer were seen than there
	// were.
	before, seen := len(h.dedicated), 0
	for id := range allocated {
		if _, ok := h.dedicated[id]; ok {
			seen++
			continue
		}
		d := ids[id]
		h.dedicated[id] = h.add(d)
		if d != nil {
			dirty = append(dirty, d.ID)
		}
	}
	if seen < before {
		for id, dev := range h.dedicated {
			if !allocated.Has(id) {
				delete(h.dedicated, id)
				if dev >= 0 {
					h.count[dev]--
					dirty = append(dirty, dev)
				}
			}
		}
	}
	before, seen = h.shares.len(), 0
	for sid := range shared {
		if h.shares.has(sid) {
			seen++
			continue
		}
		d := ids[sid.GetDeviceID()]
		h.shares.insert(sid, h.add(d))
		if d != nil {
			dirty = append(dirty, d.ID)
		}
	}
	if seen < before {
		for sid, dev := range h.shares.all() {
			if !shared.Has(sid) {
				h.shares.remove(sid)
				if dev >= 0 {
					h.count[dev]--
					dirty = append(dirty, dev)
				}
			}
		}
	}
	h.dirty = dirty[:0]
	if len(dirty) == 0 {
		return false
	}
	h.gen++
	for _, id := range dirty {
		if h.mark[id] {
			continue
		}
		h.mark[id] = true
		d := h.inv.Devices[id]
		h.usage.SetAllocations(d, h.count[id])
		if d.Shared() {
			for name, q := range state.AggregatedCapacity[h.devIDs[id]] {
				if q != nil {
					h.usage.AddConsumed(d, name, milli(q))
				}
			}
		}
		h.touch(d)
	}
	for _, id := range dirty {
		h.mark[id] = false
	}
	return true
}

// touch records that d's node changed, and so did every node with devices
// consuming the same shared counters (d taken or freed changes what they
// can have).
func (h *held) touch(d *devices.DRADevice) {
	h.sets = h.inv.CounterSets(d, h.sets[:0])
	if len(h.sets) == 0 {
		h.change(h.nodeOf[d.ID])
		return
	}
	for _, set := range h.sets {
		if set < len(h.setNodes) {
			for _, i := range h.setNodes[set] {
				h.change(i)
			}
		}
	}
}

// change records that node i changed at the current generation.
func (h *held) change(i int) {
	if h.changed[i] == h.gen {
		return
	}
	h.changed[i] = h.gen
	if h.totalsGen != 0 {
		h.pending = append(h.pending, i)
		if len(h.pending) > len(h.changed) {
			h.resetTotals()
		}
	}
}

// resetTotals drops the free counts per kind: the next FreeByKind counts
// every node.
func (h *held) resetTotals() {
	h.totalsGen = 0
	h.pending = h.pending[:0]
	clear(h.kindFree)
	clear(h.counted)
}

// setClasses records the DeviceClass objects a view serves; when they are
// not those of the last view, every node's entries change.
func (h *held) setClasses(objs []*resourceapi.DeviceClass, resources []v1.ResourceName) {
	same := len(objs) == len(h.classes) && slices.Equal(resources, h.resources)
	for i := 0; same && i < len(objs); i++ {
		same = objs[i] == h.classes[i]
	}
	if same {
		return
	}
	h.classes, h.resources = objs, resources
	h.gen++
	for i := range h.changed {
		h.changed[i] = h.gen
	}
	h.resetTotals()
}

// shareSet is a set of shared device IDs, each with the id of its device.
// Looking every key of the state up once per cycle was most of the cost of
// keeping the usage: the keys are looked up by their share ID alone (an
// 8-byte handle, cheaper to hash and compare than the whole ID), which the
// allocator makes unique per allocation; a key whose share ID another
// device's key has already (never from the allocator, but nothing forbids
// writing it) goes to full, keyed by the whole ID.
type shareSet struct {
	byShare map[draapi.UniqueString]shareKey
	full    map[structured.SharedDeviceID]int
}

type shareKey struct {
	device structured.DeviceID
	dev    int
}

func (s *shareSet) len() int { return len(s.byShare) + len(s.full) }

func (s *shareSet) has(k structured.SharedDeviceID) bool {
	if v, ok := s.byShare[k.ShareID]; ok && v.device == k.GetDeviceID() {
		return true
	}
	if len(s.full) == 0 {
		return false
	}
	_, ok := s.full[k]
	return ok
}

// insert adds k, which must not be in s.
func (s *shareSet) insert(k structured.SharedDeviceID, dev int) {
	if _, taken := s.byShare[k.ShareID]; taken {
		s.full[k] = dev
		return
	}
	s.byShare[k.ShareID] = shareKey{device: k.GetDeviceID(), dev: dev}
}

func (s *shareSet) remove(k structured.SharedDeviceID) {
	if v, ok := s.byShare[k.ShareID]; ok && v.device == k.GetDeviceID() {
		delete(s.byShare, k.ShareID)
		return
	}
	delete(s.full, k)
}

// all yields every key with its device id; removing the key yielded is
// allowed.
func (s *shareSet) all() iter.Seq2[structured.SharedDeviceID, int] {
	return func(yield func(structured.SharedDeviceID, int) bool) {
		for share, v := range s.byShare {
			k := structured.SharedDeviceID{Driver: v.device.Driver, Pool: v.device.Pool, Device: v.device.Device, ShareID: share}
			if !yield(k, v.dev) {
				return
			}
		}
		for k, dev := range s.full {
			if !yield(k, dev) {
				return
			}
		}
	}
}
