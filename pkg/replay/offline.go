package replay

import (
	"cmp"
	"slices"
)

// OfflineArrivals is the pods that arrived by 100% of the fleet's devices
// (capacity, whole devices; the state the figure at 100% arrived shows),
// sorted for a clairvoyant packer: largest device demand first, then CPU,
// then memory. A policy replayed on them packs as first-fit decreasing
// with its own rule: it sees the whole arrived set in the best order for
// packing, which no online scheduler can, and moves nothing.
func OfflineArrivals(arrivals []Arrival, capacity int64) []Arrival {
	var out []Arrival
	var arrived int64
	for k := range arrivals {
		p := arrivals[k].Pod
		if arrived+p.MilliGPUs() > capacity*1000 {
			break
		}
		arrived += p.MilliGPUs()
		out = append(out, arrivals[k])
	}
	slices.SortStableFunc(out, func(a, b Arrival) int {
		return cmp.Or(cmp.Compare(b.Pod.MilliGPUs(), a.Pod.MilliGPUs()), cmp.Compare(b.Pod.MilliCPU, a.Pod.MilliCPU), cmp.Compare(b.Pod.MemoryMiB, a.Pod.MemoryMiB))
	})
	return out
}
