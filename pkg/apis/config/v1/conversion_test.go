package v1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/devicefit/devicefit/pkg/apis/config"
	"github.com/devicefit/devicefit/pkg/devices"
)

func TestDefaultsAndRoundTrip(t *testing.T) {
	in := &DeviceFitArgs{AllowedCounts: []int64{1, 2}}
	SetDefaults_DeviceFitArgs(in)
	want := &DeviceFitArgs{
		DeviceResources:  devices.DefaultResourcePatterns(),
		DeviceNodePolicy: ptr.To(DeviceNodePolicyNone),
		AllowedCounts:    []int64{1, 2},
	}
	if diff := cmp.Diff(want, in); diff != "" {
		t.Fatalf("unexpected defaults (-want,+got):\n%s", diff)
	}

	var internal config.DeviceFitArgs
	if err := Convert_v1_DeviceFitArgs_To_config_DeviceFitArgs(in, &internal, nil); err != nil {
		t.Fatal(err)
	}
	if internal.DeviceNodePolicy != config.DeviceNodePolicyNone {
		t.Errorf("internal policy %q, want None", internal.DeviceNodePolicy)
	}
	var back DeviceFitArgs
	if err := Convert_config_DeviceFitArgs_To_v1_DeviceFitArgs(&internal, &back, nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, &back); diff != "" {
		t.Errorf("round trip changed the args (-want,+got):\n%s", diff)
	}
	// Copies must not alias the source's slices.
	back.DeviceResources[0] = "changed.io/x"
	if in.DeviceResources[0] == "changed.io/x" {
		t.Error("conversion aliases DeviceResources")
	}
}

// The generated conversions must keep what the hand-written ones did: an
// absent v1 field becomes the internal zero value (args that skipped
// defaulting), the internal args always come back with a workload and mode,
// and an empty policy is omitted so that defaulting fills it in again.
func TestConvertDevicePackArgs(t *testing.T) {
	tests := []struct {
		name         string
		in           *DevicePackArgs
		wantInternal *config.DevicePackArgs
		wantBack     *DevicePackArgs
	}{
		{
			name:         "nothing set",
			in:           &DevicePackArgs{},
			wantInternal: &config.DevicePackArgs{},
			wantBack: &DevicePackArgs{
				Workload: &WorkloadSpec{
					Mode:         ptr.To(WorkloadMode("")),
					HalfLifePods: ptr.To[int64](0),
					PriorPods:    ptr.To[int64](0),
				},
				FragmentationWeight: ptr.To[int64](0),
				BestFitWeight:       ptr.To[int64](0),
				ProductValueWeight:  ptr.To[int64](0),
				ScarcityWeight:      ptr.To[int64](0),
				DeviceNodePenalty:   ptr.To[int64](0),
				Shortlist:           ptr.To(false),
			},
		},
		{
			name: "everything set",
			in: &DevicePackArgs{
				DeviceResources: []string{"nvidia.com/gpu"},
				Workload: &WorkloadSpec{
					Mode:         ptr.To(WorkloadStatic),
					HalfLifePods: ptr.To[int64](50),
					Classes:      []WorkloadClass{{Resource: "nvidia.com/gpu", Devices: 4, MilliCPU: 8000, MemoryMiB: 1024, Products: "H100*", Weight: 3}},
					PriorPods:    ptr.To[int64](10),
				},
				FragmentationWeight: ptr.To[int64](100),
				BestFitWeight:       ptr.To[int64](10),
				ProductValueWeight:  ptr.To[int64](1),
				ScarcityWeight:      ptr.To[int64](100),
				DeviceNodePenalty:   ptr.To[int64](5),
				ProductValues:       []ProductValue{{Product: "H100*", Value: 100}},
				Shortlist:           ptr.To(true),
			},
			wantInternal: &config.DevicePackArgs{
				DeviceResources: []string{"nvidia.com/gpu"},
				Workload: config.WorkloadSpec{
					Mode:         config.WorkloadStatic,
					HalfLifePods: 50,
					Classes:      []config.WorkloadClass{{Resource: "nvidia.com/gpu", Devices: 4, MilliCPU: 8000, MemoryMiB: 1024, Products: "H100*", Weight: 3}},
					PriorPods:    10,
				},
				FragmentationWeight: 100,
				BestFitWeight:       10,
				ProductValueWeight:  1,
				ScarcityWeight:      100,
				DeviceNodePenalty:   5,
				ProductValues:       []config.ProductValue{{Product: "H100*", Value: 100}},
				Shortlist:           true,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var internal config.DevicePackArgs
			if err := Convert_v1_DevicePackArgs_To_config_DevicePackArgs(tc.in, &internal, nil); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantInternal, &internal); diff != "" {
				t.Errorf("v1 to internal (-want,+got):\n%s", diff)
			}
			var back DevicePackArgs
			if err := Convert_config_DevicePackArgs_To_v1_DevicePackArgs(&internal, &back, nil); err != nil {
				t.Fatal(err)
			}
			wantBack := tc.wantBack
			if wantBack == nil {
				wantBack = tc.in
			}
			if diff := cmp.Diff(wantBack, &back); diff != "" {
				t.Errorf("internal to v1 (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestConvertDeviceFitArgsEmptyPolicy(t *testing.T) {
	var back DeviceFitArgs
	if err := Convert_config_DeviceFitArgs_To_v1_DeviceFitArgs(&config.DeviceFitArgs{}, &back, nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&DeviceFitArgs{}, &back); diff != "" {
		t.Errorf("empty internal policy (-want,+got):\n%s", diff)
	}
}
