package devicepack

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/devicefit/devicefit/pkg/devices"
)

// TestPodDomainsRefresh: the kept domains, updated node by node, equal the
// domains built afresh, whether a node's pods change with its generation
// (the cache) or without (the snapshot's AssumePod), and a new node object
// or new group shapes rebuild them.
func TestPodDomainsRefresh(t *testing.T) {
	const h100, mem = "NVIDIA-H100-80GB-HBM3", "81559"
	nodes := []fwk.NodeInfo{
		cliqueNode("a0", "a", h100, mem, 8), cliqueNode("a1", "a", h100, mem, 0),
		cliqueNode("b0", "b", h100, mem, 0), cliqueNode("b1", "b", h100, mem, 0),
	}
	pl := newPlugin(t, defaultArgs(t))
	shapes := []devices.GroupShape{{Resource: gpu, Pods: 2, PerPod: 8, Weight: 1}}
	var c podDomains
	check := func(step string) {
		t.Helper()
		got := c.refresh(pl, cliqueKey, shapes, nodes)
		want := pl.buildDomains(cliqueKey, shapes, nodes, false)
		if diff := cmp.Diff(want.domains, got.domains); diff != "" {
			t.Errorf("%s: domains (-fresh,+kept):\n%s", step, diff)
		}
		if diff := cmp.Diff(want.shapes, got.shapes); diff != "" {
			t.Errorf("%s: shapes (-fresh,+kept):\n%s", step, diff)
		}
	}
	pod := func(name, gpus string) *v1.Pod {
		return st.MakePod().Name(name).UID(name).Res(map[v1.ResourceName]string{gpu: gpus}).Obj()
	}
	check("first")
	// The cache binds a pod: the generation moves.
	nodes[2].(*framework.NodeInfo).AddPod(pod("p1", "2"))
	check("pod added")
	// The snapshot assumes one: the generation stays.
	b1 := nodes[3].(*framework.NodeInfo)
	gen := b1.Generation
	b1.AddPod(pod("p2", "8"))
	b1.Generation = gen
	check("pod assumed")
	// A new node object (labels may have changed): built again.
	n := nodes[1].Node().DeepCopy()
	n.Labels[cliqueKey] = "b"
	nodes[1].(*framework.NodeInfo).SetNode(n)
	check("node relabelled")
	// New shapes of the same resource: taken as they come.
	shapes = append(shapes, devices.GroupShape{Resource: gpu, Pods: 1, PerPod: 4, Weight: 1})
	check("new shapes")
	// Shapes of another resource: built again.
	shapes = append(shapes, devices.GroupShape{Resource: "example.com/fpga", Pods: 2, PerPod: 1, Weight: 1})
	check("new resource")
}
