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
	"k8s.io/utils/ptr"

	"github.com/devicefit/devicefit/pkg/devices"
)

// TestListsKeptBetweenCycles: the candidate list kept from an earlier cycle
// (keptscan.go), brought up to date by position, names exactly what a plugin
// that never saw the earlier cycles names, whatever changed in between:
// nodes filled and freed, node objects replaced, the node list reordered,
// nodes removed and added, other pod shapes and node rules in between.
// The reference walks every node for every pod (scan); the kept plugin
// redoes the rows the node table read since (keptscan.go), and the two
// must agree on the offers and verdict counts too. Each step runs on the
// fleet the previous steps left.
func TestListsKeptBetweenCycles(t *testing.T) {
	products := []string{"NVIDIA-H100-80GB-HBM3", "NVIDIA-L4", "NVIDIA-L40S"}
	fleet := make([]fwk.NodeInfo, 30)
	for i := range fleet {
		fleet[i] = nodeInfo(gpuNode(fmt.Sprint("n", i), products[i%3], "4", nil))
	}
	l4 := gpuPod("2", map[string]string{devices.AnnotationProducts: "NVIDIA-L4"})
	h100 := gpuPod("2", map[string]string{devices.AnnotationProducts: "NVIDIA-H100-80GB-HBM3"})
	// pooled: the L4 shape with node rules of its own (offers count the
	// nodes they admit apart).
	pooled := gpuPod("2", map[string]string{devices.AnnotationProducts: "NVIDIA-L4"})
	pooled.Spec.NodeSelector = map[string]string{"pool": "a"}
	fill := func(at ...int) func([]fwk.NodeInfo) []fwk.NodeInfo {
		return func(nodes []fwk.NodeInfo) []fwk.NodeInfo {
			for _, j := range at {
				n := nodes[j].Node()
				nodes[j] = infoWith(n, boundPod(n.Name+"-full", n.Name, "4", 0))
			}
			return nodes
		}
	}
	_, ctx := ktesting.NewTestContext(t)
	kept := newPluginOrDefault(t, nil)
	steps := []struct {
		name   string
		pod    *v1.Pod
		change func([]fwk.NodeInfo) []fwk.NodeInfo
	}{
		{name: "first cycle builds the list", pod: l4},
		{name: "same fleet", pod: l4},
		{name: "L4 nodes filled drop out", pod: l4, change: fill(1, 4, 7)},
		{name: "another shape between", pod: h100, change: fill(0)},
		{name: "filled nodes freed come back", pod: l4, change: func(nodes []fwk.NodeInfo) []fwk.NodeInfo {
			nodes[4] = nodeInfo(nodes[4].Node())
			return nodes
		}},
		{name: "a node object replaced: relabelled off the list", pod: l4, change: func(nodes []fwk.NodeInfo) []fwk.NodeInfo {
			nodes[10] = nodeInfo(gpuNode("n10", "NVIDIA-L40S", "4", nil))
			return nodes
		}},
		{name: "a node object replaced: relabelled onto the list", pod: l4, change: func(nodes []fwk.NodeInfo) []fwk.NodeInfo {
			nodes[11] = nodeInfo(gpuNode("n11", "NVIDIA-L4", "4", nil))
			return nodes
		}},
		{name: "node rules of its own: one small L4 node in the pool", pod: pooled, change: func(nodes []fwk.NodeInfo) []fwk.NodeInfo {
			nodes[7] = nodeInfo(gpuNode("n7", "NVIDIA-L4", "2", map[string]string{"pool": "a"}))
			return nodes
		}},
		{name: "node rules of its own: an H100 node joins the pool", pod: pooled, change: func(nodes []fwk.NodeInfo) []fwk.NodeInfo {
			nodes[0] = nodeInfo(gpuNode("n0", "NVIDIA-H100-80GB-HBM3", "8", map[string]string{"pool": "a"}))
			return nodes
		}},
		{name: "the list reordered: other nodes at the admitted positions", pod: l4, change: func(nodes []fwk.NodeInfo) []fwk.NodeInfo {
			slices.Reverse(nodes)
			return nodes
		}},
		{name: "the list rotated by one", pod: l4, change: func(nodes []fwk.NodeInfo) []fwk.NodeInfo {
			return append(nodes[1:], nodes[0])
		}},
		{name: "a node removed", pod: l4, change: func(nodes []fwk.NodeInfo) []fwk.NodeInfo {
			return slices.Delete(nodes, 3, 4)
		}},
		{name: "a node in its place that the pod admits as well: same verdicts, another name", pod: l4, change: func(nodes []fwk.NodeInfo) []fwk.NodeInfo {
			for j, ni := range nodes {
				if ni.Node().Name == "n13" {
					nodes[j] = nodeInfo(gpuNode("n31", "NVIDIA-L4", "4", nil))
				}
			}
			return nodes
		}},
		{name: "a node added", pod: l4, change: func(nodes []fwk.NodeInfo) []fwk.NodeInfo {
			return append(nodes, nodeInfo(gpuNode("n30", "NVIDIA-L4", "4", nil)))
		}},
		{name: "back to the other shape", pod: h100},
		{name: "after more shapes than are kept: rebuilt in the slices of another", pod: l4, change: func(nodes []fwk.NodeInfo) []fwk.NodeInfo {
			for i := range maxLists + 8 {
				p := l4.DeepCopy()
				p.Spec.Priority = ptr.To(int32(1000 + i))
				kept.PreFilter(ctx, framework.NewCycleState(), p, nodes)
			}
			nodes[2] = nodeInfo(nodes[2].Node())
			return nodes
		}},
	}
	nodes := slices.Clone(fleet)
	for _, step := range steps {
		if step.change != nil {
			nodes = step.change(nodes)
		}
		fresh := fullScanPlugin(t)
		wantState, gotState := framework.NewCycleState(), framework.NewCycleState()
		want, status := fresh.PreFilter(ctx, wantState, step.pod, nodes)
		if !status.IsSuccess() || want.AllNodes() {
			t.Fatalf("%s: fresh PreFilter: %v, %v (the fleet must make a list)", step.name, status, want)
		}
		got, status := kept.PreFilter(ctx, gotState, step.pod, nodes)
		if !status.IsSuccess() || got.AllNodes() {
			t.Fatalf("%s: PreFilter: %v, %v", step.name, status, got)
		}
		if diff := cmp.Diff(sets.List(want.NodeNames), sets.List(got.NodeNames)); diff != "" {
			t.Errorf("%s: kept list (-fresh +kept):\n%s", step.name, diff)
		}
		sameScan(t, step.name, wantState, gotState)
	}
	if len(kept.scans) != maxLists {
		t.Errorf("kept %d scans, want the bound (%d)", len(kept.scans), maxLists)
	}
}
