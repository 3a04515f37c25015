package devices

import (
	"errors"
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"
)

// Fragmentation, in the sense of FGD ("Beware of Fragmentation", ATC'23),
// made discrete: a node's free devices are stranded for a job when the job
// cannot use any of them there — it needs more devices than are free, or the
// node's free CPU or memory cannot carry it, or it wants another device
// resource, or its selector rejects the node's devices. With whole devices a
// job that fits can use every free device it takes, so for one job the
// stranded count is all-or-nothing:
//
//	stranded(node, job) = free devices   if the job cannot run there
//	                    = 0              otherwise
//
// and a node's fragmentation is the expectation over the workload:
//
//	F(node) = Σ_class weight(class) · stranded(node, class)
//
// A scheduler that keeps F small keeps the free devices usable by the jobs
// that actually arrive.

// Class is one kind of device job in a workload distribution.
type Class struct {
	Resource v1.ResourceName
	// Devices is the whole number of devices a job of this class requests.
	Devices     int64
	MilliCPU    int64
	MemoryBytes int64
	// Selector restricts the devices the class can use; zero selects any.
	Selector Selector
	// Capacity is what a job of the class asks of each shared DRA device it
	// gets (consumable capacity, KEP-5075): empty for whole devices.
	Capacity CapacityRequest
	// Weight is the class's relative frequency; Workload normalises weights.
	Weight float64
}

// Workload is a normalised distribution over job classes. Build it once
// (NewWorkload) and evaluate many nodes: Stranded does not allocate.
type Workload struct {
	classes []Class
	labels  []DeviceLabels
}

// NewWorkload validates and normalises classes. Classes with weight 0 are
// dropped; an empty result is an error, since no distribution means no
// notion of usable.
func NewWorkload(classes []Class) (*Workload, error) {
	var total float64
	for i, c := range classes {
		switch {
		case c.Devices <= 0:
			return nil, fmt.Errorf("class %d: devices must be positive, got %d", i, c.Devices)
		case c.MilliCPU < 0 || c.MemoryBytes < 0:
			return nil, fmt.Errorf("class %d: cpu and memory must not be negative", i)
		case c.Weight < 0 || math.IsNaN(c.Weight) || math.IsInf(c.Weight, 0):
			return nil, fmt.Errorf("class %d: weight must be a finite non-negative number, got %v", i, c.Weight)
		}
		total += c.Weight
	}
	if total == 0 {
		return nil, errors.New("workload has no class with a positive weight")
	}
	w := &Workload{}
	for _, c := range classes {
		if c.Weight == 0 {
			continue
		}
		c.Weight /= total
		w.classes = append(w.classes, c)
		w.labels = append(w.labels, NewDeviceLabels(c.Resource))
	}
	return w, nil
}

// Classes returns the normalised classes; callers must not modify them.
func (w *Workload) Classes() []Class { return w.classes }

// Accepts reports whether jobs of class i can use devices d of resource r,
// counts aside: the resource matches and the class selector accepts d.
func (w *Workload) Accepts(i int, r v1.ResourceName, d Device) bool {
	c := &w.classes[i]
	return c.Resource == r && c.Selector.Match(&w.labels[i], d) == Match
}

// Acceptance returns, per class, whether it accepts devices d of resource r
// (Accepts for every class). Nodes with the same kind of devices share one
// acceptance: compute it once per kind, then use StrandedDeltaWith per node.
func (w *Workload) Acceptance(r v1.ResourceName, d Device) []bool {
	acc := make([]bool, len(w.classes))
	for i := range w.classes {
		acc[i] = w.Accepts(i, r, d)
	}
	return acc
}

// NodeFree is what a node has left for one device resource.
type NodeFree struct {
	Resource    v1.ResourceName
	Devices     int64
	MilliCPU    int64
	MemoryBytes int64
	// Device is what the node's labels say about the resource's devices.
	Device Device
}

// Stranded returns F(node): the expected number of the node's free devices
// that a job drawn from the workload could not use there.
func (w *Workload) Stranded(n NodeFree) float64 {
	if n.Devices <= 0 {
		return 0
	}
	var unusable float64
	for i := range w.classes {
		if !w.fits(i, n) {
			unusable += w.classes[i].Weight
		}
	}
	return unusable * float64(n.Devices)
}

// StrandedOf is Stranded among the jobs that ask for the node's resource:
// the expected number of the node's free devices that a job of the workload
// wanting n.Resource could not use there. It is what an operator asks of free
// devices ("could the jobs that want these use them?"): free MIG slices are
// judged by the jobs that ask for MIG slices, not by whole-GPU jobs that never
// could. 0 when no class asks for the resource: no job is known to want them.
// Stranded, over every job, is what DevicePack minimises: there a CPU pod that
// takes a GPU node's CPU must count the devices it strands.
func (w *Workload) StrandedOf(n NodeFree) float64 {
	if n.Devices <= 0 {
		return 0
	}
	var asking, unusable float64
	for i := range w.classes {
		if w.classes[i].Resource != n.Resource {
			continue
		}
		asking += w.classes[i].Weight
		if !w.fits(i, n) {
			unusable += w.classes[i].Weight
		}
	}
	if asking == 0 {
		return 0
	}
	return unusable / asking * float64(n.Devices)
}

func (w *Workload) fits(i int, n NodeFree) bool {
	c := &w.classes[i]
	return c.Resource == n.Resource &&
		c.Devices <= n.Devices &&
		c.MilliCPU <= n.MilliCPU &&
		c.MemoryBytes <= n.MemoryBytes &&
		c.Selector.Match(&w.labels[i], n.Device) == Match
}

// StrandedDeltaWith is StrandedDelta with the node's Acceptance precomputed:
// the selector matching, by far the dearest part, then happens once per kind
// of device instead of once per node.
func (w *Workload) StrandedDeltaWith(acc []bool, n NodeFree, devices, milliCPU, memoryBytes int64) float64 {
	after := n
	after.Devices -= devices
	after.MilliCPU -= milliCPU
	after.MemoryBytes -= memoryBytes
	return w.strandedWith(acc, after) - w.strandedWith(acc, n)
}

func (w *Workload) strandedWith(acc []bool, n NodeFree) float64 {
	if n.Devices <= 0 {
		return 0
	}
	var unusable float64
	for i := range w.classes {
		c := &w.classes[i]
		if !acc[i] || c.Devices > n.Devices || c.MilliCPU > n.MilliCPU || c.MemoryBytes > n.MemoryBytes {
			unusable += c.Weight
		}
	}
	return unusable * float64(n.Devices)
}

// StrandedDelta is F(after) - F(before) for placing a job that takes devices,
// milliCPU and memory from n: negative when the placement reduces
// fragmentation (it used devices that were stranded anyway).
func (w *Workload) StrandedDelta(n NodeFree, devices, milliCPU, memoryBytes int64) float64 {
	after := n
	after.Devices -= devices
	after.MilliCPU -= milliCPU
	after.MemoryBytes -= memoryBytes
	return w.Stranded(after) - w.Stranded(n)
}
