package dra

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/devicefit/devicefit/internal/nvdra"
	"github.com/devicefit/devicefit/pkg/devices"
)

// choosing is a simulator's DRA manager with an oracle device choice: it
// records what it was asked and answers pick.
type choosing struct {
	*Objects
	pick  int
	asked [][]string
}

func (m *choosing) ChooseDevice(n *devices.DRANode, r devices.CapacityRequest, candidates []*devices.DRADevice) int {
	var names []string
	for _, d := range candidates {
		names = append(names, d.Name)
	}
	m.asked = append(m.asked, names)
	return m.pick
}

// TestViewDeviceChooser: with a manager implementing DeviceChooser, a share
// request's pick is the chooser's among the GPUs with room, in slice order
// (gpu-2, 200 shares left, cannot take 500); a negative answer is first
// fit; whole-GPU requests are not asked. Upstream's manager (Objects)
// implements none: first fit.
func TestViewDeviceChooser(t *testing.T) {
	sl := nvdra.NodeSlice("n", nvdra.SharedGPUs(0, 3, "NVIDIA L4", "Ada Lovelace", "8.9.0", "24Gi")...)
	held := func(name, device, shares string) *resourceapi.ResourceClaim {
		c := nvdra.Allocated("ns", name, "n/"+device)
		r := &c.Status.Allocation.Devices.Results[0]
		r.ShareID = ptr.To(types.UID(name))
		r.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{nvdra.Shares: resource.MustParse(shares), "memory": resource.MustParse("0")}
		return c
	}
	objects := &Objects{
		Slices:  []*resourceapi.ResourceSlice{sl},
		Classes: []*resourceapi.DeviceClass{nvdra.Class("gpu.nvidia.com", nvdra.WholeGPUs, "nvidia.com/gpu")},
		Claims: []*resourceapi.ResourceClaim{held("a", "gpu-0", "500"), held("b", "gpu-2", "800"),
			nvdra.ShareClaim("ns", "p-half", "gpu.nvidia.com", 500)},
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: v1.PodSpec{ResourceClaims: []v1.PodResourceClaim{{Name: "half", ResourceClaimName: ptr.To("p-half")}}}}
	all := func(Request) bool { return true }
	for _, tc := range []struct {
		name    string
		chooser *choosing // nil: upstream's manager
		want    string
	}{
		{"upstream: first fit", nil, "gpu-0"},
		{"the chooser's second candidate", &choosing{pick: 1}, "gpu-1"},
		{"the chooser's first", &choosing{pick: 0}, "gpu-0"},
		{"a negative answer is first fit", &choosing{pick: -1}, "gpu-0"},
		{"out of range is first fit", &choosing{pick: 2}, "gpu-0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v *View
			var err error
			if tc.chooser != nil {
				tc.chooser.Objects = objects
				v, err = NewTracker().View(context.Background(), tc.chooser)
			} else {
				v, err = NewTracker().View(context.Background(), objects)
			}
			if err != nil {
				t.Fatal(err)
			}
			reqs, err := v.PodRequests(pod, nil)
			if err != nil || len(reqs) != 1 {
				t.Fatalf("requests: got %+v, %v", reqs, err)
			}
			picks, ok := v.Picks("n", reqs, all, nil)
			if !ok || len(picks) != 1 || picks[0].Device.Name != tc.want {
				t.Fatalf("the half's pick: got %v (ok %v), want %s", picks, ok, tc.want)
			}
			if tc.chooser != nil {
				if len(tc.chooser.asked) != 1 || len(tc.chooser.asked[0]) != 2 || tc.chooser.asked[0][0] != "gpu-0" || tc.chooser.asked[0][1] != "gpu-1" {
					t.Errorf("the chooser was asked %v, want once with [gpu-0 gpu-1] (gpu-2 has 200 shares left)", tc.chooser.asked)
				}
				// A whole GPU: no capacity request, not asked.
				whole := []Request{{Resource: "nvidia.com/gpu", Class: v.ClassFor("nvidia.com/gpu"), Count: 1, Extended: true}}
				if picks, ok := v.Picks("n", whole, all, nil); !ok || len(picks) != 1 || picks[0].Device.Name != "gpu-1" {
					t.Errorf("a whole GPU: got %v, want gpu-1, the untouched one", picks)
				}
				if len(tc.chooser.asked) != 1 {
					t.Errorf("the chooser was asked of a whole-GPU request: %v", tc.chooser.asked)
				}
			}
			// What the placement leaves follows the pick: gpu-1 untouched
			// or not.
			after, capacity := v.EntriesAfter("n", picks, reqs, nil)
			wantFree := map[string]int64{"gpu-0": 1, "gpu-1": 0}[tc.want]
			if len(after) != 1 || after[0].Free != wantFree || capacity < 1.2-1e-9 || capacity > 1.2+1e-9 {
				t.Errorf("after the half on %s: want %d untouched GPUs and capacity 1.2, got %+v, %v", tc.want, wantFree, after, capacity)
			}
		})
	}
}
