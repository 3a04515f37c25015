package devices

import v1 "k8s.io/api/core/v1"

// Fragmentation of a node whose devices come from ResourceSlices. A GPU and
// its MIG partitions are different devices of one piece of hardware, so
// counting free devices per resource would count the same hardware twice
// (and taking a slice of a fresh GPU would seem to free the whole GPU's
// device from fragmentation). The unit here is the hardware instead: the
// node's free capacity in whole devices (DRAUsage.FreeCapacity), and for
// each job the part of it the job could use, as FGD measures a partly used
// GPU by its free share:
//
//	stranded(node, job) = free capacity − usable(job)
//	usable(job) = Σ free · size over the devices the job accepts, if they
//	              are at least the devices it needs and CPU and memory fit,
//	              else 0
//
// With plain devices (size 1, no counters) this is the whole-device rule of
// Stranded: all free devices when the job cannot run, none when it can.

// DRAFree is one device resource of a DRA node (an entry of pkg/dra): its
// free devices, their size, and which workload classes accept its kind.
type DRAFree struct {
	Resource v1.ResourceName
	Free     int64
	Size     float64
	// Accept is the workload's Acceptance of the entry's kind (nil: none).
	Accept []bool
}

// StrandedDRA returns the expected free capacity of a DRA node that a job
// drawn from the workload could not use there. It does not allocate.
func (w *Workload) StrandedDRA(entries []DRAFree, capacity float64, milliCPU, memoryBytes int64) float64 {
	if capacity <= 0 {
		return 0
	}
	var stranded float64
	for i := range w.classes {
		c := &w.classes[i]
		var usable float64
		if c.MilliCPU <= milliCPU && c.MemoryBytes <= memoryBytes {
			var free int64
			var share float64
			for j := range entries {
				e := &entries[j]
				if e.Resource == c.Resource && e.Accept != nil && e.Accept[i] {
					free += e.Free
					share += float64(e.Free) * e.Size
				}
			}
			if free >= c.Devices {
				usable = min(share, capacity)
			}
		}
		stranded += c.Weight * (capacity - usable)
	}
	return stranded
}
