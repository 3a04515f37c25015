// Package gfd writes the node labels NVIDIA GPU Feature Discovery
// publishes, for the simulated fleets of the local run and the end-to-end
// tests: one description of GFD's labels instead of one per fleet.
package gfd

import (
	"strconv"

	"github.com/devicefit/devicefit/pkg/devices"
)

// GPU is what GFD reports of one node's GPUs.
type GPU struct {
	Product   string
	MemoryMiB int
	Compute   devices.Compute
	Count     int
	Family    string
	// Machine is nvidia.com/gpu.machine, the node's model as GFD reads it
	// from DMI ("" leaves the label out).
	Machine string
	// DriverMajor is nvidia.com/cuda.driver.major (0 leaves it out).
	DriverMajor int
	// MIGStrategy is the device plugin's MIG strategy GFD labels
	// ("" leaves the label out).
	MIGStrategy devices.MIGStrategy
}

// Labels are g's labels, then the key, value pairs kv (which may override
// them).
func (g GPU) Labels(kv ...string) map[string]string {
	m := map[string]string{
		"nvidia.com/gpu.present":     "true",
		devices.LabelGPUProduct:      g.Product,
		devices.LabelGPUMemory:       strconv.Itoa(g.MemoryMiB),
		devices.LabelGPUFamily:       g.Family,
		devices.LabelGPUComputeMajor: strconv.Itoa(g.Compute.Major),
		devices.LabelGPUComputeMinor: strconv.Itoa(g.Compute.Minor),
		devices.LabelGPUCount:        strconv.Itoa(g.Count),
	}
	if g.Machine != "" {
		m["nvidia.com/gpu.machine"] = g.Machine
	}
	if g.DriverMajor > 0 {
		m["nvidia.com/cuda.driver.major"] = strconv.Itoa(g.DriverMajor)
	}
	if g.MIGStrategy != "" {
		m[devices.LabelMIGStrategy] = string(g.MIGStrategy)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// AddMIGProfile adds the labels GFD writes under the mixed strategy for
// count instances of one MIG profile (e.g. "1g.10gb") of the parent product.
func AddMIGProfile(labels map[string]string, profile, parent string, count, memoryMiB int) {
	prefix := "nvidia.com/mig-" + profile
	labels[prefix+".count"] = strconv.Itoa(count)
	labels[prefix+".memory"] = strconv.Itoa(memoryMiB)
	labels[prefix+".product"] = parent + "-MIG-" + profile
	labels[prefix+".replicas"] = "1"
}
