package metrics

import (
	"sort"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/devicefit/devicefit/pkg/devices"
)

// DeviceKey is one row of devicefit_devices: a device resource and the
// product its nodes' labels name.
type DeviceKey struct {
	Resource v1.ResourceName
	Product  string
}

// DeviceCounts are the devices of one key, summed over the nodes.
type DeviceCounts struct {
	// Allocatable is what the device plugins advertise for pods.
	Allocatable int64
	// Allocated is what the bound, non-terminated pods request. It can exceed
	// Allocatable when a device turned unhealthy under running pods.
	Allocated int64
	// Free is max(Allocatable − Allocated, 0) per node.
	Free int64
	// Stranded is the expected number of the free devices that a job of the
	// workload asking for the resource could not use where they are
	// (pkg/devices, Workload.StrandedOf): too few free on the node, the
	// node's CPU or memory used up, or a product or MIG setup the jobs do not
	// accept. 0 when no workload is known yet, or no job of it asks for the
	// resource: no device is known to be unusable.
	Stranded float64
}

// ShareCounts are the shared devices of one key (DRA consumable capacity,
// KEP-5075: allowMultipleAllocations), summed over the nodes, in whole
// devices: a device's share is the most consumed of its capacities
// (devices.DRAUsage.FreeShare), so a GPU with 750 of its 1000 shares taken
// is 0.75 used and 0.25 free whichever capacity the claims name.
type ShareCounts struct {
	// Used is what the claims' allocations consume; Free what is left:
	// untouched devices whole and the free share of partly used ones.
	Used, Free float64
	// Stranded is the expected part of the partly used devices' free share
	// that a fractional job of the workload (a class asking a capacity of
	// the resource) could not use where it is: below the job's share, or
	// on a node whose CPU or memory cannot carry it
	// (devices.Workload.StrandedShares, FGD's rule). Untouched devices are
	// never stranded. 0 when no workload is known or no job asks a share.
	Stranded float64
}

// Summary is the cluster's device inventory at one instant.
type Summary struct {
	Devices map[DeviceKey]*DeviceCounts
	// Shares are the shared devices among Devices (a DRA entry whose devices
	// allow multiple allocations); nil without any.
	Shares map[DeviceKey]*ShareCounts
}

// Keys returns the keys sorted by resource, then product.
func (s Summary) Keys() []DeviceKey {
	return sortedKeys(s.Devices)
}

// ShareKeys returns the keys of Shares sorted as Keys.
func (s Summary) ShareKeys() []DeviceKey {
	return sortedKeys(s.Shares)
}

func sortedKeys[V any](m map[DeviceKey]V) []DeviceKey {
	keys := make([]DeviceKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Resource != keys[j].Resource {
			return keys[i].Resource < keys[j].Resource
		}
		return keys[i].Product < keys[j].Product
	})
	return keys
}

// FragmentationRatio returns, per device resource, stranded / free over all
// its products (0 when nothing is free: no free device, none stranded).
func (s Summary) FragmentationRatio() map[v1.ResourceName]float64 {
	free := map[v1.ResourceName]int64{}
	stranded := map[v1.ResourceName]float64{}
	// Sorted: float sums must not depend on map order.
	for _, k := range s.Keys() {
		c := s.Devices[k]
		free[k.Resource] += c.Free
		stranded[k.Resource] += c.Stranded
	}
	out := make(map[v1.ResourceName]float64, len(free))
	for r, f := range free {
		if f > 0 {
			out[r] = stranded[r] / float64(f)
		} else {
			out[r] = 0
		}
	}
	return out
}

// DRAEntry is one device resource of a node served from ResourceSlices
// (pkg/dra's Entry): the devices one DeviceClass selects there with the
// same facts. Resource is the class's extended resource name, or its
// implicit deviceclass.resource.kubernetes.io/<class>.
type DRAEntry struct {
	Resource v1.ResourceName
	Device   devices.Device
	// Total devices, those claims hold, and those first fit could still give.
	Total, Held, Free int64
	// Size is a device's share of its hardware (devices.DRADevice.Size).
	Size float64
	// Partial are the free shares of the entry's shared devices that claims
	// use and have not used up (FGD's partly allocated GPUs); the Free ones
	// are untouched. Sample is one of the devices: its capacities say what
	// share of it a job's capacity request takes (devices.DRADevice.Share).
	Partial []float64
	Sample  *devices.DRADevice
}

// nodeUse is what the bound pods of one node request.
type nodeUse struct {
	milliCPU, memoryBytes int64
	devices               []devices.Request
}

// Summarize builds the inventory from nodes and pods as the scheduler's
// caches hold them. Pods that are not bound, or have terminated (their
// requests no longer hold devices), are ignored; requests are computed as the
// scheduler computes them (init containers, sidecars, overhead). Cost:
// O(nodes + pods) plus one workload evaluation per node and device resource.
func Summarize(nodes []*v1.Node, pods []*v1.Pod, set devices.ResourceSet, w *devices.Workload) Summary {
	return SummarizeWithDRA(nodes, pods, set, w, nil)
}

// SummarizeWithDRA is Summarize with the nodes' DRA devices (by node
// name) counted too: allocatable is what the slices publish, allocated what
// claims hold, free what first fit could still give. Entries of nodes not
// in nodes are left out.
func SummarizeWithDRA(nodes []*v1.Node, pods []*v1.Pod, set devices.ResourceSet, w *devices.Workload, dra map[string][]DRAEntry) Summary {
	index := make(map[string]int, len(nodes))
	for i, n := range nodes {
		index[n.Name] = i
	}
	use := make([]nodeUse, len(nodes))
	for _, p := range pods {
		i, ok := index[p.Spec.NodeName]
		if !ok || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			continue
		}
		u := &use[i]
		if simplePod(p) {
			// The common pod: its requests are the sum of its containers'.
			// Reading them in place saves the maps PodRequests builds, which
			// are most of a scrape's cost at 20000 pods.
			for j := range p.Spec.Containers {
				u.addRequests(p.Spec.Containers[j].Resources.Requests, set)
			}
			continue
		}
		u.addRequests(resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}), set)
	}

	s := Summary{Devices: map[DeviceKey]*DeviceCounts{}}
	labels := map[v1.ResourceName]*devices.DeviceLabels{}
	for i, n := range nodes {
		u := &use[i]
		alloc := n.Status.Allocatable
		freeCPU := alloc.Cpu().MilliValue() - u.milliCPU
		freeMem := alloc.Memory().Value() - u.memoryBytes
		seen := func(name v1.ResourceName) bool { _, ok := alloc[name]; return ok }
		add := func(name v1.ResourceName, d devices.Device, allocatable, held, free int64) {
			product := d.Product
			if product == "" {
				product = ProductUnknown
			}
			key := DeviceKey{Resource: name, Product: product}
			c := s.Devices[key]
			if c == nil {
				c = &DeviceCounts{}
				s.Devices[key] = c
			}
			c.Allocatable += allocatable
			c.Allocated += held
			c.Free += free
			if w != nil {
				c.Stranded += w.StrandedOf(devices.NodeFree{Resource: name, Devices: free, MilliCPU: freeCPU, MemoryBytes: freeMem, Device: d})
			}
		}
		each := func(name v1.ResourceName, allocatable, requested int64) {
			if allocatable == 0 && requested == 0 {
				// A stale MIG profile left behind by a strategy switch.
				return
			}
			l, ok := labels[name]
			if !ok {
				keys := devices.NewDeviceLabels(name)
				l = &keys
				labels[name] = l
			}
			add(name, l.Describe(n.Labels), allocatable, requested, max(allocatable-requested, 0))
		}
		for name, q := range alloc {
			if set.Contains(name) {
				each(name, q.Value(), u.requested(name))
			}
		}
		// Requests for a resource the node no longer advertises at all; a
		// DRA-served one is counted from its claims below.
		for _, r := range u.devices {
			if !seen(r.Name) && !servedBy(dra[n.Name], r.Name) {
				each(r.Name, 0, r.Count)
			}
		}
		for _, e := range dra[n.Name] {
			add(e.Resource, e.Device, e.Total, e.Held, e.Free)
			if e.Device.Shared {
				s.addShares(e, w, freeCPU, freeMem)
			}
		}
	}
	return s
}

func servedBy(entries []DRAEntry, name v1.ResourceName) bool {
	for _, e := range entries {
		if e.Resource == name {
			return true
		}
	}
	return false
}

// simplePod reports whether PodRequests would simply sum the app
// containers: no init containers (their max), no overhead, no pod-level
// resources (which replace the containers' sum).
func simplePod(p *v1.Pod) bool {
	return len(p.Spec.InitContainers) == 0 && p.Spec.Overhead == nil && p.Spec.Resources == nil
}

func (u *nodeUse) addRequests(reqs v1.ResourceList, set devices.ResourceSet) {
	for name, q := range reqs {
		switch {
		case name == v1.ResourceCPU:
			u.milliCPU += q.MilliValue()
		case name == v1.ResourceMemory:
			u.memoryBytes += q.Value()
		case set.Contains(name):
			u.add(name, q.Value())
		}
	}
}

func (u *nodeUse) add(name v1.ResourceName, n int64) {
	for i := range u.devices {
		if u.devices[i].Name == name {
			u.devices[i].Count += n
			return
		}
	}
	u.devices = append(u.devices, devices.Request{Name: name, Count: n})
}

func (u *nodeUse) requested(name v1.ResourceName) int64 {
	for _, r := range u.devices {
		if r.Name == name {
			return r.Count
		}
	}
	return 0
}
