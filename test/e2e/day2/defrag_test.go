package day2

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/devicefit/devicefit/internal/controlplane"
	"github.com/devicefit/devicefit/internal/e2eutil"
	"github.com/devicefit/devicefit/internal/gfd"
	"github.com/devicefit/devicefit/pkg/cli"
	"github.com/devicefit/devicefit/pkg/devices"
)

const product = "NVIDIA-A100-SXM4-80GB"

// The GPUs of the package's nodes, eight per node, as GFD labels them.
var (
	a100 = gfd.GPU{Product: product, MemoryMiB: 81920, Compute: devices.Compute{Major: 8}, Count: 8, Family: "ampere", MIGStrategy: devices.MIGStrategySingle}
	h100 = gfd.GPU{Product: "NVIDIA-H100-80GB-HBM3", MemoryMiB: 81559, Compute: devices.Compute{Major: 9}, Count: 8, Family: "hopper", MIGStrategy: devices.MIGStrategySingle}
)

// TestDefragApply: three 8-GPU nodes. a holds the two 1-GPU pods of a
// ReplicaSet; b a 1-GPU pod of another ReplicaSet whose
// PodDisruptionBudget allows no disruption, and a bare 3-GPU pod; c a bare
// 4-GPU pod. A pending 8-GPU pod fits only if both pods on a move (b and c
// hold pods that may not). `defrag --for` plans exactly those two moves;
// `--apply` evicts them through the Eviction API, the ReplicaSet controller
// recreates them, the scheduler places the new pods elsewhere and then
// binds the 8-GPU pod to a. The bare pods and the guarded pod stay.
func TestDefragApply(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cs := env.CP.Client
	ns := "defrag"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Each node joins alone, so that the pods created meanwhile can go
	// nowhere else; then every node is open.
	register := func(name string) { registerGPUNode(t, ctx, name, a100, nil) }
	cordon := func(name string, on bool) { cordonNode(t, ctx, name, on) }
	register("a")
	replicaSet(t, ctx, ns, "movable", 2, nil)
	waitBound(t, ctx, ns, "app=movable", 2)
	cordon("a", true)
	register("b")
	replicaSet(t, ctx, ns, "guarded", 1, map[string]string{"guarded": "true"})
	blockingPDB(t, ctx, ns, "guarded")
	createBare(t, ctx, ns, "bare-b", 3)
	waitBound(t, ctx, ns, "app=guarded", 1)
	waitBound(t, ctx, ns, "app=bare-b", 1)
	cordon("b", true)
	register("c")
	createBare(t, ctx, ns, "bare-c", 4)
	waitBound(t, ctx, ns, "app=bare-c", 1)
	cordon("a", false)
	cordon("b", false)
	// The disruption controller has judged the budget: it covers the
	// guarded pod and allows no disruption (the pod never becomes ready
	// without a kubelet, so minAvailable 1 is not even met).
	poll(t, ctx, "the PodDisruptionBudget's status", func() (bool, error) {
		p, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "guarded", metav1.GetOptions{})
		return err == nil && p.Status.ObservedGeneration == p.Generation && p.Status.ExpectedPods == 1 && p.Status.DisruptionsAllowed == 0, err
	})
	before := placements(t, ctx, ns)
	plugin := env.Kubectl("kubectl-devicefit")

	// --free-nodes 1: only a's pods may all move (b holds the guarded and a
	// bare pod, c a bare pod).
	out, _, err := plugin.Run(ctx, nil, "defrag", "--free-nodes", "1", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var free cli.DefragReport
	if err := json.Unmarshal([]byte(out), &free); err != nil {
		t.Fatalf("defrag --free-nodes -o json: %v\n%s", err, out)
	}
	if p := free.FreeNodes; p == nil || !p.Done || strings.Join(p.Free, ",") != "a" || len(p.Moves) != 2 || free.After.WholeFreeNodes != 1 {
		t.Errorf("--free-nodes 1: %+v, figures after %+v; want a emptied by two moves", p, free.After)
	}
	if _, _, err := plugin.Run(ctx, nil, "defrag", "--free-nodes", "2"); err == nil || !strings.Contains(err.Error(), "exit status 2") {
		t.Errorf("--free-nodes 2: want exit status 2 (no plan), got %v", err)
	}

	big := e2eutil.DevicePod(ns, "big", e2eutil.ResourceGPU, 8)
	if err := e2eutil.CreatePods(ctx, cs, []*v1.Pod{big}); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the 8-GPU pod to be unschedulable", func() (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "big", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodScheduled && c.Reason == v1.PodReasonUnschedulable {
				return true, nil
			}
		}
		return false, nil
	})

	out, _, err = plugin.Run(ctx, nil, "defrag", "--for", "big", "-n", ns, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var report cli.DefragReport
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("defrag -o json: %v\n%s", err, out)
	}
	var moved []string
	for _, m := range report.Plan.Moves {
		moved = append(moved, m.From+":"+strings.Split(strings.TrimPrefix(m.Pod, ns+"/"), "-")[0])
	}
	if !report.Plan.Fits || report.Plan.Node != "a" || strings.Join(moved, ",") != "a:movable,a:movable" {
		t.Fatalf("plan: fits %v on %q, moves %v (%s); want the two movable pods of a", report.Plan.Fits, report.Plan.Node, moved, report.Plan.Reason)
	}
	if report.After.WholeFreeNodes != report.Before.WholeFreeNodes || report.After.Free != report.Before.Free-8 {
		t.Errorf("figures before %+v, after %+v: want 8 devices fewer free, as many whole-free nodes", report.Before, report.After)
	}
	// The dry run moved nothing.
	if got := placements(t, ctx, ns); !equal(got, before) {
		t.Fatalf("the dry run changed placements: %v, was %v", got, before)
	}

	// No kubelet finishes a graceful deletion: the evicted pods go at once.
	table, errOut, err := plugin.Run(ctx, nil, "defrag", "--for", "big", "-n", ns, "--apply", "--grace-period", "0", "--timeout", "60s")
	if err != nil {
		t.Fatalf("defrag --apply: %v\n%s%s", err, table, errOut)
	}
	t.Logf("kubectl devicefit defrag --for big --apply:\n%s%s", table, errOut)
	var node string
	poll(t, ctx, "the 8-GPU pod to be bound", func() (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "big", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		node = p.Spec.NodeName
		return node != "", nil
	})
	if node != "a" {
		t.Errorf("the 8-GPU pod is on %s, want a", node)
	}
	after := placements(t, ctx, ns)
	for _, name := range []string{"bare-b", "bare-c"} {
		if strings.Join(before[name], ",") != strings.Join(after[name], ",") {
			t.Errorf("bare pod %s: %v before, %v after", name, before[name], after[name])
		}
	}
	if strings.Join(before["guarded"], ",") != strings.Join(after["guarded"], ",") {
		t.Errorf("the guarded pod moved: %v before, %v after", before["guarded"], after["guarded"])
	}
	for _, n := range after["movable"] {
		if strings.HasPrefix(n, "a ") {
			t.Errorf("a movable pod is still on a: %v", after["movable"])
		}
	}
}

// registerGPUNode registers an 8-GPU node of gpu with GFD's labels and
// extra.
func registerGPUNode(t *testing.T, ctx context.Context, name string, gpu gfd.GPU, extra map[string]string) {
	t.Helper()
	labels := gpu.Labels()
	for k, v := range extra {
		labels[k] = v
	}
	capacity := v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("64"), v1.ResourceMemory: resource.MustParse("512Gi"),
		v1.ResourcePods: resource.MustParse("110"), e2eutil.ResourceGPU: resource.MustParse("8"),
	}
	if err := controlplane.RegisterNode(ctx, env.CP.Client, name, labels, capacity); err != nil {
		t.Fatal(err)
	}
}

// cordonNode sets the node's spec.unschedulable.
func cordonNode(t *testing.T, ctx context.Context, name string, on bool) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%v}}`, on)
	if _, err := env.CP.Client.CoreV1().Nodes().Patch(ctx, name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// blockingPDB creates the PodDisruptionBudget app=name with minAvailable 1:
// without a kubelet no pod becomes ready, so it allows no disruption.
func blockingPDB(t *testing.T, ctx context.Context, ns, name string) {
	t.Helper()
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
		},
	}
	if _, err := env.CP.Client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// placements maps each app label of ns to its pods' "node name", sorted.
func placements(t *testing.T, ctx context.Context, ns string) map[string][]string {
	t.Helper()
	pods, err := env.CP.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Labels["app"] != "" {
			out[p.Labels["app"]] = append(out[p.Labels["app"]], p.Spec.NodeName+" "+p.Name)
		}
	}
	for _, v := range out {
		sort.Strings(v)
	}
	return out
}

func equal(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if strings.Join(v, ",") != strings.Join(b[k], ",") {
			return false
		}
	}
	return true
}

// replicaSet creates a ReplicaSet of 1-GPU pods for the devicefit scheduler.
func replicaSet(t *testing.T, ctx context.Context, ns, name string, replicas int32, extra map[string]string) {
	t.Helper()
	replicaSetOf(t, ctx, ns, name, replicas, 1, extra, nil)
}

// replicaSetOf creates a ReplicaSet of gpus-GPU pods for the devicefit
// scheduler, labelled app=name and extra, their template changed by edit
// when not nil.
func replicaSetOf(t *testing.T, ctx context.Context, ns, name string, replicas int32, gpus int64, extra map[string]string, edit func(*v1.Pod)) {
	t.Helper()
	tmpl := e2eutil.DevicePod(ns, "", e2eutil.ResourceGPU, gpus)
	if edit != nil {
		edit(tmpl)
	}
	labels := map[string]string{"app": name}
	for k, v := range extra {
		labels[k] = v
	}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: tmpl.Spec},
		},
	}
	if _, err := env.CP.Client.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// createBare creates a pod no controller owns, asking for n GPUs.
func createBare(t *testing.T, ctx context.Context, ns, name string, n int64) {
	t.Helper()
	p := e2eutil.DevicePod(ns, name, e2eutil.ResourceGPU, n)
	p.Labels = map[string]string{"app": name}
	if err := e2eutil.CreatePods(ctx, env.CP.Client, []*v1.Pod{p}); err != nil {
		t.Fatal(err)
	}
}

// waitBound waits until n pods of the selector are bound.
func waitBound(t *testing.T, ctx context.Context, ns, selector string, n int) {
	t.Helper()
	poll(t, ctx, fmt.Sprintf("%d pods of %s bound", n, selector), func() (bool, error) {
		pods, err := env.CP.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err
		}
		bound := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				bound++
			}
		}
		return bound == n, nil
	})
}

func poll(t *testing.T, ctx context.Context, what string, cond func() (bool, error)) {
	t.Helper()
	err := controlplane.Poll(ctx, 250*time.Millisecond, 90*time.Second, sched.Process, func(context.Context) (bool, error) {
		ok, _ := cond()
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, e2eutil.WithLog(sched.Process, err))
	}
}
