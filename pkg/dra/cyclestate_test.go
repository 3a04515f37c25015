package dra

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	"k8s.io/utils/ptr"

	"github.com/devicefit/devicefit/internal/nvdra"
	"github.com/devicefit/devicefit/pkg/devices"
)

// TestPodRequestsFor: the pod's DRA requests are read once per cycle for
// the same view, pod object and demand. The claim is deleted after the
// first read: a second read that looks it up again fails.
func TestPodRequestsFor(t *testing.T) {
	claimPod := func() *v1.Pod {
		p := st.MakePod().Name("p").Namespace("ns").Obj()
		p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpus", ResourceClaimName: ptr.To("two")}}
		return p
	}
	gpus := devices.Demand{{Name: "nvidia.com/gpu", Count: 1}}
	tests := []struct {
		name string
		// otherPod, otherDemand, otherView: the second read's differs from
		// the first's; noState: no cycle state.
		otherPod, otherDemand, otherView, noState bool
		wantSame                                  bool
	}{
		{name: "the same view, pod and demand: read once", wantSame: true},
		{name: "another pod object: read again", otherPod: true},
		{name: "another demand: read again", otherDemand: true},
		{name: "another view: read again", otherView: true},
		{name: "no cycle state: read every time", noState: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &Objects{
				Slices:  []*resourceapi.ResourceSlice{nvdra.NodeSlice("n", nvdra.GPUs(0, 4, "NVIDIA L4", "Ada Lovelace", "8.9.0", "24Gi")...)},
				Classes: []*resourceapi.DeviceClass{nvdra.Class("gpu.nvidia.com", nvdra.WholeGPUs, "nvidia.com/gpu")},
				Claims:  []*resourceapi.ResourceClaim{nvdra.Claim("ns", "two", "gpu.nvidia.com", 2)},
			}
			tr := NewTracker()
			view := func() *View {
				v, err := tr.View(context.Background(), m)
				if err != nil || v == nil {
					t.Fatalf("View: %v, %v", v, err)
				}
				return v
			}
			var cs fwk.CycleState
			if !tt.noState {
				cs = framework.NewCycleState()
			}
			v, pod := view(), claimPod()
			first, err := PodRequestsFor(cs, v, pod, gpus)
			if err != nil || len(first) != 2 || !first[0].Extended || first[1].Count != 2 {
				t.Fatalf("first read: %+v, %v; want the extended GPU and the claim's 2", first, err)
			}
			m.Claims = nil
			demand := gpus
			if tt.otherPod {
				pod = claimPod()
			}
			if tt.otherDemand {
				demand = devices.Demand{{Name: "nvidia.com/gpu", Count: 2}}
			}
			if tt.otherView {
				v = view()
			}
			second, err := PodRequestsFor(cs, v, pod, demand)
			if same := err == nil && len(second) == len(first) && &second[0] == &first[0]; same != tt.wantSame {
				t.Errorf("second read: %+v, %v; the first's: %v, want %v", second, err, same, tt.wantSame)
			}
		})
	}
}
