package metrics

import "github.com/devicefit/devicefit/pkg/devices"

// addShares counts a DRA entry of shared devices (allowMultipleAllocations)
// into s.Shares: what claims consume of them, what is left, and how much of
// what is left on partly used devices the workload's fractional jobs could
// not use, given the node's free CPU and memory.
func (s *Summary) addShares(e DRAEntry, w *devices.Workload, milliCPU, memoryBytes int64) {
	size := e.Size
	if size <= 0 {
		size = 1
	}
	free := float64(e.Free)
	for _, p := range e.Partial {
		free += p
	}
	product := e.Device.Product
	if product == "" {
		product = ProductUnknown
	}
	key := DeviceKey{Resource: e.Resource, Product: product}
	if s.Shares == nil {
		s.Shares = map[DeviceKey]*ShareCounts{}
	}
	c := s.Shares[key]
	if c == nil {
		c = &ShareCounts{}
		s.Shares[key] = c
	}
	// A device neither untouched nor partly used is used up (its capacity
	// consumed, or its shared counters taken by another device).
	c.Used += max(float64(e.Total)-free, 0) * size
	c.Free += free * size
	if w == nil || len(e.Partial) == 0 || e.Sample == nil {
		return
	}
	classes := w.Classes()
	need := make([]float64, len(classes))
	for i := range classes {
		// What one job of the class takes of such a device; 0 when the
		// device cannot serve it (a capacity it lacks, a policy broken).
		if share, ok := e.Sample.Share(classes[i].Capacity); ok {
			need[i] = share
		}
	}
	c.Stranded += w.StrandedShares(devices.DRAFree{
		Resource: e.Resource, Free: e.Free, Size: size, Accept: w.Acceptance(e.Resource, e.Device),
		Partial: e.Partial, Need: need,
	}, milliCPU, memoryBytes)
}
