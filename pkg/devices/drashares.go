package devices

import (
	"math"
	"slices"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Consumable capacity (KEP-5075, DRAConsumableCapacity, beta and on in
// 1.37). A device with allowMultipleAllocations is allocated to several
// claims at once; each allocation consumes part of the device's capacities,
// and the allocator gives the device to a request only while the sum stays
// within every capacity's value. What one request consumes of a capacity
// (structured/internal/incubating/consumable_capacity.go, v1.37.2):
//
//   - a capacity the request names: the requested amount, rounded up to the
//     capacity's requestPolicy (validRange: at least min, then to the next
//     min + k·step; validValues: the first value not below it), and the
//     device is refused when the rounded amount breaks the policy (above
//     max or above every valid value);
//   - a capacity the request does not name: the policy's default, else the
//     whole value (a claim that asks for nothing takes the whole device);
//   - a request naming a capacity the device lacks cannot use the device.
//
// Amounts are kept in milli-units, as the allocator compares fractional
// ranges; a capacity above 9.2e15 base units saturates (no device has one).

// CapacityRequest is a claim request's capacity.requests, parsed once.
type CapacityRequest struct {
	names []resourceapi.QualifiedName
	milli []int64
}

// NewCapacityRequest reads capacity.requests of an exact device request;
// nil or empty asks for no capacity (each device is consumed whole, or by
// its policies' defaults).
func NewCapacityRequest(c *resourceapi.CapacityRequirements) CapacityRequest {
	var r CapacityRequest
	if c == nil {
		return r
	}
	for name := range c.Requests {
		r.names = append(r.names, name)
	}
	slices.Sort(r.names)
	for _, name := range r.names {
		r.milli = append(r.milli, milli(c.Requests[name]))
	}
	return r
}

// Empty reports a request that names no capacity.
func (r CapacityRequest) Empty() bool { return len(r.names) == 0 }

// Amount returns the requested amount of name in milli-units.
func (r CapacityRequest) Amount(name resourceapi.QualifiedName) (int64, bool) {
	i, ok := slices.BinarySearch(r.names, name)
	if !ok {
		return 0, false
	}
	return r.milli[i], true
}

// Key is a canonical text of the request ("" when empty), for classes.
func (r CapacityRequest) Key() string {
	var b []byte
	for i, n := range r.names {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, n...)
		b = append(b, '=')
		b = append(b, resource.NewMilliQuantity(r.milli[i], resource.DecimalSI).String()...)
	}
	return string(b)
}

func milli(q resource.Quantity) int64 {
	if q.CmpInt64(math.MaxInt64/1000) > 0 {
		return math.MaxInt64
	}
	return q.MilliValue()
}

// draCapacity is one consumable capacity of a shared device.
type draCapacity struct {
	name  resourceapi.QualifiedName
	value int64
	// The requestPolicy, in milli-units; hasDefault, hasRange and values
	// say which parts are set (a zero max means none).
	hasDefault     bool
	def            int64
	hasRange       bool
	min, max, step int64
	values         []int64
}

func newDRACapacity(name resourceapi.QualifiedName, c resourceapi.DeviceCapacity) draCapacity {
	dc := draCapacity{name: name, value: milli(c.Value)}
	p := c.RequestPolicy
	if p == nil {
		return dc
	}
	if p.Default != nil {
		dc.hasDefault, dc.def = true, milli(*p.Default)
	}
	if r := p.ValidRange; r != nil && r.Min != nil {
		dc.hasRange, dc.min = true, milli(*r.Min)
		if r.Max != nil {
			dc.max = milli(*r.Max)
		}
		if r.Step != nil {
			dc.step = milli(*r.Step)
		}
	} else {
		for _, v := range p.ValidValues {
			dc.values = append(dc.values, milli(v))
		}
	}
	return dc
}

// consumes returns what a request asking requested (asked: named at all)
// consumes of c, and false when the policy refuses it.
func (c *draCapacity) consumes(requested int64, asked bool) (int64, bool) {
	if !asked {
		if c.hasDefault {
			return c.def, true
		}
		return c.value, true
	}
	switch {
	case c.hasRange:
		v := max(requested, c.min)
		if c.step > 0 && v > c.min {
			n := (v - c.min + c.step - 1) / c.step
			if n > (math.MaxInt64-c.min)/c.step {
				return 0, false
			}
			v = c.min + n*c.step
		}
		if c.max > 0 && v > c.max && !(c.hasDefault && v == c.def) {
			return 0, false
		}
		return v, true
	case len(c.values) > 0:
		for _, v := range c.values {
			if requested <= v {
				return v, true
			}
		}
		return 0, c.hasDefault && requested == c.def
	}
	return requested, true
}

// holds reports whether a device that is not shared can serve r: the
// allocator checks capacity requests on every device, so what r consumes
// must fit the fresh device (which r then holds whole).
func (d *DRADevice) holds(r CapacityRequest) bool {
	if r.Empty() && len(d.caps) == 0 {
		return true
	}
	var buf [4]int64
	need, ok := d.need(r, buf[:0])
	if !ok {
		return false
	}
	for i, v := range need {
		if v > d.caps[i].value {
			return false
		}
	}
	return true
}

// need returns what r consumes of each of d's capacities, into out, and
// false when d cannot serve r at all (a capacity d lacks, a policy broken).
func (d *DRADevice) need(r CapacityRequest, out []int64) ([]int64, bool) {
	out = out[:0]
	for _, name := range r.names {
		if !slices.ContainsFunc(d.caps, func(c draCapacity) bool { return c.name == name }) {
			return out, false
		}
	}
	for i := range d.caps {
		c := &d.caps[i]
		amount, asked := r.Amount(c.name)
		v, ok := c.consumes(amount, asked)
		if !ok {
			return out, false
		}
		out = append(out, v)
	}
	return out, true
}

// Share returns the part of a fresh device d that one allocation for r
// takes: the largest over d's capacities of consumed / value (1 for a
// device that is not shared, or whose capacities r takes whole), and false
// when d cannot serve r. The FGD measure compares it with a device's free
// share (DRAUsage.FreeShare).
func (d *DRADevice) Share(r CapacityRequest) (float64, bool) {
	if !d.Shared() {
		return 1, d.holds(r)
	}
	var buf [4]int64
	need, ok := d.need(r, buf[:0])
	if !ok {
		return 0, false
	}
	share := 0.0
	for i, v := range need {
		if c := d.caps[i].value; c > 0 {
			share = max(share, float64(v)/float64(c))
		} else if v > 0 {
			return 0, false
		}
	}
	return min(share, 1), true
}
