package snapshot

import (
	"fmt"
	"slices"
	"testing"

	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// TestMovedSinceAMark: Moved names exactly the rows read after a mark, and
// refuses (false) whenever the rows since are not known: the zero mark,
// positions that stopped lining up (a node added), or a mark older than
// the log keeps. Each step refreshes the nodes the previous ones left.
func TestMovedSinceAMark(t *testing.T) {
	nodes := make([]fwk.NodeInfo, 3)
	for j := range nodes {
		ni := framework.NewNodeInfo()
		ni.SetNode(gpuNode(fmt.Sprint("n", j)))
		nodes[j] = ni
	}
	table := NewTable(newSet(t))
	first := table.Refresh(nil, nodes).Mark()
	if _, ok := table.Refresh(nil, nodes).Moved(Mark{}); ok {
		t.Error("the zero mark: known, want unknown")
	}
	steps := []struct {
		name   string
		change func() []fwk.NodeInfo
		want   []int // nil: unknown
	}{
		{name: "nothing moved", want: []int{}},
		{name: "a pod bound on n1", change: func() []fwk.NodeInfo {
			nodes[1].(*framework.NodeInfo).AddPod(gpuPod("a", "2"))
			return nodes
		}, want: []int{1}},
		{name: "n2's node info replaced, then n0 gets a pod", change: func() []fwk.NodeInfo {
			ni := framework.NewNodeInfo()
			ni.SetNode(nodes[2].Node())
			nodes[2] = ni
			nodes[0].(*framework.NodeInfo).AddPod(gpuPod("b", "2"))
			return nodes
		}, want: []int{0, 2}},
		{name: "a node added: positions do not line up", change: func() []fwk.NodeInfo {
			ni := framework.NewNodeInfo()
			ni.SetNode(gpuNode("n3"))
			nodes = append(nodes, ni)
			return nodes
		}},
		{name: "more reads than the log keeps", change: func() []fwk.NodeInfo {
			for i := range 70 {
				nodes[i%len(nodes)].(*framework.NodeInfo).AddPod(gpuPod(fmt.Sprint("c", i), "0"))
				table.Refresh(nil, nodes)
			}
			return nodes
		}},
	}
	mark := first
	for _, step := range steps {
		if step.change != nil {
			step.change()
		}
		c := table.Refresh(nil, nodes)
		moved, ok := c.Moved(mark)
		switch {
		case step.want == nil && ok:
			t.Errorf("%s: moved %v, want unknown", step.name, moved)
		case step.want != nil && !ok:
			t.Errorf("%s: unknown, want %v", step.name, step.want)
		case step.want != nil && !slices.Equal(slices.Sorted(slices.Values(moved)), step.want):
			t.Errorf("%s: moved %v, want %v", step.name, moved, step.want)
		}
		mark = c.Mark()
	}
}
