package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeviceNodePolicy says how device-free pods treat nodes that carry devices.
type DeviceNodePolicy string

const (
	// DeviceNodePolicyNone lets device-free pods land anywhere (the default).
	DeviceNodePolicyNone DeviceNodePolicy = "None"
	// DeviceNodePolicyRequire keeps device-free pods off nodes that have a
	// device resource in their allocatable.
	DeviceNodePolicyRequire DeviceNodePolicy = "Require"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DeviceFitArgs holds the arguments of the DeviceFit plugin.
type DeviceFitArgs struct {
	metav1.TypeMeta `json:",inline"`

	// DeviceResources lists the extended resources that are discrete devices,
	// as exact names ("nvidia.com/gpu") or prefix patterns ending in "*"
	// ("nvidia.com/mig-*"). Default: the vendors' device plugin resources
	// (NVIDIA GPU, shared GPU and MIG, AMD, AWS Neuron, Google TPU, Intel, Habana).
	// +optional
	DeviceResources []string `json:"deviceResources,omitempty"`

	// DeviceNodePolicy is None (default) or Require: Require filters nodes that
	// have devices out for pods that request none.
	// +optional
	DeviceNodePolicy *DeviceNodePolicy `json:"deviceNodePolicy,omitempty"`

	// AllowedCounts, when set, lists the device counts (1..1024) a pod may
	// request of each device resource; any other count is unschedulable.
	// +optional
	AllowedCounts []int64 `json:"allowedCounts,omitempty"`
}

// WorkloadMode is Observed or Static.
type WorkloadMode string

const (
	WorkloadObserved WorkloadMode = "Observed"
	WorkloadStatic   WorkloadMode = "Static"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DevicePackArgs holds the arguments of the DevicePack plugin.
type DevicePackArgs struct {
	metav1.TypeMeta `json:",inline"`

	// DeviceResources, as in DeviceFitArgs. Default: the same vendor list.
	// +optional
	DeviceResources []string `json:"deviceResources,omitempty"`

	// Workload is the job distribution that fragmentation is measured
	// against. Default: Observed, halfLifePods 2000, with a prior of 1, 2,
	// 4 and 8 nvidia.com/gpu jobs worth 100 pods.
	// +optional
	Workload *WorkloadSpec `json:"workload,omitempty"`

	// FragmentationWeight (0..100, default 100) weighs the growth of
	// expected stranded devices, in thousandths of a device.
	// +optional
	FragmentationWeight *int64 `json:"fragmentationWeight,omitempty"`
	// BestFitWeight (0..100, default 1) weighs how full the node's devices
	// are after the placement, in thousandths (for a pod without devices,
	// how full they are already: its CPU goes beside taken devices first,
	// docs/placement.md). At 1 it only breaks near
	// ties of fragmentation (a node going from empty to full is worth 0.01
	// stranded device at fragmentationWeight 100); at 10 it outweighed
	// real differences in stranded GPU shares (docs/placement.md).
	// +optional
	BestFitWeight *int64 `json:"bestFitWeight,omitempty"`
	// ProductValueWeight (0..100, default 1) prefers the least valuable
	// product that fits, in thousandths of the most valuable one.
	// +optional
	ProductValueWeight *int64 `json:"productValueWeight,omitempty"`
	// ScarcityWeight (0..100, default 100) weighs, in thousandths of a
	// device, the demand of product-constrained jobs (devicefit.io/products)
	// that a placement would leave without room: taking a device that such
	// jobs need costs Σ weight(class)·free devices/free devices they accept.
	// +optional
	ScarcityWeight *int64 `json:"scarcityWeight,omitempty"`
	// DeviceNodePenalty (0..100, default 0) lowers the score of nodes with
	// devices for pods that request none: a preference, where DeviceFit's
	// deviceNodePolicy Require (None or Require) is a filter.
	// +optional
	DeviceNodePenalty *int64 `json:"deviceNodePenalty,omitempty"`

	// ProductValues rank products; the first matching pattern wins.
	// Default: value = per-device memory in MiB.
	// +optional
	ProductValues []ProductValue `json:"productValues,omitempty"`

	// Shortlist (default true): when only DevicePack tells the feasible
	// nodes apart, its PreFilter names just the nodes that can win (its
	// best and their ties), so that the framework filters and scores those
	// instead of every node, and picks the node it would have picked among
	// all. It names none for pods and profiles whose filters and scores it
	// cannot reproduce exactly (docs/performance.md). false: every node is
	// filtered and scored.
	// +optional
	Shortlist *bool `json:"shortlist,omitempty"`
}

// WorkloadSpec describes the job distribution.
type WorkloadSpec struct {
	// Mode is Observed (default) or Static.
	// +optional
	Mode *WorkloadMode `json:"mode,omitempty"`
	// HalfLifePods (1..10^7, default 2000): an observed pod's weight halves
	// after this many newer device pods.
	// +optional
	HalfLifePods *int64 `json:"halfLifePods,omitempty"`
	// Classes: the Static distribution, or the prior of Observed.
	// +optional
	Classes []WorkloadClass `json:"classes,omitempty"`
	// PriorPods (0..10^7, default 100): the total weight of Classes in
	// Observed mode, in pods.
	// +optional
	PriorPods *int64 `json:"priorPods,omitempty"`
}

// WorkloadClass is one kind of device job.
type WorkloadClass struct {
	Resource string `json:"resource"`
	Devices  int64  `json:"devices"`
	// +optional
	MilliCPU int64 `json:"milliCPU,omitempty"`
	// +optional
	MemoryMiB int64 `json:"memoryMiB,omitempty"`
	// +optional
	Products string `json:"products,omitempty"`
	Weight   int64  `json:"weight"`
}

// ProductValue values a product pattern (syntax of devicefit.io/products).
type ProductValue struct {
	Product string `json:"product"`
	Value   int64  `json:"value"`
}
