package devices

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
)

// Label sets as GFD writes them; tests copy and amend them with withLabels.
var (
	h100Labels = map[string]string{
		LabelGPUProduct:      "NVIDIA-H100-80GB-HBM3",
		LabelGPUMemory:       "81559",
		LabelGPUCount:        "8",
		LabelGPUFamily:       "hopper",
		LabelGPUComputeMajor: "9",
		LabelGPUComputeMinor: "0",
		LabelMIGStrategy:     "none",
	}
	// A100 40GB under the single strategy: nvidia.com/gpu counts 1g.5gb slices.
	a100SingleLabels = map[string]string{
		LabelGPUProduct:      "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb",
		LabelGPUMemory:       "4864",
		LabelGPUCount:        "56",
		LabelGPUFamily:       "ampere",
		LabelGPUComputeMajor: "8",
		LabelGPUComputeMinor: "0",
		LabelMIGStrategy:     "single",
	}
	// A100 80GB under the mixed strategy with two 1g.10gb and one 3g.40gb
	// profile per GPU.
	a100MixedLabels = map[string]string{
		LabelGPUProduct:                  "NVIDIA-A100-SXM4-80GB",
		LabelGPUMemory:                   "81920",
		LabelGPUCount:                    "8",
		LabelGPUFamily:                   "ampere",
		LabelGPUComputeMajor:             "8",
		LabelGPUComputeMinor:             "0",
		LabelMIGStrategy:                 "mixed",
		"nvidia.com/mig-1g.10gb.product": "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb",
		"nvidia.com/mig-1g.10gb.memory":  "9728",
		"nvidia.com/mig-1g.10gb.count":   "16",
		"nvidia.com/mig-3g.40gb.product": "NVIDIA-A100-SXM4-80GB-MIG-3g.40gb",
		"nvidia.com/mig-3g.40gb.memory":  "40192",
		"nvidia.com/mig-3g.40gb.count":   "8",
	}
)

// withLabels returns a copy of base with set applied; an empty value deletes
// the key.
func withLabels(base map[string]string, set map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(set))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range set {
		if v == "" {
			delete(out, k)
			continue
		}
		out[k] = v
	}
	return out
}

var h100Device = Device{
	Product:     "NVIDIA-H100-80GB-HBM3",
	MemoryMiB:   81559,
	Count:       8,
	Family:      "hopper",
	Compute:     Compute{Major: 9, Minor: 0},
	HasCompute:  true,
	MIGStrategy: MIGStrategyNone,
}

func TestNewDeviceLabels(t *testing.T) {
	tests := []struct {
		resource v1.ResourceName
		wantMIG  bool
	}{
		{resource: NVIDIAGPU},
		{resource: NVIDIASharedGPU},
		{resource: "nvidia.com/mig-1g.10gb", wantMIG: true},
		{resource: "amd.com/gpu"},
		{resource: "google.com/tpu"},
		{resource: "aws.amazon.com/neuron"},
	}
	for _, tc := range tests {
		t.Run(string(tc.resource), func(t *testing.T) {
			l := NewDeviceLabels(tc.resource)
			if got := l.Resource(); got != tc.resource {
				t.Errorf("Resource() = %q, want %q", got, tc.resource)
			}
			if got := l.IsMIG(); got != tc.wantMIG {
				t.Errorf("IsMIG() = %v, want %v", got, tc.wantMIG)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	tests := []struct {
		name     string
		resource v1.ResourceName
		labels   map[string]string
		want     Device
	}{
		{
			name:     "whole GPUs, full labels",
			resource: NVIDIAGPU,
			labels:   h100Labels,
			want:     h100Device,
		},
		{
			name:     "node without labels",
			resource: NVIDIAGPU,
			labels:   nil,
			want:     Device{},
		},
		{
			name:     "older GFD without the vendor prefix or strategy",
			resource: NVIDIAGPU,
			labels: map[string]string{
				LabelGPUProduct: "Tesla-T4", LabelGPUMemory: "15360", LabelGPUFamily: "turing",
				LabelGPUComputeMajor: "7", LabelGPUComputeMinor: "5",
			},
			want: Device{Product: "Tesla-T4", MemoryMiB: 15360, Family: "turing", Compute: Compute{7, 5}, HasCompute: true},
		},
		{
			name:     "nvidia.com/gpu.shared is always shared",
			resource: NVIDIASharedGPU,
			labels:   h100Labels,
			want:     withDevice(h100Device, func(d *Device) { d.Shared = true }),
		},
		{
			name:     "nvidia.com/gpu.shared with time-slicing labels",
			resource: NVIDIASharedGPU,
			labels:   withLabels(h100Labels, map[string]string{LabelSharingStrategy: "time-slicing", LabelGPUReplicas: "4"}),
			want:     withDevice(h100Device, func(d *Device) { d.Shared = true }),
		},
		{
			name:     "MIG single strategy",
			resource: NVIDIAGPU,
			labels:   a100SingleLabels,
			want: Device{
				Product: "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", MemoryMiB: 4864, Count: 56, Family: "ampere",
				Compute: Compute{8, 0}, HasCompute: true, MIGStrategy: MIGStrategySingle,
			},
		},
		{
			name:     "MIG single strategy with mixed profiles",
			resource: NVIDIAGPU,
			labels:   withLabels(a100SingleLabels, map[string]string{LabelGPUProduct: "NVIDIA-A100-SXM4-40GB-MIG-INVALID"}),
			want: Device{
				Product: "NVIDIA-A100-SXM4-40GB-MIG-INVALID", MemoryMiB: 4864, Count: 56, Family: "ampere",
				Compute: Compute{8, 0}, HasCompute: true, MIGStrategy: MIGStrategySingle, MIGInvalid: true,
			},
		},
		{
			name:     "MIG invalid in lower case",
			resource: NVIDIAGPU,
			labels:   map[string]string{LabelGPUProduct: "NVIDIA-A100-SXM4-40GB-MIG-invalid", LabelMIGStrategy: "single"},
			want:     Device{Product: "NVIDIA-A100-SXM4-40GB-MIG-invalid", MIGStrategy: MIGStrategySingle, MIGInvalid: true},
		},
		{
			name:     "MIG mixed: the profile's own labels",
			resource: "nvidia.com/mig-1g.10gb",
			labels:   a100MixedLabels,
			want: Device{
				Product: "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb", MemoryMiB: 9728, Count: 16, Family: "ampere",
				Compute: Compute{8, 0}, HasCompute: true, MIGStrategy: MIGStrategyMixed,
			},
		},
		{
			name:     "MIG mixed: another profile",
			resource: "nvidia.com/mig-3g.40gb",
			labels:   a100MixedLabels,
			want: Device{
				Product: "NVIDIA-A100-SXM4-80GB-MIG-3g.40gb", MemoryMiB: 40192, Count: 8, Family: "ampere",
				Compute: Compute{8, 0}, HasCompute: true, MIGStrategy: MIGStrategyMixed,
			},
		},
		{
			name:     "MIG mixed: a profile the node does not label",
			resource: "nvidia.com/mig-2g.20gb",
			labels:   a100MixedLabels,
			want:     Device{Family: "ampere", Compute: Compute{8, 0}, HasCompute: true, MIGStrategy: MIGStrategyMixed},
		},
		{
			name:     "MIG mixed: nvidia.com/gpu reads the parent labels",
			resource: NVIDIAGPU,
			labels:   a100MixedLabels,
			want: Device{
				Product: "NVIDIA-A100-SXM4-80GB", MemoryMiB: 81920, Count: 8, Family: "ampere",
				Compute: Compute{8, 0}, HasCompute: true, MIGStrategy: MIGStrategyMixed,
			},
		},
		{
			name:     "time-slicing with 4 replicas",
			resource: NVIDIAGPU,
			labels: withLabels(h100Labels, map[string]string{
				LabelGPUProduct: "NVIDIA-H100-80GB-HBM3-SHARED", LabelSharingStrategy: "time-slicing", LabelGPUReplicas: "4",
			}),
			want: withDevice(h100Device, func(d *Device) { d.Product, d.Shared = "NVIDIA-H100-80GB-HBM3-SHARED", true }),
		},
		{
			name:     "time-slicing labels without the product suffix",
			resource: NVIDIAGPU,
			labels:   withLabels(h100Labels, map[string]string{LabelSharingStrategy: "time-slicing", LabelGPUReplicas: "4"}),
			want:     withDevice(h100Device, func(d *Device) { d.Shared = true }),
		},
		{
			name:     "time-slicing with 1 replica is not shared",
			resource: NVIDIAGPU,
			labels:   withLabels(h100Labels, map[string]string{LabelSharingStrategy: "time-slicing", LabelGPUReplicas: "1"}),
			want:     h100Device,
		},
		{
			name:     "time-slicing with garbage replicas is shared",
			resource: NVIDIAGPU,
			labels:   withLabels(h100Labels, map[string]string{LabelSharingStrategy: "time-slicing", LabelGPUReplicas: "four"}),
			want:     withDevice(h100Device, func(d *Device) { d.Shared = true }),
		},
		{
			name:     "time-slicing without replicas is shared",
			resource: NVIDIAGPU,
			labels:   withLabels(h100Labels, map[string]string{LabelSharingStrategy: "time-slicing"}),
			want:     withDevice(h100Device, func(d *Device) { d.Shared = true }),
		},
		{
			name:     "mps with 2 replicas",
			resource: NVIDIAGPU,
			labels:   withLabels(h100Labels, map[string]string{LabelSharingStrategy: "mps", LabelGPUReplicas: "2"}),
			want:     withDevice(h100Device, func(d *Device) { d.Shared = true }),
		},
		{
			name:     "sharing strategy none",
			resource: NVIDIAGPU,
			labels:   withLabels(h100Labels, map[string]string{LabelSharingStrategy: "none", LabelGPUReplicas: "4"}),
			want:     h100Device,
		},
		{
			name:     "shared suffix alone",
			resource: NVIDIAGPU,
			labels:   withLabels(h100Labels, map[string]string{LabelGPUProduct: "NVIDIA-H100-80GB-HBM3-SHARED"}),
			want:     withDevice(h100Device, func(d *Device) { d.Product, d.Shared = "NVIDIA-H100-80GB-HBM3-SHARED", true }),
		},
		{
			name:     "garbage numbers read as unknown",
			resource: NVIDIAGPU,
			labels: withLabels(h100Labels, map[string]string{
				LabelGPUMemory: "lots", LabelGPUCount: "many", LabelGPUComputeMajor: "x",
			}),
			want: withDevice(h100Device, func(d *Device) { d.MemoryMiB, d.Count, d.Compute, d.HasCompute = 0, 0, Compute{}, false }),
		},
		{
			name:     "negative memory, garbage minor",
			resource: NVIDIAGPU,
			labels:   withLabels(h100Labels, map[string]string{LabelGPUMemory: "-81559", LabelGPUComputeMinor: "0.5"}),
			want:     withDevice(h100Device, func(d *Device) { d.MemoryMiB, d.Compute, d.HasCompute = 0, Compute{}, false }),
		},
		{
			name:     "memory with a unit, missing minor",
			resource: NVIDIAGPU,
			labels:   withLabels(h100Labels, map[string]string{LabelGPUMemory: "80Gi", LabelGPUComputeMinor: ""}),
			want:     withDevice(h100Device, func(d *Device) { d.MemoryMiB, d.Compute, d.HasCompute = 0, Compute{}, false }),
		},
		{
			name:     "numbers beyond any device",
			resource: NVIDIAGPU,
			labels: withLabels(h100Labels, map[string]string{
				LabelGPUMemory: "99999999999999999999999", LabelGPUComputeMajor: "99999999",
			}),
			want: withDevice(h100Device, func(d *Device) { d.MemoryMiB, d.Compute, d.HasCompute = 0, Compute{}, false }),
		},
		{
			name:     "largest readable memory",
			resource: NVIDIAGPU,
			labels:   withLabels(h100Labels, map[string]string{LabelGPUMemory: "9007199254740992"}),
			want:     withDevice(h100Device, func(d *Device) { d.MemoryMiB = 1 << 53 }),
		},
		{
			name:     "AMD",
			resource: "amd.com/gpu",
			labels: map[string]string{
				LabelAMDProduct: "AMD_Instinct_MI300X_OAM", LabelAMDFamily: "AI",
				"amd.com/gpu.vram": "192G",
			},
			want: Device{Product: "AMD_Instinct_MI300X_OAM", Family: "AI"},
		},
		{
			name:     "AMD does not read NVIDIA labels",
			resource: "amd.com/gpu",
			labels:   withLabels(h100Labels, map[string]string{LabelMIGStrategy: ""}),
			want:     Device{},
		},
		{
			name:     "TPU",
			resource: "google.com/tpu",
			labels:   map[string]string{LabelTPUProduct: "tpu-v5-lite-podslice", "cloud.google.com/gke-tpu-topology": "2x4"},
			want:     Device{Product: "tpu-v5-lite-podslice"},
		},
		{
			name:     "AWS Neuron has no product label",
			resource: "aws.amazon.com/neuron",
			labels:   map[string]string{"node.kubernetes.io/instance-type": "trn1.32xlarge"},
			want:     Device{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := NewDeviceLabels(tc.resource)
			got := l.Describe(tc.labels)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Describe (-want,+got):\n%s", diff)
			}
		})
	}
}

func withDevice(d Device, change func(*Device)) Device {
	change(&d)
	return d
}

func TestDescribeDoesNotAllocate(t *testing.T) {
	gpu := NewDeviceLabels(NVIDIAGPU)
	mig := NewDeviceLabels("nvidia.com/mig-1g.10gb")
	shared := withLabels(h100Labels, map[string]string{
		LabelGPUProduct: "NVIDIA-H100-80GB-HBM3-SHARED", LabelSharingStrategy: "time-slicing", LabelGPUReplicas: "x",
		LabelGPUMemory: "lots",
	})
	allocs := testing.AllocsPerRun(100, func() {
		gpu.Describe(h100Labels)
		gpu.Describe(a100SingleLabels)
		gpu.Describe(shared)
		mig.Describe(a100MixedLabels)
	})
	if allocs != 0 {
		t.Errorf("Describe allocates %v times per run, want 0", allocs)
	}
}

func TestComputeAtLeast(t *testing.T) {
	tests := []struct {
		c, min Compute
		want   bool
	}{
		{c: Compute{9, 0}, min: Compute{8, 0}, want: true},
		{c: Compute{8, 0}, min: Compute{8, 0}, want: true},
		{c: Compute{8, 6}, min: Compute{8, 0}, want: true},
		{c: Compute{8, 0}, min: Compute{8, 6}, want: false},
		{c: Compute{7, 5}, min: Compute{8, 0}, want: false},
		{c: Compute{12, 0}, min: Compute{9, 9}, want: true},
	}
	for _, tc := range tests {
		if got := tc.c.AtLeast(tc.min); got != tc.want {
			t.Errorf("%v.AtLeast(%v) = %v, want %v", tc.c, tc.min, got, tc.want)
		}
	}
}
