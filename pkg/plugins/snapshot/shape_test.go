package snapshot

import (
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
)

// TestShapes: nodes share a shape exactly when everything the score reads
// of them but the name is equal.
func TestShapes(t *testing.T) {
	const mig = "nvidia.com/mig-1g.10gb"
	node := func(name string, gpus, slices string) *v1.Node {
		capacity := map[v1.ResourceName]string{v1.ResourceCPU: "64", v1.ResourceMemory: "512Gi", v1.ResourcePods: "110", gpu: gpus}
		if slices != "" {
			capacity[mig] = slices
		}
		return st.MakeNode().Name(name).Label("nvidia.com/gpu.product", "A100").Capacity(capacity).Obj()
	}
	only := func(name string, r v1.ResourceName, q string) *v1.Pod {
		return st.MakePod().Name(name).UID(name).Node("n").Req(map[v1.ResourceName]string{r: q}).Obj()
	}
	info := func(n *v1.Node, pods ...*v1.Pod) fwk.NodeInfo {
		ni := framework.NewNodeInfo(pods...)
		ni.SetNode(n)
		return ni
	}
	nodes := []fwk.NodeInfo{
		info(node("a", "8", ""), gpuPod("p1", "2")),
		info(node("b", "8", ""), gpuPod("p2", "2")),                                        // as a
		info(node("c", "8", ""), gpuPod("p3", "3")),                                        // more GPUs taken
		info(node("d", "8", ""), gpuPod("p4", "2"), only("p5", v1.ResourceCPU, "2")),       // more CPU taken
		info(node("h", "8", ""), gpuPod("p9", "2"), only("p10", v1.ResourceMemory, "1Gi")), // more memory taken
		info(node("e", "4", ""), gpuPod("p6", "2")),                                        // fewer GPUs
		info(node("f", "8", "4"), gpuPod("p7", "2")),                                       // MIG slices too
		info(node("g", "8", "4"), gpuPod("p8", "2")),                                       // as f
	}
	c := NewTable(newSet(t)).Refresh(nil, nodes)
	same := [][2]int{{0, 1}, {6, 7}}
	for _, p := range same {
		if a, b := c.Rows[p[0]].Shape, c.Rows[p[1]].Shape; a != b || a == NoShape {
			t.Errorf("nodes %d and %d: shapes %d and %d, want one", p[0], p[1], a, b)
		}
	}
	seen := map[int]int{}
	for j, r := range c.Rows {
		if r.Shape == NoShape || r.Shape >= c.Shapes {
			t.Errorf("node %d: shape %d, want one below %d", j, r.Shape, c.Shapes)
		}
		if k, ok := seen[r.Shape]; ok && !(k == 0 && j == 1 || k == 6 && j == 7) {
			t.Errorf("nodes %d and %d share shape %d", k, j, r.Shape)
		}
		seen[r.Shape] = j
	}
	if c.Shapes != 6 {
		t.Errorf("%d shapes, want 6", c.Shapes)
	}
}

// TestShapesStartOver: shapes no row has any more are dropped once they
// pile up past the bound, and the rows get shapes below Cycle.Shapes again.
func TestShapesStartOver(t *testing.T) {
	table := NewTable(newSet(t))
	ni := framework.NewNodeInfo()
	ni.SetNode(gpuNode("n"))
	nodes := []fwk.NodeInfo{ni}
	bound := maxShapesPerRow*len(nodes) + spareShapes
	for i := range bound + 10 {
		// Every cycle the node holds other pods: a new shape.
		ni.AddPod(st.MakePod().Name("p").UID(strconv.Itoa(i)).Node("n").Req(map[v1.ResourceName]string{v1.ResourceCPU: "1m"}).Obj())
		c := table.Refresh(nil, nodes)
		if len(table.shapes) > bound {
			t.Fatalf("cycle %d: %d shapes held, bound %d", i, len(table.shapes), bound)
		}
		if r := c.Rows[0]; r.Shape == NoShape || r.Shape >= c.Shapes {
			t.Fatalf("cycle %d: shape %d, want one below %d", i, r.Shape, c.Shapes)
		}
	}
}
