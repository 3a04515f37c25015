// Package nvdra builds DRA objects as NVIDIA's DRA driver
// (kubernetes-sigs/dra-driver-nvidia-gpu) publishes them: ResourceSlices
// of whole GPUs and of partitionable GPUs with their MIG devices (attribute
// names type, productName, architecture, cudaComputeCapability, profile;
// capacity memory), and DeviceClasses selecting them. The local run, the
// tests and the replay publish these where no driver runs.
package nvdra

import (
	"fmt"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Driver is NVIDIA's DRA driver name: the objects below carry its
// attribute names, as dra-driver-nvidia-gpu publishes them.
const Driver = "gpu.nvidia.com"

// Class selectors of the driver's device types, as its DeviceClasses have
// them.
const (
	WholeGPUs = `device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "gpu"`
	MIGs      = `device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "mig"`
	// SharedGPUsOnly and ExclusiveGPUs split WholeGPUs by
	// allowMultipleAllocations (a field of the CEL device since KEP-5075):
	// a class for fractions of GPUs, and one whose claims hold GPUs alone.
	SharedGPUsOnly = WholeGPUs + ` && device.allowMultipleAllocations`
	ExclusiveGPUs  = WholeGPUs + ` && !device.allowMultipleAllocations`
)

// GPU is a whole GPU as the driver publishes it: type, productName (NVML's
// name, with spaces), architecture, cudaComputeCapability and memory.
func GPU(name, product, arch, compute, memory string) resourceapi.Device {
	return resourceapi.Device{
		Name: name,
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"type":                  {StringValue: ptr.To("gpu")},
			"productName":           {StringValue: ptr.To(product)},
			"architecture":          {StringValue: ptr.To(arch)},
			"cudaComputeCapability": {VersionValue: ptr.To(compute)},
		},
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			"memory": {Value: resource.MustParse(memory)},
		},
	}
}

// GPUs returns n GPUs named gpu-<first>, gpu-<first+1>, … of one model.
func GPUs(first, n int, product, arch, compute, memory string) []resourceapi.Device {
	out := make([]resourceapi.Device, n)
	for i := range out {
		out[i] = GPU(fmt.Sprintf("gpu-%d", first+i), product, arch, compute, memory)
	}
	return out
}

// Shares is the capacity a shared GPU publishes for fractions of itself
// (the driver's "shares" under its ConsumableShares gate): 1000 per GPU,
// so that a claim asking for 460 has FGD's 460 milli-GPU.
const Shares = "shares"

// SharedGPU is a GPU that serves several claims at once (consumable
// capacity, KEP-5075): allowMultipleAllocations, shares 1000, and memory
// with a request policy whose default is 0, so that a claim asking only
// for shares takes none of the memory while a claim asking for nothing
// takes all the shares, that is the whole GPU.
func SharedGPU(name, product, arch, compute, memory string) resourceapi.Device {
	d := GPU(name, product, arch, compute, memory)
	d.AllowMultipleAllocations = ptr.To(true)
	d.Capacity["memory"] = resourceapi.DeviceCapacity{Value: resource.MustParse(memory),
		RequestPolicy: &resourceapi.CapacityRequestPolicy{Default: ptr.To(resource.MustParse("0"))}}
	d.Capacity[Shares] = resourceapi.DeviceCapacity{Value: resource.MustParse("1000")}
	return d
}

// SharedGPUs returns n SharedGPU named gpu-<first>, … of one model.
func SharedGPUs(first, n int, product, arch, compute, memory string) []resourceapi.Device {
	out := GPUs(first, n, product, arch, compute, memory)
	for i := range out {
		out[i] = SharedGPU(out[i].Name, product, arch, compute, memory)
	}
	return out
}

// NodeSlice publishes devices for node in a one-slice pool named after it.
func NodeSlice(node string, devices ...resourceapi.Device) *resourceapi.ResourceSlice {
	return &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + Driver},
		Spec: resourceapi.ResourceSliceSpec{
			Driver: Driver, NodeName: ptr.To(node),
			Pool:    resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
			Devices: devices,
		},
	}
}

// Partitionable publishes on node gpus partitionable GPUs of one model
// (KEP-4815), as the driver does for dynamic MIG: per GPU a counter set of
// memory slices, the whole GPU consuming all of them and each 1-slice MIG
// device (profile) one. Two slices: the counter sets, then the devices.
func Partitionable(node string, gpus, slices int, product, profile, memory, sliceMemory string) []*resourceapi.ResourceSlice {
	counters := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-counters"},
		Spec: resourceapi.ResourceSliceSpec{Driver: Driver, NodeName: ptr.To(node),
			Pool: resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 2}},
	}
	devs := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-devices"},
		Spec: resourceapi.ResourceSliceSpec{Driver: Driver, NodeName: ptr.To(node),
			Pool: resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 2}},
	}
	one := resourceapi.Counter{Value: resource.MustParse("1")}
	for g := range gpus {
		set := resourceapi.CounterSet{Name: fmt.Sprintf("gpu-%d-counters", g), Counters: map[string]resourceapi.Counter{}}
		whole := GPU(fmt.Sprintf("gpu-%d", g), product, "Ampere", "8.0.0", memory)
		all := resourceapi.DeviceCounterConsumption{CounterSet: set.Name, Counters: map[string]resourceapi.Counter{}}
		for s := range slices {
			set.Counters[fmt.Sprintf("memory-slice-%d", s)] = one
			all.Counters[fmt.Sprintf("memory-slice-%d", s)] = one
		}
		whole.ConsumesCounters = []resourceapi.DeviceCounterConsumption{all}
		counters.Spec.SharedCounters = append(counters.Spec.SharedCounters, set)
		devs.Spec.Devices = append(devs.Spec.Devices, whole)
		for s := range slices {
			// Device names are DNS labels: no dots, so no profile in them.
			mig := GPU(fmt.Sprintf("gpu-%d-mig-%d", g, s), product, "Ampere", "8.0.0", sliceMemory)
			mig.Attributes["type"] = resourceapi.DeviceAttribute{StringValue: ptr.To("mig")}
			mig.Attributes["profile"] = resourceapi.DeviceAttribute{StringValue: ptr.To(profile)}
			mig.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: set.Name,
				Counters: map[string]resourceapi.Counter{fmt.Sprintf("memory-slice-%d", s): one}}}
			devs.Spec.Devices = append(devs.Spec.Devices, mig)
		}
	}
	return []*resourceapi.ResourceSlice{counters, devs}
}

// Class is a DeviceClass selecting by expr, serving extended (KEP-5004)
// when not empty.
func Class(name, expr, extended string) *resourceapi.DeviceClass {
	c := &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{
			{CEL: &resourceapi.CELDeviceSelector{Expression: expr}},
		}},
	}
	if extended != "" {
		c.Spec.ExtendedResourceName = ptr.To(extended)
	}
	return c
}

// Claim is an unallocated claim for count devices of class.
func Claim(ns, name, class string, count int64) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name)},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "devices", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count},
		}}}},
	}
}

// ShareClaim is an unallocated claim for one device of class that asks for
// milli shares of it (capacity.requests, KEP-5075).
func ShareClaim(ns, name, class string, milli int64) *resourceapi.ResourceClaim {
	c := Claim(ns, name, class, 1)
	c.Spec.Devices.Requests[0].Exactly.Capacity = &resourceapi.CapacityRequirements{
		Requests: map[resourceapi.QualifiedName]resource.Quantity{Shares: *resource.NewQuantity(milli, resource.DecimalSI)},
	}
	return c
}

// AllocatedShare is a claim holding milli shares of one SharedGPU
// ("pool/device" of Driver), as the allocator records an allocation of a
// device that allows multiple: a share ID, and the capacity consumed (the
// shares asked, the memory its policy's default 0).
func AllocatedShare(ns, name, device string, milli int64) *resourceapi.ResourceClaim {
	c := Allocated(ns, name, device)
	r := &c.Status.Allocation.Devices.Results[0]
	r.ShareID = ptr.To(types.UID(ns + "-" + name))
	r.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{
		Shares: *resource.NewQuantity(milli, resource.DecimalSI), "memory": resource.MustParse("0"),
	}
	return c
}

// Allocated is a claim holding devices, each "pool/device" of Driver.
func Allocated(ns, name string, devices ...string) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name)}}
	c.Status.Allocation = &resourceapi.AllocationResult{}
	for _, d := range devices {
		pool, dev, _ := strings.Cut(d, "/")
		c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results,
			resourceapi.DeviceRequestAllocationResult{Request: "devices", Driver: Driver, Pool: pool, Device: dev})
	}
	return c
}
