package config

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeviceNodePolicy says how device-free pods treat nodes that carry devices.
type DeviceNodePolicy string

const (
	// DeviceNodePolicyNone lets device-free pods land anywhere.
	DeviceNodePolicyNone DeviceNodePolicy = "None"
	// DeviceNodePolicyRequire filters device nodes out for device-free pods,
	// so CPU-only work never takes the CPU and memory a GPU job needs.
	DeviceNodePolicyRequire DeviceNodePolicy = "Require"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DeviceFitArgs holds the arguments of the DeviceFit plugin.
type DeviceFitArgs struct {
	metav1.TypeMeta

	// DeviceResources lists the extended resources that are discrete devices:
	// exact names ("nvidia.com/gpu") or prefix patterns ending in "*"
	// ("nvidia.com/mig-*"). Defaults to devices.DefaultResourcePatterns.
	DeviceResources []string

	// DeviceNodePolicy keeps device-free pods off device nodes when Require.
	DeviceNodePolicy DeviceNodePolicy

	// AllowedCounts, when not empty, is the set of device counts a pod may
	// request per device resource (e.g. 1, 2, 4, 8 to match NVLink domains).
	// Each value is in [1, 1024]. Empty allows any whole count.
	AllowedCounts []int64
}

// WorkloadMode says where DevicePack takes the job distribution from.
type WorkloadMode string

const (
	// WorkloadObserved learns the distribution from the device pods the
	// scheduler sees, with older pods decaying (HalfLifePods).
	WorkloadObserved WorkloadMode = "Observed"
	// WorkloadStatic uses the classes listed in the args.
	WorkloadStatic WorkloadMode = "Static"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DevicePackArgs holds the arguments of the DevicePack plugin.
type DevicePackArgs struct {
	metav1.TypeMeta

	// DeviceResources, as in DeviceFitArgs.
	DeviceResources []string

	// Workload is the job distribution fragmentation is measured against.
	Workload WorkloadSpec

	// Weights of the score terms; each in [0, 100].
	FragmentationWeight int64
	BestFitWeight       int64
	ProductValueWeight  int64
	// ScarcityWeight weighs the expected loss of placements for jobs that
	// accept only some products, when a pod takes such products' devices.
	ScarcityWeight int64
	// DeviceNodePenalty in [0, 100] lowers the score of device nodes for
	// device-free pods, a preference where DeviceFit's DeviceNodePolicy
	// Require is a filter; 0 disables it.
	DeviceNodePenalty int64

	// ProductValues rank products for the "least valuable product that
	// fits" term; the first matching pattern wins. Products that match
	// none are valued by their per-device memory.
	ProductValues []ProductValue

	// Shortlist: PreFilter names only the nodes that can win when it can
	// tell them exactly.
	Shortlist bool
}

// WorkloadSpec describes the job distribution.
type WorkloadSpec struct {
	Mode WorkloadMode
	// HalfLifePods: the weight of an observed pod halves after this many
	// newer device pods (Observed). Counted in pods, not seconds, so the same
	// arrivals give the same scores (replays are deterministic).
	HalfLifePods int64
	// Classes are the Static distribution, and the prior of Observed (worth
	// PriorPods pods in total, decaying like observations).
	Classes []WorkloadClass
	// PriorPods is the total weight of Classes in Observed mode.
	PriorPods int64
}

// WorkloadClass is one kind of device job.
type WorkloadClass struct {
	// Resource is a device resource name, e.g. nvidia.com/gpu.
	Resource string
	// Devices is the count a job requests, 1..1024.
	Devices int64
	// MilliCPU and MemoryMiB are what a job requests besides devices.
	MilliCPU  int64
	MemoryMiB int64
	// Products optionally restricts the class, as devicefit.io/products.
	Products string
	// Weight is the relative frequency, > 0.
	Weight int64
}

// ProductValue values a product (pattern as in devicefit.io/products).
type ProductValue struct {
	Product string
	Value   int64
}
