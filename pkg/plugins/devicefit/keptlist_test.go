package devicefit

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
)

// TestListKeptBetweenCycles: what PreFilter keeps between cycles (the
// node table's rows, with the lowest priority of each node's pods, and the
// kept candidate lists) never makes its list differ from that of a plugin
// that reads every node afresh, whatever happened to the pods in between,
// including the snapshot's AssumePod/ForgetPod, which change a node's pods
// but keep its generation. The pod asks for 4 GPUs at priority 10; the
// nodes have 4, so a node with a pod is in the list only when a pod there
// has a lower priority. Each step runs on the fleet the previous ones
// left.
func TestListKeptBetweenCycles(t *testing.T) {
	fleet := make([]fwk.NodeInfo, 12)
	for i := range fleet {
		fleet[i] = nodeInfo(gpuNode(fmt.Sprint("n", i), "NVIDIA-L4", "4", nil))
	}
	// CPU-only nodes, never listed, so that every step makes a list.
	for i := range 4 {
		fleet = append(fleet, nodeInfo(st.MakeNode().Name(fmt.Sprint("cpu", i)).Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "64"}).Obj()))
	}
	pod := st.MakePod().Name("p").Priority(10).Res(map[v1.ResourceName]string{gpu: "4"}).Obj()
	// bind puts a pod of n GPUs and priority prio on node j, as the cache
	// does (a new node info generation).
	bind := func(j int, name, n string, prio int32) func([]fwk.NodeInfo) {
		return func(nodes []fwk.NodeInfo) {
			ni := nodes[j].(*framework.NodeInfo)
			ni.AddPod(boundPod(name, ni.Node().Name, n, prio))
		}
	}
	// assume does what Snapshot.AssumePod does: the pod joins, the
	// generation stays.
	assume := func(j int, name, n string, prio int32) func([]fwk.NodeInfo) {
		return func(nodes []fwk.NodeInfo) {
			ni := nodes[j].(*framework.NodeInfo)
			gen := ni.Generation
			ni.AddPod(boundPod(name, ni.Node().Name, n, prio))
			ni.Generation = gen
		}
	}
	forget := func(j int, name string) func([]fwk.NodeInfo) {
		return func(nodes []fwk.NodeInfo) {
			ni := nodes[j].(*framework.NodeInfo)
			gen := ni.Generation
			logger, _ := ktesting.NewTestContext(t)
			for _, pi := range ni.Pods {
				if pi.GetPod().Name == name {
					if err := ni.RemovePod(logger, pi.GetPod()); err != nil {
						t.Fatal(err)
					}
					break
				}
			}
			ni.Generation = gen
		}
	}
	steps := []struct {
		name   string
		change func([]fwk.NodeInfo)
	}{
		{name: "empty fleet"},
		{name: "a node filled at the same priority drops out", change: bind(0, "a", "4", 10)},
		{name: "a node filled at a lower priority stays", change: bind(1, "b", "4", 5)},
		{name: "half full at the same priority: too few free", change: bind(2, "c", "2", 10)},
		{name: "assumed pod fills a node, generation kept", change: assume(3, "d", "4", 10)},
		{name: "forgotten again", change: forget(3, "d")},
		{name: "another assumed in its place, lower priority, generation kept", change: assume(3, "e", "4", 5)},
		{name: "forgotten, and one of the same priority assumed: same pod count, same generation",
			change: func(nodes []fwk.NodeInfo) { forget(3, "e")(nodes); assume(3, "f", "4", 10)(nodes) }},
		{name: "the lower-priority pod on n1 leaves", change: forget(1, "b")},
		{name: "the node list reordered", change: func(nodes []fwk.NodeInfo) { slices.Reverse(nodes[:12]) }},
		{name: "a node object replaced, its pods kept", change: func(nodes []fwk.NodeInfo) {
			ni := nodes[0].(*framework.NodeInfo)
			ni.SetNode(gpuNode(ni.Node().Name, "NVIDIA-L4", "8", nil))
		}},
	}
	_, ctx := ktesting.NewTestContext(t)
	kept := newPluginOrDefault(t, nil)
	nodes := slices.Clone(fleet)
	for _, step := range steps {
		if step.change != nil {
			step.change(nodes)
		}
		fresh := fullScanPlugin(t)
		wantState, gotState := framework.NewCycleState(), framework.NewCycleState()
		want, status := fresh.PreFilter(ctx, wantState, pod, nodes)
		if !status.IsSuccess() {
			t.Fatalf("%s: fresh PreFilter: %v", step.name, status)
		}
		got, status := kept.PreFilter(ctx, gotState, pod, nodes)
		if !status.IsSuccess() {
			t.Fatalf("%s: PreFilter: %v", step.name, status)
		}
		if want.AllNodes() {
			t.Fatalf("%s: no list; the fleet must make one", step.name)
		}
		if diff := cmp.Diff(names(want), names(got)); diff != "" {
			t.Errorf("%s: kept list (-fresh +kept):\n%s", step.name, diff)
		}
		sameScan(t, step.name, wantState, gotState)
	}
}

// names lists a PreFilterResult's nodes, "*" for all.
func names(r *fwk.PreFilterResult) []string {
	if r.AllNodes() {
		return []string{"*"}
	}
	return sets.List(r.NodeNames)
}
