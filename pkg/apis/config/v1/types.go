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
