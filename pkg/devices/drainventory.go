package devices

import (
	"cmp"
	"slices"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"
)

// DRA devices (resource.k8s.io/v1, GA in 1.37). The upstream allocator
// places a claim on the node the scheduler chose by deterministic first fit:
// pools sorted by driver and name, a pool's slices by name, devices in
// their order (structured/internal/*/pools_*.go), taking each device the
// request's class selects that no claim holds and whose shared counters
// (KEP-4815, partitionable devices) still cover what it consumes. The model
// here lays devices out in that order, so that the packing plugins can
// predict which devices a placement takes and what it leaves.
//
// Only node-local devices are modelled: slices with spec.nodeName, and
// devices with their own nodeName under perDeviceNodeSelection. Devices
// published for a node selector or all nodes (network-attached) belong to
// no one node, and packing nodes cannot keep them usable.

// DRADevice is one device of a ResourceSlice pool.
type DRADevice struct {
	// ID indexes DRAInventory.Devices; the allocation state is kept by ID.
	ID           int
	Driver, Pool string
	Name         string
	// Facts is what DescribeDRADevice reads from the attributes.
	Facts Device
	// API is the published device (what DeviceClass CEL selectors see).
	API *resourceapi.Device
	// Size is the device's share of the hardware behind its counters: the
	// mean over its counter set's counters of the part it consumes (a whole
	// GPU 1, a 1g slice of seven about 1/7); 1 for a device consuming none.
	// It is the unit that makes a GPU and its partitions comparable.
	Size float64
	// consumes lists the shared counters the device uses, as indexes into
	// DRAInventory.counters.
	consumes []counterUse
}

type counterUse struct {
	counter int
	amount  int64
}

// Shared reports allowMultipleAllocations (KEP-5075): the device serves
// several claims at once and is never held whole by one.
func (d *DRADevice) Shared() bool { return d.Facts.Shared }

// DRANode is the DRA devices published for one node, in first-fit order.
type DRANode struct {
	Name    string
	Devices []*DRADevice
	// sets are the counter sets the node's devices consume (indexes into
	// DRAInventory.sets).
	sets []int
}

// DRAInventory is the cluster's node-local DRA devices. It is built from
// the ResourceSlices alone and never modified; DRAUsage adds what claims
// hold.
type DRAInventory struct {
	Devices []*DRADevice
	Nodes   map[string]*DRANode
	// counters holds each shared counter's value (pool, counter set and
	// counter flattened); counterNames the matching "pool/set/counter",
	// counterSet the index of its set in sets, which lists each set's
	// counters.
	counters     []int64
	counterNames []string
	counterSet   []int
	sets         [][]int
}

// poolKey identifies a resource pool: pool names are unique per driver.
type poolKey struct{ driver, pool string }

// NewDRAInventory reads the slices: per pool the newest generation only,
// and only complete pools (all spec.pool.resourceSliceCount slices seen),
// because the upstream allocator allocates nothing from an incomplete pool.
func NewDRAInventory(sl []*resourceapi.ResourceSlice) *DRAInventory {
	pools := map[poolKey][]*resourceapi.ResourceSlice{}
	for _, s := range sl {
		if s == nil {
			continue
		}
		k := poolKey{s.Spec.Driver, s.Spec.Pool.Name}
		have := pools[k]
		switch {
		case len(have) == 0 || s.Spec.Pool.Generation > have[0].Spec.Pool.Generation:
			pools[k] = []*resourceapi.ResourceSlice{s}
		case s.Spec.Pool.Generation == have[0].Spec.Pool.Generation:
			pools[k] = append(have, s)
		}
	}
	keys := make([]poolKey, 0, len(pools))
	for k, slices := range pools {
		if int64(len(slices)) == slices[0].Spec.Pool.ResourceSliceCount {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b poolKey) int {
		return cmp.Or(cmp.Compare(a.driver, b.driver), cmp.Compare(a.pool, b.pool))
	})
	inv := &DRAInventory{Nodes: map[string]*DRANode{}}
	for _, k := range keys {
		inv.addPool(k, pools[k])
	}
	return inv
}

func (inv *DRAInventory) addPool(k poolKey, poolSlices []*resourceapi.ResourceSlice) {
	slices.SortFunc(poolSlices, func(a, b *resourceapi.ResourceSlice) int { return cmp.Compare(a.Name, b.Name) })
	// Counter sets first: devices of any slice of the pool consume them.
	counters := map[[2]string]int{}
	for _, s := range poolSlices {
		for _, set := range s.Spec.SharedCounters {
			id := len(inv.sets)
			inv.sets = append(inv.sets, nil)
			for name, c := range set.Counters {
				counters[[2]string{set.Name, name}] = len(inv.counters)
				inv.sets[id] = append(inv.sets[id], len(inv.counters))
				inv.counters = append(inv.counters, c.Value.Value())
				inv.counterNames = append(inv.counterNames, k.pool+"/"+set.Name+"/"+name)
				inv.counterSet = append(inv.counterSet, id)
			}
		}
	}
	for _, s := range poolSlices {
		sliceNode := ptr.Deref(s.Spec.NodeName, "")
		perDevice := ptr.Deref(s.Spec.PerDeviceNodeSelection, false)
		for i := range s.Spec.Devices {
			api := &s.Spec.Devices[i]
			node := sliceNode
			if perDevice {
				node = ptr.Deref(api.NodeName, "")
			}
			if node == "" || tainted(api) {
				continue
			}
			d := &DRADevice{
				ID: len(inv.Devices), Driver: k.driver, Pool: k.pool, Name: api.Name,
				Facts: DescribeDRADevice(k.driver, api), API: api,
			}
			unknownCounter := false
			for _, cc := range api.ConsumesCounters {
				for name, c := range cc.Counters {
					idx, ok := counters[[2]string{cc.CounterSet, name}]
					if !ok {
						unknownCounter = true
						continue
					}
					d.consumes = append(d.consumes, counterUse{counter: idx, amount: c.Value.Value()})
				}
			}
			if unknownCounter {
				// The API server rejects a pool whose devices name a counter
				// it lacks only when it sees the whole pool; the allocator
				// refuses such a device, and so do we.
				continue
			}
			d.Size = inv.size(d)
			inv.Devices = append(inv.Devices, d)
			n := inv.Nodes[node]
			if n == nil {
				n = &DRANode{Name: node}
				inv.Nodes[node] = n
			}
			n.Devices = append(n.Devices, d)
			for _, c := range d.consumes {
				if set := inv.counterSet[c.counter]; !slices.Contains(n.sets, set) {
					n.sets = append(n.sets, set)
				}
			}
		}
	}
}

// size is d's share of its counter sets (DRADevice.Size).
func (inv *DRAInventory) size(d *DRADevice) float64 {
	if len(d.consumes) == 0 {
		return 1
	}
	var share float64
	for _, c := range d.consumes {
		if v := inv.counters[c.counter]; v > 0 {
			share += min(float64(c.amount)/float64(v), 1) / float64(len(inv.sets[inv.counterSet[c.counter]]))
		}
	}
	return share
}

// tainted reports a NoSchedule or NoExecute device taint (KEP-5055, as
// ListWithDeviceTaintRules applies DeviceTaintRules too): the allocator
// gives such a device only to a claim that tolerates the taint, which the
// packing does not model, so it counts as no device at all.
func tainted(d *resourceapi.Device) bool {
	for _, t := range d.Taints {
		if t.Effect == resourceapi.DeviceTaintEffectNoSchedule || t.Effect == resourceapi.DeviceTaintEffectNoExecute {
			return true
		}
	}
	return false
}

// DRAUsage is what allocated claims hold of an inventory: the devices in
// use and what is left of each shared counter. Build it once per scheduling
// cycle (the claims' allocated state, in-flight allocations included).
//
// A DRAUsage is not safe for concurrent use: FirstFit and Free take devices
// tentatively and give them back.
type DRAUsage struct {
	inv       *DRAInventory
	allocated []bool
	left      []int64
	scratch   []*DRADevice
}

// NewDRAUsage marks the devices allocated claims hold (ids of inv's
// devices; the caller maps the claims' allocated state onto them). Shared
// devices (allowMultipleAllocations) are never held whole: their use is
// consumed capacity, not a device. A counter can be over-consumed (a claim
// allocated before a driver shrank its counters): left is then negative and
// the devices using it are not free.
func NewDRAUsage(inv *DRAInventory, allocated []*DRADevice) *DRAUsage {
	u := &DRAUsage{inv: inv, allocated: make([]bool, len(inv.Devices)), left: slices.Clone(inv.counters)}
	for _, d := range allocated {
		if d == nil || d.ID >= len(inv.Devices) || inv.Devices[d.ID] != d || u.allocated[d.ID] {
			continue
		}
		u.take(d)
	}
	return u
}

// Overconsumed names the shared counters ("pool/set/counter") that the
// held devices consume beyond their value: two devices allocated that
// exclude each other (a GPU and a MIG slice of it). An invariant check.
func (u *DRAUsage) Overconsumed() []string {
	var out []string
	for c, left := range u.left {
		if left < 0 {
			out = append(out, u.inv.counterNames[c])
		}
	}
	return out
}

// Inventory returns the inventory u describes.
func (u *DRAUsage) Inventory() *DRAInventory { return u.inv }

// Allocated reports whether a claim holds device d.
func (u *DRAUsage) Allocated(d *DRADevice) bool { return u.allocated[d.ID] }

// Available reports whether the allocator could give d to a new claim now:
// no claim holds it and its shared counters cover what it consumes.
func (u *DRAUsage) Available(d *DRADevice) bool {
	if u.allocated[d.ID] {
		return false
	}
	for _, c := range d.consumes {
		if u.left[c.counter] < c.amount {
			return false
		}
	}
	return true
}

// take marks d allocated and consumes its counters; give undoes it.
func (u *DRAUsage) take(d *DRADevice) {
	if !d.Shared() {
		u.allocated[d.ID] = true
	}
	for _, c := range d.consumes {
		u.left[c.counter] -= c.amount
	}
}

func (u *DRAUsage) give(d *DRADevice) {
	u.allocated[d.ID] = false
	for _, c := range d.consumes {
		u.left[c.counter] += c.amount
	}
}

// FirstFit returns, appended to picks, the devices of n the allocator would
// give a request for count devices that match selects: the first available
// ones in order, each taken before the next is judged (a GPU and its MIG
// partitions exclude each other through their counters). ok is false when
// fewer than count are available; picks then holds what was found. u is
// unchanged afterwards.
func (u *DRAUsage) FirstFit(n *DRANode, match func(*DRADevice) bool, count int64, picks []*DRADevice) (_ []*DRADevice, ok bool) {
	start := len(picks)
	if n != nil {
		for _, d := range n.Devices {
			if int64(len(picks)-start) == count {
				break
			}
			if match(d) && u.Available(d) {
				u.take(d)
				picks = append(picks, d)
			}
		}
	}
	for _, d := range picks[start:] {
		u.give(d)
	}
	return picks, int64(len(picks)-start) == count
}

// Free returns how many devices of n that match selects a claim could get
// now, all at once: first fit over all of them. With partitions this is
// less than the available devices (a GPU and its slices count as either).
func (u *DRAUsage) Free(n *DRANode, match func(*DRADevice) bool) int64 {
	if n == nil {
		return 0
	}
	taken := u.scratch[:0]
	for _, d := range n.Devices {
		if match(d) && u.Available(d) {
			u.take(d)
			taken = append(taken, d)
		}
	}
	for _, d := range taken {
		u.give(d)
	}
	u.scratch = taken[:0]
	return int64(len(taken))
}

// FreeCapacity is what is left of n's hardware in units of whole devices
// (DRADevice.Size): for devices that consume shared counters, the part of
// each counter set left (the mean over its counters); plus one for each
// available device that consumes none. A GPU with two of its seven slices
// taken has 5/7 left, whichever devices could still be carved from it.
func (u *DRAUsage) FreeCapacity(n *DRANode) float64 {
	if n == nil {
		return 0
	}
	var free float64
	for _, d := range n.Devices {
		if len(d.consumes) == 0 && u.Available(d) {
			free++
		}
	}
	for _, set := range n.sets {
		counters := u.inv.sets[set]
		for _, c := range counters {
			if v := u.inv.counters[c]; v > 0 {
				free += min(max(float64(u.left[c])/float64(v), 0), 1) / float64(len(counters))
			}
		}
	}
	return free
}

// Hold marks picks allocated, as a claim holding them would; Release
// undoes it. For what-if questions within one cycle (the devices a pod's
// second request gets once its first is placed).
func (u *DRAUsage) Hold(picks []*DRADevice) {
	for _, d := range picks {
		u.take(d)
	}
}

// Release undoes Hold(picks).
func (u *DRAUsage) Release(picks []*DRADevice) {
	for _, d := range picks {
		u.give(d)
	}
}

// With runs f with the devices picks taken (as if a claim held them), then
// restores u: what a placement would leave.
func (u *DRAUsage) With(picks []*DRADevice, f func()) {
	u.Hold(picks)
	defer u.Release(picks)
	f()
}
