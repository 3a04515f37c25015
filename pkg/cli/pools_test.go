package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func slice(name, driver, pool string, generation, count int64, node string, devs ...resourceapi.Device) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:  driver,
			Pool:    resourceapi.ResourcePool{Name: pool, Generation: generation, ResourceSliceCount: count},
			Devices: devs,
		},
	}
	if node != "" {
		s.Spec.NodeName = ptr.To(node)
	} else {
		s.Spec.AllNodes = ptr.To(true)
	}
	return s
}

func device(name string, shareable bool) resourceapi.Device {
	d := resourceapi.Device{Name: name}
	if shareable {
		d.AllowMultipleAllocations = ptr.To(true)
	}
	return d
}

func claim(name string, results ...resourceapi.DeviceRequestAllocationResult) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	if results != nil {
		c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: results}}
	}
	return c
}

func result(driver, pool, dev string) resourceapi.DeviceRequestAllocationResult {
	return resourceapi.DeviceRequestAllocationResult{Request: "gpu", Driver: driver, Pool: pool, Device: dev}
}

func TestBuildPools(t *testing.T) {
	const nv = "gpu.nvidia.com"
	slices := []*resourceapi.ResourceSlice{
		// node-a's pool, regenerated: only generation 2 counts.
		slice("a-old", nv, "node-a", 1, 1, "node-a", device("gpu-0", false), device("gpu-1", false), device("gpu-2", false)),
		slice("a-new", nv, "node-a", 2, 1, "node-a", device("gpu-0", false), device("gpu-1", false)),
		// node-b's pool spans two slices of which one is published.
		slice("b-0", nv, "node-b", 1, 2, "node-b", device("gpu-0", true), device("gpu-1", true)),
		// A network-attached pool.
		slice("fabric", "fabric.example.com", "rack-1", 1, 1, "", device("nic-0", false)),
	}
	claims := []*resourceapi.ResourceClaim{
		claim("one", result(nv, "node-a", "gpu-1")),
		// Two claims share one device of node-b (consumable capacity).
		claim("share-1", result(nv, "node-b", "gpu-0")),
		claim("share-2", result(nv, "node-b", "gpu-0")),
		claim("pending"),
	}
	want := []PoolRow{
		{Driver: "fabric.example.com", Pool: "rack-1", Slices: 1, Complete: true, Devices: 1, Free: 1},
		{Driver: nv, Pool: "node-a", Node: "node-a", Slices: 1, Complete: true, Devices: 2, Allocated: 1, Free: 1},
		{Driver: nv, Pool: "node-b", Node: "node-b", Slices: 1, Complete: false, Devices: 2, Allocated: 1, Free: 1, Shareable: 2},
	}
	if diff := cmp.Diff(want, BuildPools(slices, claims)); diff != "" {
		t.Errorf("pools (-want +got):\n%s", diff)
	}
}
