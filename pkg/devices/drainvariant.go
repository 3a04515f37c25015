package devices

import (
	"fmt"
	"sort"

	resourceapi "k8s.io/api/resource/v1"
)

// DRAAllocationProblems checks the invariant of DRA allocations against
// the slices: every device a claim's status.allocation names is published,
// no device is in two claims' allocations (unless it allows multiple
// allocations, KEP-5075), no shared counter is consumed beyond its value
// (a GPU and a MIG slice of it allocated together), and the capacity the
// allocations of a shared device consume stays within its capacity. It returns one
// line per violation, sorted, and the number of devices allocated. For the
// local run, the tests and the fault checks: the scheduler must never break
// it, whatever fails around it.
func DRAAllocationProblems(slices []*resourceapi.ResourceSlice, claims []*resourceapi.ResourceClaim) ([]string, int) {
	inv := NewDRAInventory(slices)
	type id struct{ driver, pool, device string }
	byID := make(map[id]*DRADevice, len(inv.Devices))
	for _, d := range inv.Devices {
		byID[id{d.Driver, d.Pool, d.Name}] = d
	}
	var problems []string
	holder := map[*DRADevice]string{}
	var held []*DRADevice
	type consumed struct {
		d     *DRADevice
		name  resourceapi.QualifiedName
		milli int64
	}
	var consumption []consumed
	for _, c := range claims {
		if c == nil || c.Status.Allocation == nil {
			continue
		}
		name := c.Namespace + "/" + c.Name
		for _, r := range c.Status.Allocation.Devices.Results {
			d := byID[id{r.Driver, r.Pool, r.Device}]
			if d == nil {
				problems = append(problems, fmt.Sprintf("claim %s holds %s/%s/%s, which no slice publishes", name, r.Driver, r.Pool, r.Device))
				continue
			}
			if prev, dup := holder[d]; dup && !d.Shared() {
				problems = append(problems, fmt.Sprintf("device %s/%s/%s is allocated to both %s and %s", d.Driver, d.Pool, d.Name, prev, name))
				continue
			}
			holder[d] = name
			held = append(held, d)
			for n, q := range r.ConsumedCapacity {
				consumption = append(consumption, consumed{d, n, milli(q)})
			}
		}
	}
	u := NewDRAUsage(inv, held)
	for _, c := range consumption {
		u.AddConsumed(c.d, c.name, c.milli)
	}
	for _, c := range u.Overconsumed() {
		problems = append(problems, fmt.Sprintf("shared counter %s is consumed beyond its value", c))
	}
	for _, c := range u.OverCapacity() {
		problems = append(problems, fmt.Sprintf("capacity %s is consumed beyond its value", c))
	}
	sort.Strings(problems)
	return problems, len(holder)
}
