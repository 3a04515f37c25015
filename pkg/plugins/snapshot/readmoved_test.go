package snapshot

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/devicefit/devicefit/pkg/devices"
)

// TestReadMovedFollowsTheNodeInfos: a cycle that reads only the rows whose
// node info moved (readMoved) leaves the Table as a Table that never saw
// the cluster before would read it, after each kind of move, and takes
// that path wherever it may: not in a pod-group cycle, nor in the cycle
// after one (a pod it assumed and forgot leaves the generation as it
// was), nor when the number of nodes changed.
func TestReadMovedFollowsTheNodeInfos(t *testing.T) {
	logger := klog.Background()
	infos := make([]*framework.NodeInfo, 6)
	nodes := make([]fwk.NodeInfo, len(infos))
	for j := range infos {
		infos[j] = framework.NewNodeInfo()
		infos[j].SetNode(gpuNode(fmt.Sprint("n", j)))
		nodes[j] = infos[j]
	}
	normal := func() fwk.CycleState { return framework.NewCycleState() }
	group := func() fwk.CycleState {
		cs := framework.NewCycleState()
		cs.SetPodGroupSchedulingCycle(framework.NewCycleState())
		return cs
	}
	// assume and forget add and remove a pod and restore the generation,
	// as the snapshot's AssumePod and ForgetPod do.
	assumed := gpuPod("assumed", "4")
	assume := func(j int) {
		g := infos[j].Generation
		infos[j].AddPod(assumed)
		infos[j].Generation = g
	}
	forget := func(j int) {
		g := infos[j].Generation
		if err := infos[j].RemovePod(logger, assumed); err != nil {
			t.Fatal(err)
		}
		infos[j].Generation = g
	}
	bound := gpuPod("bound", "2")
	steps := []struct {
		name   string
		change func()
		cs     func() fwk.CycleState
		quick  bool
	}{
		{name: "first refresh", cs: normal},
		{name: "nothing moved", cs: normal, quick: true},
		{name: "a pod bound", change: func() { infos[1].AddPod(bound) }, cs: normal, quick: true},
		{name: "a pod removed", change: func() {
			if err := infos[1].RemovePod(logger, bound); err != nil {
				t.Fatal(err)
			}
		}, cs: normal, quick: true},
		{name: "another pod bound", change: func() { infos[5].AddPod(gpuPod("one", "2")) }, cs: normal, quick: true},
		{name: "one pod removed and another bound: as many pods, another last", change: func() {
			if err := infos[5].RemovePod(logger, gpuPod("one", "2")); err != nil {
				t.Fatal(err)
			}
			infos[5].AddPod(gpuPod("two", "4"))
		}, cs: normal, quick: true},
		{name: "assumed in the snapshot, generation restored", change: func() { assume(2) }, cs: normal, quick: true},
		{name: "a node object replaced", change: func() {
			n := infos[0].Node().DeepCopy()
			n.Labels = map[string]string{"nvidia.com/gpu.product": "NVIDIA-L4"}
			infos[0].SetNode(n)
		}, cs: normal, quick: true},
		{name: "a node info replaced in its position", change: func() {
			infos[3] = framework.NewNodeInfo(gpuPod("other", "8"))
			infos[3].SetNode(gpuNode("n3"))
			nodes[3] = infos[3]
		}, cs: normal, quick: true},
		{name: "a pod-group cycle assumes a pod", change: func() { assume(4) }, cs: group},
		{name: "and forgets it: the next cycle reads every row", change: func() { forget(4) }, cs: normal},
		{name: "then the rows that moved again", change: func() { forget(2) }, cs: normal, quick: true},
		{name: "a node added", change: func() {
			ni := framework.NewNodeInfo()
			ni.SetNode(gpuNode("n6"))
			infos, nodes = append(infos, ni), append(nodes, ni)
		}, cs: normal},
		{name: "the list reordered", change: func() { slices.Reverse(infos); slices.Reverse(nodes) }, cs: normal, quick: true},
	}
	table := NewTable(newSet(t))
	for _, step := range steps {
		if step.change != nil {
			step.change()
		}
		c := table.Refresh(step.cs(), nodes)
		if table.quick != step.quick {
			t.Errorf("%s: read only the rows that moved = %v, want %v", step.name, table.quick, step.quick)
		}
		fresh := NewTable(newSet(t)).Refresh(nil, nodes)
		if diff := cmp.Diff(rowsOf(fresh), rowsOf(c)); diff != "" {
			t.Errorf("%s: rows (-fresh +kept):\n%s", step.name, diff)
		}
		if got, want := freeOf(c), freeOf(fresh); !maps.Equal(got, want) {
			t.Errorf("%s: free by kind %v, want %v", step.name, got, want)
		}
	}
}

// rowView is what a row says of its node, comparable across Tables.
type rowView struct {
	Node                      string
	Used, Free                []int64
	MilliCPU, Memory, Storage int64
	Pods                      int64
	MinPriority               int32
	Images                    bool
}

func rowsOf(c *Cycle) []rowView {
	out := make([]rowView, len(c.Rows))
	for j := range c.Rows {
		r := &c.Rows[j]
		out[j] = rowView{Used: r.Used, Free: r.Free, MilliCPU: r.MilliCPU, Memory: r.Memory, Storage: r.Storage,
			Pods: r.Pods, MinPriority: r.MinPriority, Images: r.Images}
		if n := r.Info.Node(); n != nil {
			out[j].Node = n.Name
		}
	}
	return out
}

// freeOf is the Cycle's FreeByKind by kind value.
func freeOf(c *Cycle) map[devices.DeviceKind]int64 {
	out := map[devices.DeviceKind]int64{}
	for k, n := range c.FreeByKind() {
		if n != 0 {
			out[c.Kinds[k]] = n
		}
	}
	return out
}
