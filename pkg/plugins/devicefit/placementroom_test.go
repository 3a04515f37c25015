package devicefit

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	"k8s.io/utils/ptr"
)

// TestPlacementRoom runs PreFilter for a pod group's members as the
// v1.37.2 pod-group cycle does, in each of two placements of two 4-GPU
// nodes: clique a, where a bound pod holds 3 GPUs (5 free), and clique b,
// empty (8 free). A placement is rejected at its first member, and for its
// other members, only when its free devices cannot hold the smallest
// demands of as many unscheduled members as minCount still wants.
func TestPlacementRoom(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.GenericWorkload, true)
	_, ctx := ktesting.NewTestContext(t)
	cases := []struct {
		name     string
		minCount int32
		members  []string // GPUs of each unscheduled member
		bound    int      // members already bound (1 GPU each, on a node of neither clique)
		claims   bool     // the first member asks through a ResourceClaim
		wantA    string   // substring of clique a's rejection, "" for none
		wantB    string
	}{
		{name: "4+4 need 8, a has 5", minCount: 2, members: []string{"4", "4"},
			wantA: "the placement's 2 nodes have 5 free nvidia.com/gpu; the pod group still needs at least 8"},
		{name: "minCount 1 needs the smaller member only", minCount: 1, members: []string{"4", "2"}},
		{name: "minCount 2 of 3: the two smallest, 1+4 fit in a", minCount: 2, members: []string{"4", "1", "8"}},
		{name: "a CPU-only member needs no devices", minCount: 2, members: []string{"0", "8"},
			wantA: "have 5 free nvidia.com/gpu; the pod group still needs at least 8"},
		{name: "scheduled members count toward minCount", minCount: 3, members: []string{"4", "4"}, bound: 1,
			wantA: "have 5 free nvidia.com/gpu; the pod group still needs at least 8"},
		{name: "the group needs more than b too", minCount: 3, members: []string{"4", "4", "4"},
			wantA: "still needs at least 12", wantB: "the placement's 2 nodes have 8 free nvidia.com/gpu; the pod group still needs at least 12"},
		{name: "claims: the check stands aside", minCount: 2, members: []string{"4", "4"}, claims: true},
		{name: "minCount beyond the members: GangScheduling's to say", minCount: 3, members: []string{"4", "4"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nodes := []*v1.Node{
				gpuNode("a0", "NVIDIA-L4", "4", nil), gpuNode("a1", "NVIDIA-L4", "4", nil),
				gpuNode("b0", "NVIDIA-L4", "4", nil), gpuNode("b1", "NVIDIA-L4", "4", nil),
				gpuNode("c0", "NVIDIA-L4", "4", nil),
			}
			pods := []*v1.Pod{st.MakePod().Name("other").UID("other").Namespace("ns").Node("a0").
				Res(map[v1.ResourceName]string{gpu: "3"}).Obj()}
			member := func(i int, gpus string) *v1.Pod {
				w := st.MakePod().Name(fmt.Sprint("m", i)).UID(fmt.Sprint("m", i)).Namespace("ns").
					Res(map[v1.ResourceName]string{v1.ResourceCPU: "1", gpu: gpus})
				p := w.Obj()
				p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr.To("g")}
				return p
			}
			var members []*v1.Pod
			for i, g := range tc.members {
				p := member(i, g)
				if tc.claims && i == 0 {
					p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "c", ResourceClaimName: ptr.To("c")}}
				}
				members = append(members, p)
			}
			pods = append(pods, members...)
			for i := range tc.bound {
				p := member(100+i, "1")
				p.Spec.NodeName = "c0"
				pods = append(pods, p)
			}
			pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "ns", UID: types.UID("g")},
				Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
					Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: tc.minCount}}}}
			snap := cache.NewTestSnapshotWithPodGroups(pods, nodes, []*schedulingv1beta1.PodGroup{pg})
			pl := newPlugin(t, defaultArgs(), snapshotHandle{snapshot: snap})
			listed, err := snap.NodeInfos().List()
			if err != nil {
				t.Fatal(err)
			}
			// The test snapshot files the unscheduled members under a node
			// info without a node; the scheduler's holds bound pods only.
			var all []fwk.NodeInfo
			for _, ni := range listed {
				if ni.Node() != nil {
					all = append(all, ni)
				}
			}
			groupCycle := framework.NewCycleState()
			for _, clique := range []string{"a", "b"} {
				var in []fwk.NodeInfo
				for _, ni := range all {
					if strings.HasPrefix(ni.Node().Name, clique) {
						in = append(in, ni)
					}
				}
				if err := snap.AssumePlacement(&fwk.Placement{Name: clique, Nodes: in}); err != nil {
					t.Fatal(err)
				}
				placement := framework.NewCycleState()
				placement.SetPodGroupSchedulingCycle(groupCycle)
				want := map[string]string{"a": tc.wantA, "b": tc.wantB}[clique]
				for _, m := range members {
					cs := framework.NewCycleState()
					cs.SetPodGroupSchedulingCycle(groupCycle)
					cs.SetPlacementCycleState(placement)
					_, status := pl.PreFilter(ctx, cs, m, all)
					rejected := status.Code() == fwk.Unschedulable
					switch {
					case want == "" && rejected:
						t.Errorf("clique %s, %s: rejected (%v), want a try", clique, m.Name, status)
					case want != "" && !rejected:
						t.Errorf("clique %s, %s: %v, want Unschedulable: %q", clique, m.Name, status, want)
					case want != "" && !strings.Contains(status.Message(), want):
						t.Errorf("clique %s, %s: %q, want %q in it", clique, m.Name, status.Message(), want)
					}
				}
				snap.ForgetPlacement()
			}
		})
	}
}

// nominatingHandle is snapshotHandle with pods nominated on some nodes.
type nominatingHandle struct {
	snapshotHandle
	nominated map[string]bool
}

func (h nominatingHandle) NominatedPodsForNode(name string) []fwk.PodInfo {
	if !h.nominated[name] {
		return nil
	}
	pi, _ := framework.NewPodInfo(st.MakePod().Name("nominated").Namespace("ns").Obj())
	return []fwk.PodInfo{pi}
}

// TestPlacementTwins runs a pod group's first member in five placements
// of two 4-GPU nodes each, in order: clique a; b, alike but for names and
// clique value, a twin of a; c, holding a pod; d, labelled another zone;
// e, alike a but with a pod nominated on a node. Only b is rejected, as
// a's twin, and not when a member selects nodes by hostname.
func TestPlacementTwins(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.GenericWorkload, true)
	_, ctx := ktesting.NewTestContext(t)
	const clique = "nvidia.com/gpu.clique"
	cases := []struct {
		name     string
		selector map[string]string
		wantB    string
	}{
		{name: "members that single out no node", wantB: "placement b is the twin of placement a, tried first in this cycle"},
		{name: "a member selecting by hostname", selector: map[string]string{v1.LabelHostname: "a0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var nodes []*v1.Node
			for _, c := range []string{"a", "b", "c", "d", "e"} {
				for i := range 2 {
					name := fmt.Sprint(c, i)
					labels := map[string]string{clique: c, v1.LabelHostname: name}
					if c == "d" {
						labels[v1.LabelTopologyZone] = "z2"
					}
					nodes = append(nodes, gpuNode(name, "NVIDIA-GB200", "4", labels))
				}
			}
			pods := []*v1.Pod{st.MakePod().Name("other").UID("other").Namespace("ns").Node("c0").
				Res(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj()}
			var members []*v1.Pod
			for i := range 2 {
				p := st.MakePod().Name(fmt.Sprint("m", i)).UID(fmt.Sprint("m", i)).Namespace("ns").
					Res(map[v1.ResourceName]string{v1.ResourceCPU: "1", gpu: "4"}).Obj()
				p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr.To("g")}
				p.Spec.NodeSelector = tc.selector
				members = append(members, p)
			}
			pods = append(pods, members...)
			pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "ns", UID: types.UID("g")},
				Spec: schedulingv1beta1.PodGroupSpec{
					SchedulingPolicy:      schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 2}},
					SchedulingConstraints: &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: []schedulingv1beta1.TopologyConstraint{{Key: clique}}},
				}}
			snap := cache.NewTestSnapshotWithPodGroups(pods, nodes, []*schedulingv1beta1.PodGroup{pg})
			pl := newPlugin(t, defaultArgs(), nominatingHandle{snapshotHandle{snapshot: snap}, map[string]bool{"e1": true}})
			listed, err := snap.NodeInfos().List()
			if err != nil {
				t.Fatal(err)
			}
			groupCycle := framework.NewCycleState()
			for _, c := range []string{"a", "b", "c", "d", "e"} {
				var in []fwk.NodeInfo
				for _, ni := range listed {
					if ni.Node() != nil && ni.Node().Labels[clique] == c {
						in = append(in, ni)
					}
				}
				if err := snap.AssumePlacement(&fwk.Placement{Name: c, Nodes: in}); err != nil {
					t.Fatal(err)
				}
				placement := framework.NewCycleState()
				placement.SetPodGroupSchedulingCycle(groupCycle)
				cs := framework.NewCycleState()
				cs.SetPodGroupSchedulingCycle(groupCycle)
				cs.SetPlacementCycleState(placement)
				_, status := pl.PreFilter(ctx, cs, members[0], listed)
				want := ""
				if c == "b" {
					want = tc.wantB
				}
				switch rejected := status.Code() == fwk.Unschedulable; {
				case want == "" && rejected:
					t.Errorf("placement %s: rejected (%v), want a try", c, status)
				case want != "" && (!rejected || !strings.Contains(status.Message(), want)):
					t.Errorf("placement %s: %v, want Unschedulable: %q", c, status, want)
				}
				snap.ForgetPlacement()
			}
		})
	}
}
