package devices

import (
	"sort"

	v1 "k8s.io/api/core/v1"
)

// ResourceInventory is one device resource of a node: the counts the
// scheduler tracks and what the labels say about the devices.
type ResourceInventory struct {
	Name v1.ResourceName
	// Allocatable is what the device plugin (or DRA) advertises for pods.
	Allocatable int64
	// Requested is the sum of the device requests of the pods on the node.
	Requested int64
	Device    Device
}

// Free is what is left for new pods; never negative, even when a device
// turned unhealthy under running pods and allocatable dropped below requests.
func (r ResourceInventory) Free() int64 {
	if r.Requested >= r.Allocatable {
		return 0
	}
	return r.Allocatable - r.Requested
}

// Inventory lists a node's device resources, sorted by name.
type Inventory []ResourceInventory

// NodeInventory builds a node's inventory from its labels and the scheduler's
// allocatable and requested counts. Resources with zero allocatable and no
// requests (a stale MIG profile left after a strategy switch) are omitted.
// It allocates; callers on a hot path should use DeviceLabels directly.
func NodeInventory(labels map[string]string, allocatable, requested map[v1.ResourceName]int64, set ResourceSet) Inventory {
	var inv Inventory
	add := func(name v1.ResourceName) {
		for _, r := range inv {
			if r.Name == name {
				return
			}
		}
		a, q := allocatable[name], requested[name]
		if a == 0 && q == 0 {
			return
		}
		keys := NewDeviceLabels(name)
		inv = append(inv, ResourceInventory{Name: name, Allocatable: a, Requested: q, Device: keys.Describe(labels)})
	}
	for name := range allocatable {
		if set.Contains(name) {
			add(name)
		}
	}
	for name := range requested {
		if set.Contains(name) {
			add(name)
		}
	}
	sort.Slice(inv, func(i, j int) bool { return inv[i].Name < inv[j].Name })
	return inv
}
