package snapshot

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/devicefit/devicefit/pkg/devices"
)

const gpu = devices.NVIDIAGPU

func gpuNode(name string) *v1.Node {
	return st.MakeNode().Name(name).Capacity(map[v1.ResourceName]string{
		v1.ResourceCPU: "64", v1.ResourceMemory: "512Gi", v1.ResourcePods: "110", gpu: "8"}).Obj()
}

func gpuPod(name string, gpus string) *v1.Pod {
	return st.MakePod().Name(name).UID(name).Node("n").Req(map[v1.ResourceName]string{
		v1.ResourceCPU: "2", v1.ResourceMemory: "8Gi", gpu: gpus}).Obj()
}

func newSet(t *testing.T) devices.ResourceSet {
	t.Helper()
	set, err := devices.NewResourceSet(devices.DefaultResourcePatterns())
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// want is what a row must say of a node holding pods of the given GPUs.
func checkRow(t *testing.T, r *Row, gpusUsed, pods int64) {
	t.Helper()
	if len(r.Used) != 1 || r.Used[0] != gpusUsed || r.Free[0] != 8-gpusUsed {
		t.Errorf("row devices used %v free %v, want %d used, %d free", r.Used, r.Free, gpusUsed, 8-gpusUsed)
	}
	if r.MilliCPU != 64000-2000*pods || r.Pods != 110-pods {
		t.Errorf("row CPU %d, pod room %d; want %d, %d", r.MilliCPU, r.Pods, 64000-2000*pods, 110-pods)
	}
}

// TestRowsFollowTheNodeInfo: a row is read again whenever its node info
// moves, including a pod assumed and forgotten without a new generation
// (pod-group cycles), and a node object replaced.
func TestRowsFollowTheNodeInfo(t *testing.T) {
	table := NewTable(newSet(t))
	ni := framework.NewNodeInfo(gpuPod("a", "2"))
	ni.SetNode(gpuNode("n"))
	nodes := []fwk.NodeInfo{ni}
	checkRow(t, &table.Refresh(nil, nodes).Rows[0], 2, 1)

	ni.AddPod(gpuPod("b", "4"))
	checkRow(t, &table.Refresh(nil, nodes).Rows[0], 6, 2)

	// Assumed and forgotten with the generation restored, as the snapshot
	// does for a placement's pods (NodeState).
	gen := ni.GetGeneration()
	ni.AddPod(gpuPod("c", "1"))
	ni.Generation = gen
	checkRow(t, &table.Refresh(nil, nodes).Rows[0], 7, 3)
	if err := ni.RemovePod(klog.Background(), ni.Pods[len(ni.Pods)-1].GetPod()); err != nil {
		t.Fatal(err)
	}
	ni.Generation = gen
	checkRow(t, &table.Refresh(nil, nodes).Rows[0], 6, 2)

	// A new node object: a new entry, the row follows.
	n := gpuNode("n")
	n.Status.Allocatable[gpu] = n.Status.Capacity[gpu]
	ni.SetNode(n)
	c := table.Refresh(nil, nodes)
	if c.Rows[0].Devices != c.Entries[0] || c.Entries[0] != table.Cache().Lookup(n) {
		t.Error("the row's entry is not the cache's entry of the new node object")
	}
	checkRow(t, &c.Rows[0], 6, 2)
}

// TestRefreshOncePerCycle: the second caller in a cycle gets the first's
// Cycle; a pod-group cycle and another node list refresh again.
func TestRefreshOncePerCycle(t *testing.T) {
	table := NewTable(newSet(t))
	ni := framework.NewNodeInfo()
	ni.SetNode(gpuNode("n"))
	nodes := []fwk.NodeInfo{ni}
	cs := framework.NewCycleState()
	first := table.Refresh(cs, nodes)
	if again := table.Refresh(cs, nodes); again != first {
		t.Error("a second refresh in the same cycle built another Cycle")
	}
	if other := table.Refresh(cs, []fwk.NodeInfo{ni}); other == first {
		t.Error("another node list got the cycle's Cycle")
	}
	if next := table.Refresh(framework.NewCycleState(), nodes); next == first {
		t.Error("the next cycle got the last cycle's Cycle")
	}
}
