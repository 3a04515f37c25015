package devices

import (
	"cmp"
	"maps"
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
	// caps are the device's capacities by name (drashares.go); what claims
	// consume of a shared device's caps is kept from capBase on in
	// DRAUsage.consumed.
	caps    []draCapacity
	capBase int
	// Plain: the device consumes no shared counters, serves one claim at a
	// time and has no binding conditions. For a claim that asks a class's
	// devices by count alone, as the scheduler's claim for a DRA-backed
	// extended resource does, any plain free device is as good as another:
	// the allocator's search gives the claim a device per unit whenever
	// that many are free, in any order.
	Plain bool
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
	Name string
	// Index numbers the inventory's nodes from 0 (in no particular order),
	// for tables kept per node.
	Index   int
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
	// ByIndex lists the nodes by DRANode.Index.
	ByIndex []*DRANode
	// counters holds each shared counter's value (pool, counter set and
	// counter flattened); counterNames the matching "pool/set/counter",
	// counterSet the index of its set in sets, which lists each set's
	// counters.
	counters     []int64
	counterNames []string
	counterSet   []int
	sets         [][]int
	// nCaps is the number of capacities of shared devices.
	nCaps int
	// Irregular, when not empty, says what in the slices the model leaves
	// out that the allocator counts: devices for several nodes (a node
	// selector, all nodes), or pools the allocator refuses whole (a device
	// named twice, or naming a counter its pool lacks) while the model
	// drops only the device. Then the free devices of a node are not
	// exactly what the allocator can give there.
	Irregular string
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
	names := map[string]bool{}
	for _, s := range poolSlices {
		sliceNode := ptr.Deref(s.Spec.NodeName, "")
		perDevice := ptr.Deref(s.Spec.PerDeviceNodeSelection, false)
		for i := range s.Spec.Devices {
			api := &s.Spec.Devices[i]
			if names[api.Name] {
				inv.irregular("pool " + k.pool + " names device " + api.Name + " twice")
			}
			names[api.Name] = true
			node := sliceNode
			if perDevice {
				node = ptr.Deref(api.NodeName, "")
			}
			if node == "" {
				inv.irregular("pool " + k.pool + " has devices for several nodes")
				continue
			}
			if tainted(api) {
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
				inv.irregular("pool " + k.pool + " has a device naming a counter it lacks")
				continue
			}
			d.Size = inv.size(d)
			d.Plain = len(d.consumes) == 0 && !d.Shared() && len(api.BindingConditions) == 0
			for _, name := range slices.Sorted(maps.Keys(api.Capacity)) {
				d.caps = append(d.caps, newDRACapacity(name, api.Capacity[name]))
			}
			if d.Shared() {
				d.capBase = inv.nCaps
				inv.nCaps += len(d.caps)
			}
			inv.Devices = append(inv.Devices, d)
			n := inv.Nodes[node]
			if n == nil {
				n = &DRANode{Name: node, Index: len(inv.Nodes)}
				inv.Nodes[node] = n
				inv.ByIndex = append(inv.ByIndex, n)
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

// irregular keeps the first reason Irregular gives.
func (inv *DRAInventory) irregular(why string) {
	if inv.Irregular == "" {
		inv.Irregular = why
	}
}

// CounterSets returns the shared counter sets n's devices consume: a
// device of another node that consumes one of them excludes devices here.
func (n *DRANode) CounterSets() []int { return n.sets }

// CounterSets appends to out the shared counter sets d consumes (indexes
// as DRANode.CounterSets gives them).
func (inv *DRAInventory) CounterSets(d *DRADevice, out []int) []int {
	for _, c := range d.consumes {
		if set := inv.counterSet[c.counter]; !slices.Contains(out, set) {
			out = append(out, set)
		}
	}
	return out
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
