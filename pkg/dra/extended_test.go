package dra

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/devicefit/devicefit/internal/nvdra"
)

// TestTwoClassesNameOneResource: when two DeviceClasses name
// nvidia.com/gpu, the resolver (upstream's cache, given the classes as an
// informer would) serves it by the newer, the smaller name breaking a tie,
// and the view counts the GPUs under it once: the other class's devices
// are its implicit resource's.
func TestTwoClassesNameOneResource(t *testing.T) {
	old := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	newer := metav1.NewTime(old.Add(time.Hour))
	class := func(name string, created metav1.Time) *resourceapi.DeviceClass {
		c := nvdra.Class(name, nvdra.WholeGPUs, "nvidia.com/gpu")
		c.CreationTimestamp = created
		return c
	}
	tests := []struct {
		name    string
		classes []*resourceapi.DeviceClass
		want    string
	}{
		{"newer listed second", []*resourceapi.DeviceClass{class("a", old), class("b", newer)}, "b"},
		{"newer listed first", []*resourceapi.DeviceClass{class("b", newer), class("a", old)}, "b"},
		{"newer has the larger name", []*resourceapi.DeviceClass{class("z", newer), class("a", old)}, "z"},
		{"same second: the smaller name", []*resourceapi.DeviceClass{class("b", old), class("a", old)}, "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := &Objects{Classes: tt.classes,
				Slices: []*resourceapi.ResourceSlice{nodeSlice("n", gpu("gpu-0", "gpu", "NVIDIA H100 80GB HBM3", "80Gi", nil), gpu("gpu-1", "gpu", "NVIDIA H100 80GB HBM3", "80Gi", nil))}}
			v, err := NewTracker().View(context.Background(), objs)
			if err != nil {
				t.Fatal(err)
			}
			if c := v.ClassFor("nvidia.com/gpu"); c == nil || c.Name != tt.want {
				t.Fatalf("ClassFor(nvidia.com/gpu) = %v, want class %s", c, tt.want)
			}
			var gpus int64
			for _, e := range v.Entries("n") {
				switch e.Resource {
				case "nvidia.com/gpu":
					if e.Class != tt.want {
						t.Errorf("entry of class %s counted as nvidia.com/gpu, want only %s's", e.Class, tt.want)
					}
					gpus += e.Total
				case ImplicitResource(e.Class):
				default:
					t.Errorf("entry of class %s under %s", e.Class, e.Resource)
				}
			}
			if gpus != 2 {
				t.Errorf("node n: %d nvidia.com/gpu devices in the view, want 2 (each GPU once)", gpus)
			}
			rows := ExtendedResources(tt.classes, objs.DeviceClassResolver())
			if len(rows) != 1 || rows[0].Class != tt.want || len(rows[0].Named) != 2 || rows[0].Named[0] != tt.want {
				t.Errorf("ExtendedResources = %+v, want nvidia.com/gpu served by %s, named by both, %s first", rows, tt.want, tt.want)
			}
		})
	}
}

// TestObjectsResolverFollowsClasses: Objects resolves against the classes
// it holds now, not those of its first call.
func TestObjectsResolverFollowsClasses(t *testing.T) {
	objs := &Objects{Classes: []*resourceapi.DeviceClass{nvdra.Class("a", nvdra.WholeGPUs, "nvidia.com/gpu")}}
	if c := objs.DeviceClassResolver().GetDeviceClass("nvidia.com/gpu"); c == nil || c.Name != "a" {
		t.Fatalf("resolved %v, want a", c)
	}
	objs.Classes = slices.Concat(objs.Classes, []*resourceapi.DeviceClass{nvdra.Class("b", nvdra.WholeGPUs, "example.com/gpu")})
	if c := objs.DeviceClassResolver().GetDeviceClass(v1.ResourceName("example.com/gpu")); c == nil || c.Name != "b" {
		t.Errorf("after adding b: resolved %v, want b", c)
	}
}
