package dra

import (
	"context"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"

	"github.com/devicefit/devicefit/internal/nvdra"
)

// TestCountsExactly: the free count is the allocator's verdict for an
// extended resource's claim only on plain devices in pools the model reads
// as the allocator does (DevicePack's shortlist relies on it).
func TestCountsExactly(t *testing.T) {
	plain := func() *resourceapi.ResourceSlice {
		return nvdra.NodeSlice("n1", nvdra.GPUs(0, 4, "NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", "80Gi")...)
	}
	shared := nvdra.NodeSlice("n2", nvdra.SharedGPUs(0, 2, "NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", "80Gi")...)
	allNodes := nvdra.NodeSlice("n3", nvdra.GPUs(0, 1, "NVIDIA L4", "Ada Lovelace", "8.9.0", "24Gi")...)
	allNodes.Spec.NodeName, allNodes.Spec.AllNodes = nil, ptr.To(true)
	allNodes.Spec.Pool.Name = "net"
	twice := nvdra.NodeSlice("n4", append(nvdra.GPUs(0, 1, "NVIDIA L4", "Ada Lovelace", "8.9.0", "24Gi"), nvdra.GPUs(0, 1, "NVIDIA L4", "Ada Lovelace", "8.9.0", "24Gi")...)...)
	binding := nvdra.NodeSlice("n5", nvdra.GPUs(0, 1, "NVIDIA L4", "Ada Lovelace", "8.9.0", "24Gi")...)
	binding.Spec.Devices[0].BindingConditions = []string{"attached"}
	binding.Spec.Devices[0].BindingFailureConditions = []string{"failed"}

	gpus := nvdra.Class("gpu.nvidia.com", nvdra.WholeGPUs, "nvidia.com/gpu")
	exclusive := nvdra.Class("exclusive", nvdra.ExclusiveGPUs, "")
	failing := nvdra.Class("failing", `device.attributes["gpu.nvidia.com"].nosuch == "x"`, "")

	for _, tc := range []struct {
		name   string
		slices []*resourceapi.ResourceSlice
		class  *resourceapi.DeviceClass
		// want is a part of the reason, "" for exact.
		want string
		// free on n1, checked when exact.
		free int64
	}{
		{name: "plain devices", slices: []*resourceapi.ResourceSlice{plain()}, class: gpus, free: 3},
		{name: "shared devices the class selects", slices: []*resourceapi.ResourceSlice{plain(), shared}, class: gpus, want: "serves several claims"},
		{name: "shared devices the class leaves out", slices: []*resourceapi.ResourceSlice{plain(), shared}, class: exclusive, free: 3},
		{name: "a selector that fails", slices: []*resourceapi.ResourceSlice{plain()}, class: failing, want: "selector fails"},
		{name: "devices for all nodes", slices: []*resourceapi.ResourceSlice{plain(), allNodes}, class: gpus, want: "several nodes"},
		{name: "a device named twice", slices: []*resourceapi.ResourceSlice{plain(), twice}, class: gpus, want: "twice"},
		{name: "binding conditions", slices: []*resourceapi.ResourceSlice{plain(), binding}, class: gpus, want: "binding conditions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &Objects{Slices: tc.slices, Classes: []*resourceapi.DeviceClass{tc.class},
				Claims: []*resourceapi.ResourceClaim{nvdra.Allocated("ns", "held", "n1/gpu-1")}}
			v, err := NewTracker().View(context.Background(), m)
			if err != nil {
				t.Fatal(err)
			}
			c := v.byName[tc.class.Name]
			got := v.CountsExactly(c)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Fatalf("CountsExactly = %q, want %q", got, tc.want)
			}
			if tc.want == "" {
				if _, free := v.Count(v.Node("n1"), c.Name); free != tc.free {
					t.Errorf("Count(n1) free = %d, want %d", free, tc.free)
				}
				if _, free := v.Count(v.Node("none"), c.Name); free != 0 {
					t.Errorf("Count of a node without devices: free = %d", free)
				}
			}
		})
	}
}
