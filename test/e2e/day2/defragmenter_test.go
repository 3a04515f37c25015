package day2

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/devicefit/devicefit/internal/e2eutil"
	"github.com/devicefit/devicefit/pkg/defrag"
)

// suiteLabel keeps TestDefragmenter's pods on its own nodes: TestDefragApply
// leaves free GPUs on a, b and c.
const suiteLabel = "e2e.devicefit.io/suite"

// TestDefragmenter runs bin/devicefit-defragmenter as the defragmenter
// component deploys it (its ConfigMap's configuration, its ServiceAccount's
// identity, leader election) with a budget of two moves per hour, one at a
// time. Three 8-GPU nodes: d1 holds the two 1-GPU pods of an opted-in
// ReplicaSet; d2 one 1-GPU pod of an opted-in ReplicaSet whose
// PodDisruptionBudget allows no disruption (moving it alone would make room:
// the PDB forbids the one-move plan); d3 an opted-in bare 4-GPU pod, which
// no controller would recreate; d4 the 1-GPU pod of a ReplicaSet that did
// not opt in (another one-move plan). A pending 8-GPU pod gets the two
// moves of d1 by itself, and binds there; the guarded, bare and unlisted
// pods stay, and the Events and metrics report the moves.
//
// Without a kubelet the pods stay in phase Pending, and the Eviction API
// ignores PodDisruptionBudgets for Pending pods: the guarded pod stays
// because the planner respects its budget, not because the API server
// refused.
func TestDefragmenter(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cs := env.CP.Client
	ns := "defragmenter"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	optIn := map[string]string{"devicefit.io/defrag": "allow"}
	onSuite := map[string]string{suiteLabel: ns}
	register := func(name string) { registerGPUNode(t, ctx, name, a100, onSuite) }
	cordon := func(name string, on bool) { cordonNode(t, ctx, name, on) }
	withSelector := func(p *v1.Pod) { p.Spec.NodeSelector = onSuite }
	register("d1")
	replicaSetOf(t, ctx, ns, "movable", 2, 1, optIn, withSelector)
	waitBound(t, ctx, ns, "app=movable", 2)
	cordon("d1", true)
	register("d2")
	replicaSetOf(t, ctx, ns, "guarded", 1, 1, optIn, withSelector)
	blockingPDB(t, ctx, ns, "guarded")
	waitBound(t, ctx, ns, "app=guarded", 1)
	cordon("d2", true)
	register("d3")
	bare := e2eutil.DevicePod(ns, "bare", e2eutil.ResourceGPU, 4)
	bare.Labels = map[string]string{"app": "bare", "devicefit.io/defrag": "allow"}
	withSelector(bare)
	if err := e2eutil.CreatePods(ctx, cs, []*v1.Pod{bare}); err != nil {
		t.Fatal(err)
	}
	waitBound(t, ctx, ns, "app=bare", 1)
	cordon("d3", true)
	register("d4")
	replicaSetOf(t, ctx, ns, "unlisted", 1, 1, nil, withSelector)
	waitBound(t, ctx, ns, "app=unlisted", 1)
	for _, n := range []string{"d1", "d2", "d3"} {
		cordon(n, false)
	}
	poll(t, ctx, "the PodDisruptionBudget's status", func() (bool, error) {
		p, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "guarded", metav1.GetOptions{})
		return err == nil && p.Status.ObservedGeneration == p.Generation && p.Status.ExpectedPods == 1 && p.Status.DisruptionsAllowed == 0, err
	})
	before := placements(t, ctx, ns)

	defragmenter := startDefragmenter(t, ctx, "devicefit-defragmenter", func(cfg map[string]interface{}) {
		cfg["pending"] = map[string]interface{}{"after": "1s", "maxMoves": 2}
	})
	big := e2eutil.DevicePod(ns, "big", e2eutil.ResourceGPU, 8)
	withSelector(big)
	if err := e2eutil.CreatePods(ctx, cs, []*v1.Pod{big}); err != nil {
		t.Fatal(err)
	}
	var node string
	poll(t, ctx, "the 8-GPU pod to be bound after the defragmenter's moves", func() (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "big", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		node = p.Spec.NodeName
		return node != "", nil
	})
	if node != "d1" {
		t.Errorf("the 8-GPU pod is on %s, want d1", node)
	}
	after := placements(t, ctx, ns)
	for _, app := range []string{"bare", "guarded", "unlisted"} {
		if strings.Join(before[app], ",") != strings.Join(after[app], ",") {
			t.Errorf("%s moved: %v before, %v after", app, before[app], after[app])
		}
	}
	for _, n := range after["movable"] {
		if strings.HasPrefix(n, "d1 ") {
			t.Errorf("a movable pod is still on d1: %v", after["movable"])
		}
	}
	// Each eviction is an Event on the moved pod, the plan one on big.
	reasons := map[string]int{}
	poll(t, ctx, "the defragmenter's Events", func() (bool, error) {
		list, err := cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		reasons = map[string]int{}
		for _, e := range list.Items {
			if e.ReportingController == "devicefit-defragmenter" {
				reasons[e.Reason+" "+e.Regarding.Name[:min(len(e.Regarding.Name), len("movable"))]]++
			}
		}
		return reasons[defrag.ReasonEvicted+" movable"] == 2 && reasons[defrag.ReasonMoving+" big"] == 1, nil
	})
	// The budget of two per hour is spent: both moves counted, none left;
	// the plan counts as applied once the defragmenter has seen big bound.
	defragmenter.WaitMetrics(t, ctx,
		`devicefit_defragmenter_moves_total{dry_run="false",trigger="pending"} 2`,
		`devicefit_defragmenter_plans_total{outcome="applied",trigger="pending"} 1`,
		`devicefit_defragmenter_budget_remaining_moves 0`)
}

// startDefragmenter runs bin/devicefit-defragmenter as the component
// deploys it (e2eutil.RunDefragmenter), sped up for a test (a pass a
// second, no grace period: no kubelet ends a graceful deletion, a budget of
// two moves per hour) and changed by edit.
func startDefragmenter(t *testing.T, ctx context.Context, name string, edit func(map[string]interface{})) *e2eutil.Defragmenter {
	t.Helper()
	return env.RunDefragmenter(t, ctx, name, sched.Config.Path, func(cfg map[string]interface{}) {
		cfg["interval"] = "1s"
		cfg["budget"] = map[string]interface{}{"movesPerHour": 2, "concurrentMoves": 1}
		cfg["evictionGracePeriodSeconds"] = 0
		cfg["moveTimeout"] = "60s"
		edit(cfg)
	})
}

// TestDefragmenterFreeNodes: the free-nodes trigger, first in a dry run,
// then for real. Two H100 nodes f1 and f2 each hold the 1-GPU pod of an
// opted-in ReplicaSet; freeNodes asks one H100 node with no GPU allocated
// (the other tests' nodes are A100s). The dry run reports the move (an
// Event on f1, the metric) and moves nothing; it stops, releasing the
// lease, and a second defragmenter, not in a dry run, takes the lease and
// moves f1's pod to f2.
func TestDefragmenterFreeNodes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cs := env.CP.Client
	ns := "free-nodes"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	register := func(name string) { registerGPUNode(t, ctx, name, h100, map[string]string{suiteLabel: ns}) }
	optIn := map[string]string{"devicefit.io/defrag": "allow"}
	withSelector := func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{suiteLabel: ns} }
	register("f1")
	replicaSetOf(t, ctx, ns, "one", 1, 1, optIn, withSelector)
	waitBound(t, ctx, ns, "app=one", 1)
	cordonNode(t, ctx, "f1", true)
	register("f2")
	replicaSetOf(t, ctx, ns, "two", 1, 1, optIn, withSelector)
	waitBound(t, ctx, ns, "app=two", 1)
	cordonNode(t, ctx, "f1", false)
	before := placements(t, ctx, ns)
	freeNodes := func(dryRun bool) func(map[string]interface{}) {
		return func(cfg map[string]interface{}) {
			cfg["dryRun"] = dryRun
			cfg["pending"] = map[string]interface{}{"enabled": false}
			cfg["freeNodes"] = map[string]interface{}{"count": 1, "resource": "nvidia.com/gpu", "product": "NVIDIA-H100*"}
		}
	}

	dry := startDefragmenter(t, ctx, "defragmenter-dry-run", freeNodes(true))
	// Events about a node go to the default namespace.
	poll(t, ctx, "the dry run's Event on f1", func() (bool, error) {
		list, err := cs.EventsV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if e.ReportingController == "devicefit-defragmenter" && e.Reason == defrag.ReasonPlanned && e.Regarding.Kind == "Node" && e.Regarding.Name == "f1" {
				return true, nil
			}
		}
		return false, nil
	})
	dry.WaitMetrics(t, ctx, `devicefit_defragmenter_moves_total{dry_run="true",trigger="free_nodes"} 1`,
		`devicefit_defragmenter_plans_total{outcome="dry_run",trigger="free_nodes"}`)
	if got := placements(t, ctx, ns); !equal(got, before) {
		t.Fatalf("the dry run moved pods: %v, was %v", got, before)
	}
	dry.Process.Stop(10 * time.Second)

	live := startDefragmenter(t, ctx, "defragmenter-free-nodes", freeNodes(false))
	poll(t, ctx, "f1 left with no GPU pod", func() (bool, error) {
		got := placements(t, ctx, ns)
		onF1 := 0
		for _, pods := range got {
			for _, p := range pods {
				if strings.HasPrefix(p, "f1 ") {
					onF1++
				}
			}
		}
		return onF1 == 0 && len(got["one"]) == 1 && strings.HasPrefix(got["one"][0], "f2 "), nil
	})
	live.WaitMetrics(t, ctx, `devicefit_defragmenter_moves_total{dry_run="false",trigger="free_nodes"} 1`,
		`devicefit_defragmenter_plans_total{outcome="applied",trigger="free_nodes"} 1`)
	// The reserve taint goes once the moves are done.
	poll(t, ctx, "f1's reserve taint removed", func() (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, "f1", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, taint := range n.Spec.Taints {
			if taint.Key == defrag.ReserveKey {
				return false, nil
			}
		}
		return true, nil
	})
}
