package replay

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	"k8s.io/utils/ptr"
)

// gpuJob is a 1-GPU pod bound to node; owner is its controller's kind ("" for
// a bare pod).
func gpuJob(name, node, owner string, labels map[string]string) *v1.Pod {
	p := st.MakePod().Namespace("ns").Name(name).UID(name).Node(node).SchedulerName("devicefit").
		Labels(labels).Res(map[v1.ResourceName]string{v1.ResourceCPU: "1", DeviceResource: "1"}).Obj()
	if owner != "" {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: owner, Name: name + "-owner", UID: "owner-" + p.UID, Controller: ptr.To(true)}}
	}
	return p
}

// defragCluster: three 8-GPU nodes. a holds two movable 1-GPU pods, b one
// movable pod that a PDB protects, c a bare pod: an 8-GPU pod fits none.
func defragCluster() Cluster {
	node := func(name string) *v1.Node {
		return NewNode(&NodeSpec{Name: name, MilliCPU: 64000, MemoryMiB: 512 << 10, GPUs: 8, Model: "NVIDIA-A100-SXM4-80GB"})
	}
	return Cluster{
		Nodes: []*v1.Node{node("a"), node("b"), node("c")},
		Pods: []*v1.Pod{
			gpuJob("m1", "a", "ReplicaSet", nil),
			gpuJob("m2", "a", "Job", nil),
			gpuJob("guarded", "b", "StatefulSet", map[string]string{"app": "db"}),
			gpuJob("bare", "c", "", nil),
		},
	}
}

func guardedPDB(allowed int32) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	}
}

func TestPlanForPod(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pol := policies(t, PolicyDeviceFit)[0]
	big := explainPod("big", "8", nil, nil)
	tests := []struct {
		name      string
		pdbs      []*policyv1.PodDisruptionBudget
		target    *v1.Pod
		mutate    func(*Cluster)
		wantNode  string
		wantMoves []string // pod@from
		wantFits  bool
	}{
		{
			name: "the PDB forbids moving the guarded pod: both pods of a move", pdbs: []*policyv1.PodDisruptionBudget{guardedPDB(0)},
			target: big, wantFits: true, wantNode: "a", wantMoves: []string{"ns/m1@a", "ns/m2@a"},
		},
		{
			name: "the PDB allows one disruption: one move", pdbs: []*policyv1.PodDisruptionBudget{guardedPDB(1)},
			target: big, wantFits: true, wantNode: "b", wantMoves: []string{"ns/guarded@b"},
		},
		{
			name: "a pod of higher priority never moves", pdbs: []*policyv1.PodDisruptionBudget{guardedPDB(0)},
			target: big, mutate: func(c *Cluster) {
				c.Pods[0].Spec.Priority = ptr.To[int32](1000)
			},
			wantFits: false,
		},
		{
			name: "fits now: no move", target: explainPod("small", "4", nil, nil), wantFits: true, wantNode: "a",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := defragCluster()
			if tt.mutate != nil {
				tt.mutate(&c)
			}
			plan, err := PlanForPod(ctx, pol, c, tt.target, MoveRules{PDBs: tt.pdbs})
			if err != nil {
				t.Fatal(err)
			}
			if plan.Fits != tt.wantFits || plan.Fits && plan.Node != tt.wantNode {
				t.Fatalf("plan fits %v on %q (%s), want %v on %q", plan.Fits, plan.Node, plan.Reason, tt.wantFits, tt.wantNode)
			}
			var got []string
			for _, m := range plan.Moves {
				got = append(got, m.Pod+"@"+m.From)
				if m.To == "" || m.To == plan.Node && len(plan.Moves) > 0 && m.To == m.From {
					t.Errorf("move %v: placed again on %q", m, m.To)
				}
			}
			if diff := cmp.Diff(tt.wantMoves, got); diff != "" {
				t.Errorf("moves (-want +got):\n%s", diff)
			}
			for _, m := range plan.Moves {
				if m.Pod == "ns/bare" {
					t.Errorf("the bare pod was moved")
				}
			}
		})
	}
}

// TestPlanForPodInvalid: a pod no node could ever take gets no plan.
func TestPlanForPodInvalid(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	plan, err := PlanForPod(ctx, policies(t, PolicyDeviceFit)[0], defragCluster(), explainPod("huge", "16", nil, nil), MoveRules{})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Fits || plan.Reason == "" {
		t.Errorf("want no plan with a reason, got %+v", plan)
	}
}

func TestPlanFreeNodes(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pol := policies(t, PolicyDeviceFit)[0]
	withEmpty := func(c *Cluster) {
		c.Nodes = append(c.Nodes, NewNode(&NodeSpec{Name: "d", MilliCPU: 64000, MemoryMiB: 512 << 10, GPUs: 8, Model: "NVIDIA-H100-80GB-HBM3"}))
	}
	tests := []struct {
		name      string
		want      int
		product   string
		mutate    func(*Cluster)
		wantDone  bool
		wantFree  []string
		wantMoves []string
	}{
		{name: "one node: a, its two pods moved", want: 1, wantDone: true, wantFree: []string{"a"}, wantMoves: []string{"ns/m1@a", "ns/m2@a"}},
		{name: "two nodes: b's pod is guarded, c's bare", want: 2, wantDone: false, wantFree: []string{"a"}},
		{name: "a free node counts first", want: 1, mutate: withEmpty, wantDone: true, wantFree: []string{"d"}},
		{name: "then a", want: 2, mutate: withEmpty, wantDone: true, wantFree: []string{"d", "a"}, wantMoves: []string{"ns/m1@a", "ns/m2@a"}},
		{name: "by product: the H100 node", want: 1, product: "NVIDIA-H100-80GB-HBM3", mutate: withEmpty, wantDone: true, wantFree: []string{"d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := defragCluster()
			if tt.mutate != nil {
				tt.mutate(&c)
			}
			plan, err := PlanFreeNodes(ctx, pol, c, tt.want, DeviceResource, tt.product, MoveRules{PDBs: []*policyv1.PodDisruptionBudget{guardedPDB(0)}})
			if err != nil {
				t.Fatal(err)
			}
			if plan.Done != tt.wantDone || !cmp.Equal(plan.Free, tt.wantFree) {
				t.Fatalf("done %v, free %v (%s); want %v, %v", plan.Done, plan.Free, plan.Reason, tt.wantDone, tt.wantFree)
			}
			var got []string
			for _, m := range plan.Moves {
				got = append(got, m.Pod+"@"+m.From)
				if m.To == "" || m.To == m.From {
					t.Errorf("move %v: placed again on %q", m, m.To)
				}
			}
			if diff := cmp.Diff(tt.wantMoves, got); diff != "" {
				t.Errorf("moves (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWholeFreeNodes: a node is whole-free when no pod that is bound and
// not finished holds the resource there; --product narrows the nodes.
func TestWholeFreeNodes(t *testing.T) {
	c := defragCluster()
	c.Nodes = append(c.Nodes, NewNode(&NodeSpec{Name: "d", MilliCPU: 64000, MemoryMiB: 512 << 10, GPUs: 8, Model: "NVIDIA-H100-80GB-HBM3"}),
		NewNode(&NodeSpec{Name: "cpu", MilliCPU: 64000, MemoryMiB: 512 << 10}))
	for _, p := range c.Pods {
		if p.Name == "bare" {
			p.Status.Phase = v1.PodSucceeded
		}
	}
	for _, tc := range []struct {
		product string
		want    []string
	}{
		{"", []string{"c", "d"}},
		{"NVIDIA-H100*", []string{"d"}},
		{"NVIDIA-A100-SXM4-80GB", []string{"c"}},
	} {
		got, err := WholeFreeNodes(c, DeviceResource, tc.product)
		if err != nil {
			t.Fatal(err)
		}
		if !cmp.Equal(got, tc.want) {
			t.Errorf("product %q: %v, want %v", tc.product, got, tc.want)
		}
	}
}
