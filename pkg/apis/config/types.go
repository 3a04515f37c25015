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
