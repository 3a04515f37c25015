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
