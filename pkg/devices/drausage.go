package devices

import (
	"slices"

	resourceapi "k8s.io/api/resource/v1"
)

// DRAUsage is what allocated claims hold of an inventory: the devices in
// use, what is left of each shared counter, and what is consumed of each
// shared device's capacities. Build it once per scheduling cycle (the
// claims' allocated state, in-flight allocations included).
//
// A DRAUsage is not safe for concurrent use: FirstFit and Free take devices
// tentatively and give them back.
type DRAUsage struct {
	inv       *DRAInventory
	allocated []bool
	left      []int64
	// holders counts the allocations of each shared device; consumed is
	// what they consume of its capacities (DRADevice.capBase).
	holders  []int32
	consumed []int64
	scratch  []*DRADevice
	need     []int64
}

// NewDRAUsage marks the devices allocated claims hold (ids of inv's
// devices; the caller maps the claims' allocated state onto them). A shared
// device (allowMultipleAllocations) listed is one allocation of it, which
// consumes nothing of its capacities: AddConsumed adds that. A counter can
// be over-consumed (a claim allocated before a driver shrank its counters):
// left is then negative and the devices using it are not free.
func NewDRAUsage(inv *DRAInventory, allocated []*DRADevice) *DRAUsage {
	u := &DRAUsage{
		inv: inv, allocated: make([]bool, len(inv.Devices)), left: slices.Clone(inv.counters),
		holders: make([]int32, len(inv.Devices)), consumed: make([]int64, inv.nCaps),
	}
	for _, d := range allocated {
		if !u.known(d) || u.allocated[d.ID] {
			continue
		}
		u.hold(d)
	}
	return u
}

// Clone returns a copy of u that changes independently of it.
func (u *DRAUsage) Clone() *DRAUsage {
	return &DRAUsage{
		inv: u.inv, allocated: slices.Clone(u.allocated), left: slices.Clone(u.left),
		holders: slices.Clone(u.holders), consumed: slices.Clone(u.consumed),
	}
}

// SetAllocations makes d held by n allocations, with nothing consumed of
// its capacities, as NewDRAUsage would have it listed n times (a device
// that is not shared is held whole by any number above 0), whatever u said
// of d before: what claims hold of d changed. AddConsumed adds what the
// allocations consume. Counters are updated when d goes from free to held
// or back.
func (u *DRAUsage) SetAllocations(d *DRADevice, n int) {
	if !u.known(d) {
		return
	}
	was := u.allocated[d.ID] || u.holders[d.ID] > 0
	if d.Shared() {
		u.holders[d.ID] = int32(n)
		for i := range d.caps {
			u.consumed[d.capBase+i] = 0
		}
	} else {
		u.allocated[d.ID] = n > 0
	}
	switch now := n > 0; {
	case now && !was:
		for _, c := range d.consumes {
			u.left[c.counter] -= c.amount
		}
	case was && !now:
		for _, c := range d.consumes {
			u.left[c.counter] += c.amount
		}
	}
}

// Equal reports whether u and o say the same of the same inventory: the
// devices held, the shared counters left and the capacities consumed.
func (u *DRAUsage) Equal(o *DRAUsage) bool {
	return u.inv == o.inv && slices.Equal(u.allocated, o.allocated) && slices.Equal(u.left, o.left) &&
		slices.Equal(u.holders, o.holders) && slices.Equal(u.consumed, o.consumed)
}

func (u *DRAUsage) known(d *DRADevice) bool {
	return d != nil && d.ID < len(u.inv.Devices) && u.inv.Devices[d.ID] == d
}

// AddConsumed records that allocations of shared device d consume milli
// (milli-units) of its capacity name, as the allocated state's aggregated
// capacity says. Other devices and names are ignored.
func (u *DRAUsage) AddConsumed(d *DRADevice, name resourceapi.QualifiedName, milli int64) {
	if !u.known(d) || !d.Shared() {
		return
	}
	for i := range d.caps {
		if d.caps[i].name == name {
			u.consumed[d.capBase+i] += milli
		}
	}
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

// OverCapacity names the capacities of shared devices
// ("driver/pool/device/capacity") that allocations consume beyond their
// value. An invariant check.
func (u *DRAUsage) OverCapacity() []string {
	var out []string
	for _, d := range u.inv.Devices {
		if !d.Shared() {
			continue
		}
		for i := range d.caps {
			if u.consumed[d.capBase+i] > d.caps[i].value {
				out = append(out, d.Driver+"/"+d.Pool+"/"+d.Name+"/"+string(d.caps[i].name))
			}
		}
	}
	return out
}

// Inventory returns the inventory u describes.
func (u *DRAUsage) Inventory() *DRAInventory { return u.inv }

// Allocated reports whether a claim holds device d whole.
func (u *DRAUsage) Allocated(d *DRADevice) bool { return u.allocated[d.ID] }

// InUse reports whether any claim holds d: whole, or a share of it.
func (u *DRAUsage) InUse(d *DRADevice) bool { return u.allocated[d.ID] || u.holders[d.ID] > 0 }

// Available reports whether the allocator could give d now to a request
// that asks for no capacity: no claim holds it and its shared counters
// cover what it consumes; a shared device, that no claim uses it either
// (such a request consumes it whole).
func (u *DRAUsage) Available(d *DRADevice) bool { return u.AvailableFor(d, CapacityRequest{}) }

// AvailableFor reports whether the allocator could give d now to a request
// asking for r: as Available, and for a shared device, what r consumes
// added to what its allocations consume stays within every capacity.
func (u *DRAUsage) AvailableFor(d *DRADevice, r CapacityRequest) bool {
	if u.allocated[d.ID] {
		return false
	}
	if u.holders[d.ID] == 0 && !u.countersCover(d) {
		return false
	}
	if !d.Shared() {
		return (r.Empty() && len(d.caps) == 0) || d.holds(r)
	}
	need, ok := d.need(r, u.need[:0])
	u.need = need[:0]
	if !ok {
		return false
	}
	for i, v := range need {
		if u.consumed[d.capBase+i] > d.caps[i].value-v {
			return false
		}
	}
	return true
}

// FreeShare is the part of d a new allocation could still have: for a
// shared device the least free part over its capacities (1 for one without
// capacities, 0 when its counters are gone); otherwise 1 when available,
// else 0. FGD's free GPU share.
func (u *DRAUsage) FreeShare(d *DRADevice) float64 {
	if !d.Shared() {
		if u.Available(d) {
			return 1
		}
		return 0
	}
	if u.holders[d.ID] == 0 && !u.countersCover(d) {
		return 0
	}
	free := 1.0
	for i := range d.caps {
		if v := d.caps[i].value; v > 0 {
			free = min(free, float64(v-u.consumed[d.capBase+i])/float64(v))
		}
	}
	return max(free, 0)
}

// countersCover reports whether d's shared counters still cover what it
// consumes of them.
func (u *DRAUsage) countersCover(d *DRADevice) bool {
	for _, c := range d.consumes {
		if u.left[c.counter] < c.amount {
			return false
		}
	}
	return true
}

// hold records one allocation of d without capacity (a whole device, or a
// share whose consumption AddConsumed records); take records one for a
// request r, give undoes take.
func (u *DRAUsage) hold(d *DRADevice) {
	if d.Shared() {
		u.holders[d.ID]++
		if u.holders[d.ID] > 1 {
			return
		}
	} else {
		u.allocated[d.ID] = true
	}
	for _, c := range d.consumes {
		u.left[c.counter] -= c.amount
	}
}

func (u *DRAUsage) take(d *DRADevice, r CapacityRequest) {
	u.hold(d)
	u.consume(d, r, 1)
}

func (u *DRAUsage) give(d *DRADevice, r CapacityRequest) {
	u.consume(d, r, -1)
	if d.Shared() {
		u.holders[d.ID]--
		if u.holders[d.ID] > 0 {
			return
		}
	} else {
		u.allocated[d.ID] = false
	}
	for _, c := range d.consumes {
		u.left[c.counter] += c.amount
	}
}

// consume adds (sign 1) or removes (-1) what r consumes of shared d.
func (u *DRAUsage) consume(d *DRADevice, r CapacityRequest, sign int64) {
	if !d.Shared() || len(d.caps) == 0 {
		return
	}
	need, ok := d.need(r, u.need[:0])
	u.need = need[:0]
	if !ok {
		return
	}
	for i, v := range need {
		u.consumed[d.capBase+i] += sign * v
	}
}

// FirstFit returns, appended to picks, the devices of n the allocator would
// give a request for count devices that match selects, each with capacity
// r: the first available ones in order, each taken before the next is
// judged (a GPU and its MIG partitions exclude each other through their
// counters; a shared device is given once per request). ok is false when
// fewer than count are available; picks then holds what was found. u is
// unchanged afterwards.
func (u *DRAUsage) FirstFit(n *DRANode, match func(*DRADevice) bool, count int64, r CapacityRequest, picks []*DRADevice) (_ []*DRADevice, ok bool) {
	start := len(picks)
	if n != nil {
		for _, d := range n.Devices {
			if int64(len(picks)-start) == count {
				break
			}
			if match(d) && u.AvailableFor(d, r) {
				u.take(d, r)
				picks = append(picks, d)
			}
		}
	}
	for _, d := range picks[start:] {
		u.give(d, r)
	}
	return picks, int64(len(picks)-start) == count
}

// Free returns how many devices of n that match selects a claim could get
// now, all at once: first fit over all of them. With partitions this is
// less than the available devices (a GPU and its slices count as either);
// a shared device counts only while no claim uses it.
func (u *DRAUsage) Free(n *DRANode, match func(*DRADevice) bool) int64 {
	if n == nil {
		return 0
	}
	taken := u.scratch[:0]
	for _, d := range n.Devices {
		if match(d) && u.Available(d) {
			u.take(d, CapacityRequest{})
			taken = append(taken, d)
		}
	}
	for _, d := range taken {
		u.give(d, CapacityRequest{})
	}
	u.scratch = taken[:0]
	return int64(len(taken))
}

// Partial appends to out the free shares (FreeShare) of n's shared devices
// that match selects and that claims use but have not used up: FGD's
// partly allocated GPUs, usable only by jobs asking for at most that much.
func (u *DRAUsage) Partial(n *DRANode, match func(*DRADevice) bool, out []float64) []float64 {
	if n == nil {
		return out
	}
	for _, d := range n.Devices {
		if d.Shared() && u.holders[d.ID] > 0 && match(d) {
			if f := u.FreeShare(d); f > 0 {
				out = append(out, f)
			}
		}
	}
	return out
}

// FreeCapacity is what is left of n's hardware in units of whole devices
// (DRADevice.Size): for devices that consume shared counters, the part of
// each counter set left (the mean over its counters); plus, for each device
// that consumes none, its free share (FreeShare: 1 when available, the
// part of its capacities left when shared). A GPU with two of its seven
// slices taken has 5/7 left, whichever devices could still be carved from
// it; a shared GPU with 0.3 consumed has 0.7.
func (u *DRAUsage) FreeCapacity(n *DRANode) float64 {
	if n == nil {
		return 0
	}
	var free float64
	for _, d := range n.Devices {
		if len(d.consumes) == 0 {
			free += u.FreeShare(d)
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

// Hold marks picks allocated to a request for capacity r, as a claim
// holding them would; Release undoes it. For what-if questions within one
// cycle (the devices a pod's second request gets once its first is placed).
func (u *DRAUsage) Hold(picks []*DRADevice, r CapacityRequest) {
	for _, d := range picks {
		u.take(d, r)
	}
}

// Release undoes Hold(picks, r).
func (u *DRAUsage) Release(picks []*DRADevice, r CapacityRequest) {
	for _, d := range picks {
		u.give(d, r)
	}
}

// With runs f with the devices picks taken for r (as if a claim held
// them), then restores u: what a placement would leave.
func (u *DRAUsage) With(picks []*DRADevice, r CapacityRequest, f func()) {
	u.Hold(picks, r)
	defer u.Release(picks, r)
	f()
}
