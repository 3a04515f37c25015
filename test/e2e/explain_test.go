package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/devicefit/devicefit/internal/controlplane"
	"github.com/devicefit/devicefit/pkg/replay"
)

// TestExplainAgreesWithScheduler: `kubectl devicefit explain`, running the
// deployed profile over a snapshot of the cluster, reaches the verdict of
// the running scheduler: schedulable for a pod the scheduler bound (a pod
// of the scenario, explained as if pending), and for pods it keeps pending
// (a product that exists nowhere, more GPUs than a node has, a node
// selector that admits only a node of another product) the PodScheduled
// message the scheduler wrote, word for word up to its preemption part.
// The pending pods are deleted at the end: the scenario's metrics must not
// count them (TestPrometheusScrapesScheduler, TestInventoryEqualsGauges).
func TestExplainAgreesWithScheduler(t *testing.T) {
	sched, sc := sharedScenario(t)
	ctx := testContext(t, 3*time.Minute)
	plugin := devicefitPlugin()

	// Bound by the scheduler: explain says it fits (exit 0).
	bound := sc.pods[0]
	out, _, err := plugin.Run(ctx, nil, "explain", bound.Name, "-n", bound.Namespace, "-o", "json")
	if err != nil {
		t.Fatalf("explain of bound pod %s: %v", bound.Name, err)
	}
	var e replay.Explanation
	if err := json.Unmarshal([]byte(out), &e); err != nil {
		t.Fatalf("explain -o json: %v\n%s", err, out)
	}
	if e.Chosen == "" || e.Message != "" {
		t.Errorf("bound pod %s: explain chose %q with message %q, want a node and no message", bound.Name, e.Chosen, e.Message)
	}

	ns := newNamespace(t)
	blocked := devicePod(ns, "blocked-by-selector", resourceGPU, 1, "devicefit.io/products", productH100)
	blocked.Spec.NodeSelector = map[string]string{labelGPUProduct: productA100x40}
	pending := []*v1.Pod{
		devicePod(ns, "wrong-product", resourceGPU, 1, "devicefit.io/products", "NVIDIA-B200"),
		devicePod(ns, "too-big", resourceGPU, 16),
		blocked,
	}
	if err := createPods(ctx, pending); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deletePods(t, pending) })
	for _, p := range pending {
		msg := waitForUnschedulable(t, ctx, sched, p)
		out, _, err := plugin.Run(ctx, nil, "explain", p.Name, "-n", ns, "-o", "json")
		if err == nil || !strings.Contains(err.Error(), "exit status 2") {
			t.Errorf("explain %s: want exit status 2 (unschedulable), got %v", p.Name, err)
		}
		var e replay.Explanation
		if err := json.Unmarshal([]byte(out), &e); err != nil {
			t.Fatalf("explain %s -o json: %v\n%s", p.Name, err, out)
		}
		if e.Message == "" || msg != e.Message && !strings.HasPrefix(msg, e.Message+" ") {
			t.Errorf("pod %s:\n scheduler: %q\n   explain: %q", p.Name, msg, e.Message)
		}
		table, _, _ := plugin.Run(ctx, nil, "explain", p.Name, "-n", ns)
		if !strings.Contains(table, "Verdict:  unschedulable") || !strings.Contains(table, e.Message) {
			t.Errorf("explain %s (table) lacks the verdict or the message:\n%s", p.Name, table)
		}
		t.Logf("kubectl devicefit explain %s:\n%s", p.Name, table)
	}
}

// waitForUnschedulable waits until the scheduler marks the pod
// PodScheduled=False/Unschedulable and returns the condition's message.
func waitForUnschedulable(t *testing.T, ctx context.Context, sched *scheduler, p *v1.Pod) string {
	t.Helper()
	var msg string
	err := controlplane.Poll(ctx, 200*time.Millisecond, 60*time.Second, sched.Process, func(ctx context.Context) (bool, error) {
		got, err := s.cp.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range got.Status.Conditions {
			if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
				msg = c.Message
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s: %v", p.Namespace, p.Name, withLog(sched.Process, err))
	}
	return msg
}

// deletePods deletes the pods at once (no kubelet finishes a graceful
// deletion) and waits until they are gone.
func deletePods(t *testing.T, pods []*v1.Pod) {
	t.Helper()
	ctx := testContext(t, 30*time.Second)
	for _, p := range pods {
		if err := s.cp.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, *metav1.NewDeleteOptions(0)); err != nil {
			t.Errorf("deleting %s/%s: %v", p.Namespace, p.Name, err)
		}
	}
	for _, p := range pods {
		for {
			if _, err := s.cp.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{}); err != nil {
				break
			}
			if ctx.Err() != nil {
				t.Errorf("pod %s/%s not gone", p.Namespace, p.Name)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
