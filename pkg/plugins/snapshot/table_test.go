package snapshot

import (
	"fmt"
	"maps"
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

func newSet(t testing.TB) devices.ResourceSet {
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

// freeByKindRecount adds up the free devices per kind of the node infos
// from scratch, by kind value.
func freeByKindRecount(c *Cycle, nodes []fwk.NodeInfo) map[devices.DeviceKind]int64 {
	sums := map[devices.DeviceKind]int64{}
	for j, ni := range nodes {
		e := c.Entries[j]
		if e == nil {
			continue
		}
		requested := ni.GetRequested().GetScalarResources()
		for _, d := range e.Devices {
			if d.Allocatable > 0 && d.Kind >= 0 {
				sums[c.Kinds[d.Kind]] += max(d.Allocatable-requested[d.Resource], 0)
			}
		}
	}
	return sums
}

// TestFreeByKindFollowsTheRows: the sums the Table keeps as rows move equal
// a recount of the node infos after every kind of move: pods bound and
// removed, nodes gone, reordered and back, a node object replaced, and the
// cache's kind table started over.
func TestFreeByKindFollowsTheRows(t *testing.T) {
	product := func(name, p string) *v1.Node {
		n := gpuNode(name)
		n.Labels = map[string]string{devices.LabelGPUProduct: p}
		return n
	}
	node := func(n *v1.Node, pods ...*v1.Pod) *framework.NodeInfo {
		ni := framework.NewNodeInfo(pods...)
		ni.SetNode(n)
		return ni
	}
	a := node(product("a", "A100"), gpuPod("a1", "2"))
	b := node(product("b", "A100"))
	c := node(product("c", "H100"), gpuPod("c1", "8"))
	many := make([]fwk.NodeInfo, devices.MaxKinds+1)
	_ = many
	for i := range many {
		many[i] = node(product(fmt.Sprintf("k%d", i), fmt.Sprintf("P%d", i)), gpuPod(fmt.Sprintf("k%d", i), "1"))
	}
	steps := []struct {
		name  string
		move  func()
		nodes []fwk.NodeInfo
	}{
		{"first", func() {}, []fwk.NodeInfo{a, b, c}},
		{"pod bound", func() { b.AddPod(gpuPod("b1", "3")) }, []fwk.NodeInfo{a, b, c}},
		{"pod removed", func() {
			if err := c.RemovePod(klog.Background(), c.GetPods()[0].GetPod()); err != nil {
				t.Fatal(err)
			}
		}, []fwk.NodeInfo{a, b, c}},
		{"node gone", func() {}, []fwk.NodeInfo{a, c}},
		{"reordered and back", func() {}, []fwk.NodeInfo{c, b, a}},
		{"node object replaced", func() {
			n := product("a", "H100")
			n.Status.Allocatable[gpu] = n.Status.Capacity[gpu]
			a.SetNode(n)
		}, []fwk.NodeInfo{c, b, a}},
		{"kinds past the bound", func() {}, append([]fwk.NodeInfo{a, b, c}, many...)},
		{"kind table started over", func() {}, []fwk.NodeInfo{a, b, c}},
	}
	table := NewTable(newSet(t))
	for _, step := range steps {
		step.move()
		cyc := table.Refresh(nil, step.nodes)
		got := map[devices.DeviceKind]int64{}
		for k, n := range cyc.FreeByKind() {
			if n != 0 {
				got[cyc.Kinds[k]] += n
			}
		}
		want := freeByKindRecount(cyc, step.nodes)
		for k, n := range want {
			if n == 0 {
				delete(want, k)
			}
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s: free by kind %v; a recount says %v", step.name, got, want)
		}
	}
}
