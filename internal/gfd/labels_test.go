package gfd

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/devicefit/devicefit/pkg/devices"
)

// TestLabels: GFD's labels, the optional ones only when set, and the
// caller's pairs last.
func TestLabels(t *testing.T) {
	tests := []struct {
		name string
		gpu  GPU
		kv   []string
		want map[string]string
	}{
		{
			name: "minimal",
			gpu:  GPU{Product: "NVIDIA-H100-80GB-HBM3", MemoryMiB: 81559, Compute: devices.Compute{Major: 9}, Count: 8, Family: "hopper"},
			want: map[string]string{
				"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.memory": "81559",
				"nvidia.com/gpu.family": "hopper", "nvidia.com/gpu.compute.major": "9", "nvidia.com/gpu.compute.minor": "0", "nvidia.com/gpu.count": "8",
			},
		},
		{
			name: "optional labels and an override",
			gpu: GPU{Product: "NVIDIA-L4", MemoryMiB: 23034, Compute: devices.Compute{Major: 8, Minor: 9}, Count: 4, Family: "ada-lovelace",
				Machine: "g2-standard-48", DriverMajor: 580, MIGStrategy: devices.MIGStrategySingle},
			kv: []string{"nvidia.com/gpu.product", "NVIDIA-L4-SHARED", "nvidia.com/gpu.replicas", "4"},
			want: map[string]string{
				"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-L4-SHARED", "nvidia.com/gpu.memory": "23034",
				"nvidia.com/gpu.family": "ada-lovelace", "nvidia.com/gpu.compute.major": "8", "nvidia.com/gpu.compute.minor": "9", "nvidia.com/gpu.count": "4",
				"nvidia.com/gpu.machine": "g2-standard-48", "nvidia.com/cuda.driver.major": "580", "nvidia.com/mig.strategy": "single",
				"nvidia.com/gpu.replicas": "4",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.gpu.Labels(tc.kv...)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAddMIGProfile: the mixed strategy's per-profile labels.
func TestAddMIGProfile(t *testing.T) {
	labels := map[string]string{}
	AddMIGProfile(labels, "1g.10gb", "NVIDIA-A100-SXM4-80GB", 16, 9728)
	want := map[string]string{
		"nvidia.com/mig-1g.10gb.count":    "16",
		"nvidia.com/mig-1g.10gb.memory":   "9728",
		"nvidia.com/mig-1g.10gb.product":  "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb",
		"nvidia.com/mig-1g.10gb.replicas": "1",
	}
	if diff := cmp.Diff(want, labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
}
