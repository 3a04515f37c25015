package devicefit

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
)

// TestPreFilterAcrossPlacements runs PreFilter as the v1.37.2 pod-group
// cycle does (schedule_one_podgroup.go): for each placement the scheduler
// assumes the group's pods in the snapshot, and forgets them before the
// next placement. Snapshot.AssumePod and ForgetPod change a node info's
// pods and requests but restore its Generation, so nothing keyed on the
// generation alone may survive them: the candidate list (from the node
// table's rows: free devices, lowest pod priority) and the free devices
// per kind (snapshot.Cycle.FreeByKind, which DevicePack weighs) must
// follow the pods.
func TestPreFilterAcrossPlacements(t *testing.T) {
	logger, ctx := ktesting.NewTestContext(t)
	pl := newPlugin(t, defaultArgs(), nil)
	n0, n1 := gpuNode("n0", "NVIDIA-H100-80GB-HBM3", "8", nil), gpuNode("n1", "NVIDIA-H100-80GB-HBM3", "8", nil)
	ni0, ni1 := framework.NewNodeInfo(), framework.NewNodeInfo()
	ni0.SetNode(n0)
	ni1.SetNode(n1)
	nodes := []fwk.NodeInfo{ni0, ni1}
	member := func(name, node string) *framework.PodInfo {
		pi, err := framework.NewPodInfo(st.MakePod().Name(name).UID(name).Namespace("ns").Node(node).
			Res(map[v1.ResourceName]string{v1.ResourceCPU: "1", gpu: "8"}).Obj())
		if err != nil {
			t.Fatal(err)
		}
		return pi
	}
	// assume and forget as Snapshot.AssumePod/ForgetPod do: the pod changes,
	// the generation does not.
	assume := func(ni *framework.NodeInfo, pi *framework.PodInfo) {
		gen := ni.Generation
		ni.AddPodInfo(pi)
		ni.Generation = gen
	}
	forget := func(ni *framework.NodeInfo, pi *framework.PodInfo) {
		gen := ni.Generation
		if err := ni.RemovePod(logger, pi.Pod); err != nil {
			t.Fatal(err)
		}
		ni.Generation = gen
	}
	// prefilter runs PreFilter for one 8-GPU member of the group and
	// returns the nodes it names (nil: all) and the free GPUs it counted.
	prefilter := func() (sets.Set[string], int64) {
		t.Helper()
		state := framework.NewCycleState()
		res, s := pl.PreFilter(ctx, state, gpuPod("8", nil), nodes)
		if !s.IsSuccess() {
			t.Fatalf("PreFilter: %v", s)
		}
		var free int64
		if c := pl.table.Current(state); c != nil {
			for _, f := range c.FreeByKind() {
				free += f
			}
		}
		if res == nil || res.AllNodes() {
			return nil, free
		}
		// A copy, as the framework makes (upstream.KeptResult): the set
		// is the kept list, which the next PreFilter changes.
		return res.NodeNames.Clone(), free
	}
	type step struct {
		names sets.Set[string]
		free  int64
	}
	var got []step
	record := func() {
		names, free := prefilter()
		got = append(got, step{names, free})
	}

	record() // nothing assumed: both nodes, 16 free
	a := member("a", "n0")
	assume(ni0, a) // placement 1 puts a member on n0
	record()       // n1 only, 8 free
	forget(ni0, a) // placement 1 reverted
	record()       // both nodes, 16 free
	b := member("b", "n1")
	assume(ni1, b) // placement 2 puts a member on n1
	record()       // n0 only, 8 free
	forget(ni1, b)
	record()

	want := []step{
		{nil, 16},
		{sets.New("n1"), 8},
		{nil, 16},
		{sets.New("n0"), 8},
		{nil, 16},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(step{})); diff != "" {
		t.Errorf("PreFilter across placements (-want,+got):\n%s", diff)
	}
}

// TestPreFilterReusedInPodGroupCycle: in a pod-group cycle a pod's state
// is computed in its first placement and reused in the others; another pod
// computes its own; no list is named there (Filter judges every node of
// the placement and says why: no per-pod PostFilter runs in a pod-group
// cycle to explain a list); outside a pod-group cycle nothing is kept and
// the list is named.
func TestPreFilterReusedInPodGroupCycle(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pl := newPlugin(t, defaultArgs(), nil)
	nodes := nodeInfos(
		gpuNode("full", "NVIDIA-H100-80GB-HBM3", "8", nil),
		gpuNode("free", "NVIDIA-H100-80GB-HBM3", "8", nil),
	)
	nodes[0].(*framework.NodeInfo).AddPod(st.MakePod().Name("busy").UID("busy").Node("full").
		Res(map[v1.ResourceName]string{gpu: "8"}).Obj())
	group := framework.NewCycleState()
	inGroup := func() *framework.CycleState {
		s := framework.NewCycleState()
		s.SetPodGroupSchedulingCycle(group)
		return s
	}
	member := func(uid string) *v1.Pod {
		p := gpuPod("8", nil)
		p.UID = types.UID(uid)
		return p
	}
	run := func(state *framework.CycleState, pod *v1.Pod) (sets.Set[string], *preFilterState) {
		t.Helper()
		res, s := pl.PreFilter(ctx, state, pod, nodes)
		if !s.IsSuccess() {
			t.Fatalf("PreFilter: %v", s)
		}
		ps, err := getPreFilterState(state)
		if err != nil {
			t.Fatalf("no state written: %v", err)
		}
		if res == nil {
			return nil, ps
		}
		return res.NodeNames, ps
	}
	list, first := run(inGroup(), member("a"))
	if list != nil {
		t.Errorf("first placement: %v, want all nodes", sets.List(list))
	}
	if list, again := run(inGroup(), member("a")); list != nil || again != first {
		t.Errorf("second placement: %v, state reused %v; want all nodes, reused", sets.List(list), again == first)
	}
	if list, other := run(inGroup(), member("b")); list != nil || other == first {
		t.Errorf("another pod: %v, state shared %v; want all nodes, its own state", sets.List(list), other == first)
	}
	if list, alone := run(framework.NewCycleState(), member("a")); !list.Equal(sets.New("free")) || alone == first {
		t.Errorf("outside a pod-group cycle: %v, state reused %v; want [free], a new state", sets.List(list), alone == first)
	}
}
