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
//
// Shared devices (consumable capacity, KEP-5075) follow FGD's definition on
// partial GPUs. A device's free share f is the part of its capacity no
// claim consumes (DRAUsage.FreeShare). A job asking for a share s of one
// device can use a device with f ≥ s; a GPU with 0.3 free is fragmented
// for every job that needs more than 0.3. A job asking for whole devices
// (no capacity request takes a shared device whole) can use only untouched
// ones, so every partly used device is fragmented for it:
//
//	usable(job) = Σ f · size over the accepted devices with f ≥ s (s = 1
//	              for whole-device jobs), if there are at least as many of
//	              them as the job needs devices and CPU and memory fit,
//	              else 0
//
// FGD's example: a node with free shares (1, 0.5, 0.2) and jobs of 0.5 and
// 1 GPU, equally likely. The 0.5 job can use 1 and 0.5 and strands 0.2;
// the 1 GPU job can use only the untouched device and strands 0.7. The
// node's fragmentation is ½·0.2 + ½·0.7 = 0.45 GPU.

// DRAFree is one device resource of a DRA node (an entry of pkg/dra): its
// free devices, their size, and which workload classes accept its kind.
type DRAFree struct {
	Resource v1.ResourceName
	Free     int64
	Size     float64
	// Accept is the workload's Acceptance of the entry's kind (nil: none).
	Accept []bool
	// Partial are the free shares of the entry's partly used shared
	// devices (DRAUsage.Partial); the Free devices are untouched.
	Partial []float64
	// Need is, per class, the share of one of the entry's devices a job
	// takes (DRADevice.Share; 0: the class cannot use them); nil means
	// whole devices for every class.
	Need []float64
}

// shareEpsilon absorbs float rounding when a free share is compared with a
// job's share (both are quotients of milli-unit integers).
const shareEpsilon = 1e-9

// usable returns how many of e's devices a job of class i could use and
// their free capacity, by FGD's rule on partial devices.
func (e *DRAFree) usable(i int) (count int64, share float64) {
	need := 1.0
	if e.Need != nil {
		need = e.Need[i]
	}
	if need <= 0 {
		return 0, 0
	}
	count, share = e.Free, float64(e.Free)
	if need < 1 {
		for _, p := range e.Partial {
			if p+shareEpsilon >= need {
				count++
				share += p
			}
		}
	}
	return count, share * e.Size
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
					n, s := e.usable(i)
					free += n
					share += s
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

// StrandedShares returns the expected free share of e's partly used shared
// devices (e.Partial) that a fractional job of the workload asking for
// e.Resource could not use there: the part of devicefit_device_shares that
// is stranded. It applies usable's FGD rule to the partial devices only, and
// judges them by the jobs that ask a capacity of e.Resource's devices (the
// classes with a capacity request), as StrandedOf judges free devices by the
// jobs asking for their resource: untouched devices are whole and any job
// can take them, and a partly used device is of use to no whole-device job,
// so neither says whether shares are left where fractional jobs cannot use
// them. 0 when no job asks for a share of e.Resource. The unit is e.Size
// (a whole device, for a shared GPU consuming no counters).
func (w *Workload) StrandedShares(e DRAFree, milliCPU, memoryBytes int64) float64 {
	var partial float64
	for _, p := range e.Partial {
		partial += p
	}
	if partial <= 0 {
		return 0
	}
	partial *= e.Size
	var asking, stranded float64
	for i := range w.classes {
		c := &w.classes[i]
		if c.Resource != e.Resource || c.Capacity.Empty() {
			continue
		}
		asking += c.Weight
		var usable float64
		if e.Accept != nil && e.Accept[i] && c.MilliCPU <= milliCPU && c.MemoryBytes <= memoryBytes {
			// A job of several devices may take untouched ones beside the
			// partial ones: they count towards its devices, not its use
			// of the partial shares.
			if n, share := e.usable(i); n >= c.Devices {
				usable = min(share-float64(e.Free)*e.Size, partial)
			}
		}
		stranded += c.Weight * (partial - usable)
	}
	if asking == 0 {
		return 0
	}
	return stranded / asking
}
