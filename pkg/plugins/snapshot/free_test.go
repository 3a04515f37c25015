package snapshot

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// TestRefreshForKeepsThePodsFirstCount: in a pod-group cycle a pod's Cycle
// weighs the free devices its first refresh counted, across the placements
// assumed since; another pod of the group counts its own; outside a
// pod-group cycle the counts follow the pods.
func TestRefreshForKeepsThePodsFirstCount(t *testing.T) {
	table := NewTable(newSet(t))
	ni := framework.NewNodeInfo()
	ni.SetNode(gpuNode("n"))
	nodes := []fwk.NodeInfo{ni}
	group := framework.NewCycleState()
	inGroup := func() fwk.CycleState {
		cs := framework.NewCycleState()
		cs.SetPodGroupSchedulingCycle(group)
		return cs
	}
	free := func(c *Cycle) int64 {
		var n int64
		for _, f := range c.FreeByKind() {
			n += f
		}
		return n
	}
	a, b := gpuPod("a", "2"), gpuPod("b", "2") // their UIDs are their names
	if got := free(table.RefreshFor(inGroup(), a, nodes)); got != 8 {
		t.Fatalf("a's first refresh: %d free, want 8", got)
	}
	ni.AddPod(gpuPod("assumed", "4")) // a placement assumes a pod
	steps := []struct {
		name string
		cs   fwk.CycleState
		pod  *v1.Pod
		want int64
	}{
		{"a again in the group", inGroup(), a, 8},
		{"b's first refresh", inGroup(), b, 4},
		{"outside a pod-group cycle", framework.NewCycleState(), a, 4},
	}
	for _, step := range steps {
		if got := free(table.RefreshFor(step.cs, step.pod, nodes)); got != step.want {
			t.Errorf("%s: %d free, want %d", step.name, got, step.want)
		}
	}
	// The table's own Cycle, which other readers hold, still counts the pods.
	if got := free(table.Refresh(nil, nodes)); got != 4 {
		t.Errorf("the table's count: %d free, want 4", got)
	}
	// Pinned gives a's first count without a refresh; nothing for a pod
	// not refreshed in the group, nor outside a pod-group cycle.
	kinds, counts, ok := table.Pinned(inGroup(), a)
	var sum int64
	for _, n := range counts {
		sum += n
	}
	if !ok || sum != 8 || len(kinds) < len(counts) {
		t.Errorf("Pinned(a) = %d kinds, %v, %v; want a's first count, 8", len(kinds), counts, ok)
	}
	if _, _, ok := table.Pinned(inGroup(), gpuPod("c", "2")); ok {
		t.Error("Pinned for a pod never refreshed in the group")
	}
	if _, _, ok := table.Pinned(framework.NewCycleState(), a); ok {
		t.Error("Pinned outside a pod-group cycle")
	}
}
