package devicepack

import (
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/devicefit/devicefit/pkg/devices"
)

const cliqueKey = "nvidia.com/gpu.clique"

// fakeGroup is a PodGroupInfo of pods with a topology key ("" for none).
type fakeGroup struct {
	name string
	key  string
	pods []*v1.Pod
}

func (g *fakeGroup) GetUnscheduledPods() []*v1.Pod { return g.pods }
func (g *fakeGroup) GetName() string               { return g.name }
func (g *fakeGroup) GetNamespace() string          { return "ns" }
func (g *fakeGroup) GetType() fwk.EntityKeyType    { return fwk.PodGroupKeyType }
func (g *fakeGroup) GetKey() string                { return "podgroup/ns/" + g.name }
func (g *fakeGroup) GetPodGroup() *schedulingv1beta1.PodGroup {
	pg := &schedulingv1beta1.PodGroup{}
	pg.Name, pg.Namespace = g.name, "ns"
	if g.key != "" {
		pg.Spec.SchedulingConstraints = &schedulingv1beta1.PodGroupSchedulingConstraints{
			Topology: []schedulingv1beta1.TopologyConstraint{{Key: g.key}},
		}
	}
	return pg
}
func (g *fakeGroup) GetCompositePodGroup() *schedulingv1alpha3.CompositePodGroup { return nil }
func (g *fakeGroup) GetChildren() []fwk.PodGroupInfo                             { return nil }

// assignment is a ProposedAssignment of pod to node.
type assignment struct {
	pod  *v1.Pod
	node string
}

func (a assignment) GetPod() *v1.Pod               { return a.pod }
func (a assignment) GetPodInfo() fwk.PodInfo       { return nil }
func (a assignment) GetNodeName() string           { return a.node }
func (a assignment) GetCycleState() fwk.CycleState { return nil }

// cliqueNode: an 8-GPU node of product in clique, with used GPUs taken.
func cliqueNode(name, clique, product, memoryMiB string, used int) fwk.NodeInfo {
	ni := gpuNodeInfo(name, product, memoryMiB, "8", fmt.Sprint(used))
	n := ni.Node().DeepCopy()
	n.Labels[cliqueKey] = clique
	ni.SetNode(n)
	return ni
}

// gang is a group of n pods of perPod GPUs.
func gang(name, key string, n int, perPod string) *fakeGroup {
	g := &fakeGroup{name: name, key: key}
	for i := range n {
		g.pods = append(g.pods, gpuPod(fmt.Sprintf("%s-%d", name, i), perPod))
	}
	return g
}

// fill assigns the group's pods, one per node, to the first free nodes
// (used == 0) of clique among nodes.
func fill(g *fakeGroup, clique string, nodes []fwk.NodeInfo) *fwk.PodGroupAssignments {
	p := &fwk.PodGroupAssignments{Placement: &fwk.Placement{Name: clique}}
	i := 0
	for _, ni := range nodes {
		if ni.Node().Labels[cliqueKey] != clique {
			continue
		}
		p.Nodes = append(p.Nodes, ni)
		if i < len(g.pods) && ni.GetRequested().GetScalarResources()[gpu] == 0 {
			p.ProposedAssignments = append(p.ProposedAssignments, assignment{pod: g.pods[i], node: ni.Node().Name})
			i++
		}
	}
	return p
}

// placementScores runs ScorePlacement for each placement (in parallel, as
// the framework does) and NormalizePlacementScore, by placement name.
func placementScores(t *testing.T, pl *DevicePack, g fwk.PodGroupInfo, placements ...*fwk.PodGroupAssignments) map[string]int64 {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	cycle := framework.NewCycleState()
	list := make([]fwk.PlacementScore, len(placements))
	var wg sync.WaitGroup
	errs := make([]error, len(placements))
	for i, p := range placements {
		wg.Go(func() {
			state := framework.NewCycleState()
			state.SetPodGroupSchedulingCycle(cycle)
			score, s := pl.ScorePlacement(ctx, state, g, p)
			errs[i] = s.AsError()
			list[i] = fwk.PlacementScore{Placement: p.Placement, Score: score}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("ScorePlacement: %v", err)
		}
	}
	if s := pl.NormalizePlacementScore(ctx, cycle, g, list); !s.IsSuccess() {
		t.Fatalf("NormalizePlacementScore: %v", s)
	}
	out := map[string]int64{}
	for _, s := range list {
		out[s.Placement.Name] = s.Score
	}
	return out
}

func TestScorePlacement(t *testing.T) {
	const h100, h100Mem, a100, a100Mem = "NVIDIA-H100-80GB-HBM3", "81559", "NVIDIA-A100-SXM4-80GB", "81920"
	tests := []struct {
		name    string
		nodes   []fwk.NodeInfo
		group   *fakeGroup
		cliques []string
		weights weights
		want    map[string]int64
	}{{
		// Clique a: six nodes, two full, four free; b: five free nodes.
		// A 4x8 gang into a: whole 0, stranded 0 (a full after), fit 1000.
		// Into b: b was the only whole clique holding 4x8: whole 1; one node
		// of 8 left, which holds no 4x8: stranded 8/72 (a 32 + b 40 free).
		// Raw: a = 10·1000 = 10000; b = 100·(-1111) + 10·(32·1000/40 = 800) = -103100.
		name: "a gang fills the used clique, not the untouched one",
		nodes: []fwk.NodeInfo{
			cliqueNode("a0", "a", h100, h100Mem, 8), cliqueNode("a1", "a", h100, h100Mem, 8),
			cliqueNode("a2", "a", h100, h100Mem, 0), cliqueNode("a3", "a", h100, h100Mem, 0),
			cliqueNode("a4", "a", h100, h100Mem, 0), cliqueNode("a5", "a", h100, h100Mem, 0),
			cliqueNode("b0", "b", h100, h100Mem, 0), cliqueNode("b1", "b", h100, h100Mem, 0),
			cliqueNode("b2", "b", h100, h100Mem, 0), cliqueNode("b3", "b", h100, h100Mem, 0),
			cliqueNode("b4", "b", h100, h100Mem, 0),
		},
		group:   gang("g", cliqueKey, 4, "8"),
		cliques: []string{"a", "b"},
		weights: weights{fragmentation: 100, bestFit: 10, productValue: 1},
		want:    map[string]int64{"a": 100, "b": 0},
	}, {
		// Fragmentation alone: the same choice.
		name: "fragmentation alone",
		nodes: []fwk.NodeInfo{
			cliqueNode("a0", "a", h100, h100Mem, 8), cliqueNode("a1", "a", h100, h100Mem, 0),
			cliqueNode("a2", "a", h100, h100Mem, 0), cliqueNode("b0", "b", h100, h100Mem, 0),
			cliqueNode("b1", "b", h100, h100Mem, 0), cliqueNode("b2", "b", h100, h100Mem, 0),
		},
		group:   gang("g", cliqueKey, 2, "8"),
		cliques: []string{"a", "b"},
		weights: weights{fragmentation: 1},
		want:    map[string]int64{"a": 100, "b": 0},
	}, {
		// Two untouched cliques of two nodes: breaking either costs the same
		// (whole 1/2, stranded 0) and best fit ties. Without productValues a
		// product is worth its device memory: A100 81920 MiB, H100 81559, so
		// the H100s are the cheaper here: 16·(1000 - 81559·1000/81920) = 80
		// against 0.
		name: "product value breaks the tie",
		nodes: []fwk.NodeInfo{
			cliqueNode("h0", "h", h100, h100Mem, 0), cliqueNode("h1", "h", h100, h100Mem, 0),
			cliqueNode("a0", "a", a100, a100Mem, 0), cliqueNode("a1", "a", a100, a100Mem, 0),
		},
		group:   gang("g", cliqueKey, 2, "8"),
		cliques: []string{"h", "a"},
		weights: weights{fragmentation: 100, bestFit: 10, productValue: 1},
		want:    map[string]int64{"h": 100, "a": 0},
	}, {
		// Best fit: both cliques partly used and both hold what is left
		// after; the fuller one after wins. a: 3 of 4 nodes used after (750),
		// b: 2 of 4 (500). Stranded: 0 in both (whole nodes left).
		name: "best fit among used cliques",
		nodes: []fwk.NodeInfo{
			cliqueNode("a0", "a", h100, h100Mem, 8), cliqueNode("a1", "a", h100, h100Mem, 8),
			cliqueNode("a2", "a", h100, h100Mem, 0), cliqueNode("a3", "a", h100, h100Mem, 0),
			cliqueNode("b0", "b", h100, h100Mem, 8), cliqueNode("b1", "b", h100, h100Mem, 0),
			cliqueNode("b2", "b", h100, h100Mem, 0), cliqueNode("b3", "b", h100, h100Mem, 0),
		},
		group:   gang("g", cliqueKey, 1, "8"),
		cliques: []string{"a", "b"},
		weights: weights{fragmentation: 100, bestFit: 10},
		want:    map[string]int64{"a": 100, "b": 0},
	}, {
		// No topology key: no domain to keep whole; equal scores.
		name: "no topology key",
		nodes: []fwk.NodeInfo{
			cliqueNode("a0", "a", h100, h100Mem, 8), cliqueNode("a1", "a", h100, h100Mem, 0),
			cliqueNode("b0", "b", h100, h100Mem, 0), cliqueNode("b1", "b", h100, h100Mem, 0),
		},
		group:   gang("g", "", 1, "8"),
		cliques: []string{"a", "b"},
		weights: weights{fragmentation: 100, bestFit: 10},
		want:    map[string]int64{"a": 100, "b": 100},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pl := newPlugin(t, defaultArgs(t))
			pl.weights = tc.weights
			pl.listNodes = func() ([]fwk.NodeInfo, error) { return tc.nodes, nil }
			var placements []*fwk.PodGroupAssignments
			for _, c := range tc.cliques {
				placements = append(placements, fill(tc.group, c, tc.nodes))
			}
			got := placementScores(t, pl, tc.group, placements...)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("placement scores (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestScorePlacementMorePodsFirst: a placement that places more of the
// group's pods ranks first, whatever the other terms say.
func TestScorePlacementMorePodsFirst(t *testing.T) {
	const h100, mem = "NVIDIA-H100-80GB-HBM3", "81559"
	// a: two used nodes and two free; b: three free. A group of 3 pods of 8
	// (minCount 2, say) gets 2 pods placed in a (filling it: no loss, fit
	// 1000) and 3 in b (breaking the whole clique).
	nodes := []fwk.NodeInfo{
		cliqueNode("a0", "a", h100, mem, 8), cliqueNode("a1", "a", h100, mem, 8),
		cliqueNode("a2", "a", h100, mem, 0), cliqueNode("a3", "a", h100, mem, 0),
		cliqueNode("b0", "b", h100, mem, 0), cliqueNode("b1", "b", h100, mem, 0), cliqueNode("b2", "b", h100, mem, 0),
	}
	pl := newPlugin(t, defaultArgs(t))
	pl.weights = weights{fragmentation: 100, bestFit: 10, productValue: 1}
	pl.listNodes = func() ([]fwk.NodeInfo, error) { return nodes, nil }
	g := gang("g", cliqueKey, 3, "8")
	got := placementScores(t, pl, g, fill(g, "a", nodes), fill(g, "b", nodes))
	if want := map[string]int64{"a": 0, "b": 100}; !cmp.Equal(want, got) {
		t.Errorf("placement scores (-want,+got):\n%s", cmp.Diff(want, got))
	}
}

// TestScorePlacementRaw pins the arithmetic of the first case above.
func TestScorePlacementRaw(t *testing.T) {
	const h100, mem = "NVIDIA-H100-80GB-HBM3", "81559"
	nodes := []fwk.NodeInfo{
		cliqueNode("a0", "a", h100, mem, 8), cliqueNode("a1", "a", h100, mem, 8),
		cliqueNode("a2", "a", h100, mem, 0), cliqueNode("a3", "a", h100, mem, 0),
		cliqueNode("a4", "a", h100, mem, 0), cliqueNode("a5", "a", h100, mem, 0),
		cliqueNode("b0", "b", h100, mem, 0), cliqueNode("b1", "b", h100, mem, 0),
		cliqueNode("b2", "b", h100, mem, 0), cliqueNode("b3", "b", h100, mem, 0),
		cliqueNode("b4", "b", h100, mem, 0),
	}
	pl := newPlugin(t, defaultArgs(t))
	pl.weights = weights{fragmentation: 100, bestFit: 10}
	pl.listNodes = func() ([]fwk.NodeInfo, error) { return nodes, nil }
	g := gang("g", cliqueKey, 4, "8")
	_, ctx := ktesting.NewTestContext(t)
	cycle := framework.NewCycleState()
	got := map[string]int64{}
	for _, c := range []string{"a", "b"} {
		state := framework.NewCycleState()
		state.SetPodGroupSchedulingCycle(cycle)
		s, status := pl.ScorePlacement(ctx, state, g, fill(g, c, nodes))
		if !status.IsSuccess() {
			t.Fatal(status)
		}
		got[c] = s
	}
	// a: 10·1000; b: 100·-round((1 + 8/72)·1000) + 10·800.
	want := map[string]int64{"a": 4*podsPlaced + 10000, "b": 4*podsPlaced - 111100 + 8000}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("raw placement scores (-want,+got):\n%s", diff)
	}
}

func TestGroupShapesObserveOnce(t *testing.T) {
	g := newGroupShapes(1000)
	s := devices.GroupShape{Resource: gpu, Pods: 4, PerPod: 8}
	g.observe("podgroup/ns/a", cliqueKey, s)
	g.observe("podgroup/ns/a", cliqueKey, s) // a retried group is not counted twice
	got := g.observe("podgroup/ns/b", "", devices.GroupShape{Resource: gpu, Pods: 2, PerPod: 4})
	if len(got) != 2 || got[0].Pods != 2 || got[1].Pods != 4 {
		// b is newer, so heavier (2^(1/1000) > 1).
		t.Fatalf("shapes = %+v, want 2x4 then 4x8", got)
	}
	if got[1].Weight != 1 {
		t.Errorf("weight of a = %v, want 1 (observed once)", got[1].Weight)
	}
	if key, shapes, _ := g.current(); key != cliqueKey || len(shapes) != 2 {
		t.Errorf("current() = %q, %d shapes; want %q, 2", key, len(shapes), cliqueKey)
	}
}

// TestScoreKeepsDomainsWhole: once pod groups with a topology key were
// placed, a single device pod prefers the node whose domain it costs those
// groups least.
func TestScoreKeepsDomainsWhole(t *testing.T) {
	const h100, mem = "NVIDIA-H100-80GB-HBM3", "81559"
	// Clique a: a0 full, a1 free; clique b: b0, b1 free. Groups seen: 2 x 8.
	nodes := []fwk.NodeInfo{
		cliqueNode("a0", "a", h100, mem, 8), cliqueNode("a1", "a", h100, mem, 0),
		cliqueNode("b0", "b", h100, mem, 0), cliqueNode("b1", "b", h100, mem, 0),
	}
	candidates := nodes[1:] // a0 has no room
	tests := []struct {
		name   string
		groups bool
		want   map[string]int64
	}{{
		// a1: a does not hold 2x8 before (8 free: 1 pod) or after; its
		// stranded devices go from 8 to 7: loss -1 → raw +1000·100.
		// b0, b1: b was the only whole clique holding 2x8: 16 devices lost;
		// after, 15 free that hold no 2x8: stranded 0 → 15; loss 31 →
		// raw -31000·100. Node-level FGD (1-GPU jobs only) is 0 everywhere.
		name:   "groups seen: the used clique",
		groups: true,
		want:   map[string]int64{"a1": 100, "b0": 0, "b1": 0},
	}, {
		// No preference: the first name (firstByName).
		name: "no group seen: no preference",
		want: map[string]int64{"a1": 100, "b0": 99, "b1": 99},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := staticArgs(t, gpuClass(1, 1))
			pl := newPlugin(t, args)
			pl.listNodes = func() ([]fwk.NodeInfo, error) { return nodes, nil }
			if tc.groups {
				pl.groups.observe("podgroup/ns/g", cliqueKey, devices.GroupShape{Resource: gpu, Pods: 2, PerPod: 8})
			}
			got := scores(t, pl, gpuPod("single", "1"), candidates...)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("scores (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestDomainLossesBeyondTheBand: where every node costs a domain more than
// FGD's band can tell apart (the band is 0 past a loss of about 4.6
// devices), the smaller loss still wins; the band and the first name must
// not break the whole clique. Clique a (a0, a1) is whole and has the lowest
// names; clique b has b0 full and b1, b2 free. Groups seen: 2 x 8. A 1-GPU
// pod on b1 or b2 costs b its one 2x8 group: loss 15. On a0 or a1 it
// breaks the whole clique a: loss 31.
func TestDomainLossesBeyondTheBand(t *testing.T) {
	const h100, mem = "NVIDIA-H100-80GB-HBM3", "81559"
	nodes := []fwk.NodeInfo{
		cliqueNode("a0", "a", h100, mem, 0), cliqueNode("a1", "a", h100, mem, 0),
		cliqueNode("b0", "b", h100, mem, 8), cliqueNode("b1", "b", h100, mem, 0), cliqueNode("b2", "b", h100, mem, 0),
	}
	pl := newPlugin(t, staticArgs(t, gpuClass(1, 1)))
	pl.listNodes = func() ([]fwk.NodeInfo, error) { return nodes, nil }
	pl.groups.observe("podgroup/ns/g", cliqueKey, devices.GroupShape{Resource: gpu, Pods: 2, PerPod: 8})
	got := scores(t, pl, gpuPod("single", "1"), nodes[0], nodes[1], nodes[3], nodes[4])
	for _, a := range []string{"a0", "a1"} {
		for _, b := range []string{"b1", "b2"} {
			if got[a] >= got[b] {
				t.Errorf("%s (breaks the whole clique) scores %d, %s (costs a 2x8 group) %d: all %v", a, got[a], b, got[b], got)
			}
		}
	}
}
