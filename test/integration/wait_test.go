package integration

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	resourcehelper "k8s.io/component-helpers/resource"
	v1helper "k8s.io/kubernetes/pkg/apis/core/v1/helper"
)

const (
	pollInterval = 100 * time.Millisecond
	// waitTimeout bounds every wait for a scheduling outcome. A healthy
	// scheduler decides in milliseconds; the margin is for slow CI machines.
	waitTimeout = 60 * time.Second
)

// outcome is where the scheduler left a pod.
type outcome struct {
	// node is set when the pod is bound.
	node string
	// unschedulable is set when PodScheduled=False with reason Unschedulable;
	// message is then the condition's message.
	unschedulable bool
	message       string
}

func (o outcome) String() string {
	if o.node != "" {
		return "bound to " + o.node
	}
	if o.unschedulable {
		return fmt.Sprintf("unschedulable: %q", o.message)
	}
	return "pending"
}

// outcomeOf reads the scheduling outcome of pod, ok=false while undecided.
func outcomeOf(pod *v1.Pod) (outcome, bool) {
	if pod.Spec.NodeName != "" {
		return outcome{node: pod.Spec.NodeName}, true
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
			return outcome{unschedulable: true, message: c.Message}, true
		}
	}
	return outcome{}, false
}

// waitForOutcomes waits until each named pod in ns is bound or unschedulable
// and returns the outcomes by pod name. It lists the namespace per poll rather
// than getting each pod, so waiting for hundreds of pods stays cheap.
func (c *cluster) waitForOutcomes(t *testing.T, ns string, names []string) map[string]outcome {
	t.Helper()
	got := map[string]outcome{}
	var pending []string
	err := wait.PollUntilContextTimeout(c.Ctx, pollInterval, waitTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := c.ClientSet.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil // transient; retry until the timeout
		}
		byName := make(map[string]*v1.Pod, len(list.Items))
		for i := range list.Items {
			byName[list.Items[i].Name] = &list.Items[i]
		}
		pending = pending[:0]
		for _, name := range names {
			pod, ok := byName[name]
			if !ok {
				pending = append(pending, name+" (missing)")
				continue
			}
			o, decided := outcomeOf(pod)
			if !decided {
				pending = append(pending, name)
				continue
			}
			got[name] = o
		}
		return len(pending) == 0, nil
	})
	if err != nil {
		t.Fatalf("waiting for the scheduler to decide on %d pod(s) in %s: %v; still undecided: %s",
			len(names), ns, err, strings.Join(pending, ", "))
	}
	return got
}

// waitForBound waits until the pod is bound and returns its node. It fails the
// test when the pod becomes unschedulable instead.
func (c *cluster) waitForBound(t *testing.T, pod *v1.Pod) string {
	t.Helper()
	o := c.waitForOutcomes(t, pod.Namespace, []string{pod.Name})[pod.Name]
	if o.node == "" {
		t.Fatalf("pod %s/%s: want bound, got %v", pod.Namespace, pod.Name, o)
	}
	return o.node
}

// waitForUnschedulable waits until the pod has PodScheduled=False with reason
// Unschedulable and returns the condition message. It fails the test when the
// pod is bound instead.
func (c *cluster) waitForUnschedulable(t *testing.T, pod *v1.Pod) string {
	t.Helper()
	o := c.waitForOutcomes(t, pod.Namespace, []string{pod.Name})[pod.Name]
	if !o.unschedulable {
		t.Fatalf("pod %s/%s: want unschedulable, got %v", pod.Namespace, pod.Name, o)
	}
	return o.message
}

// deletePodsAndWait deletes every pod in ns immediately (there is no kubelet
// to finish a graceful deletion) and waits until they are gone.
func (c *cluster) deletePodsAndWait(t *testing.T, ns string) {
	t.Helper()
	cs := c.ClientSet.CoreV1().Pods(ns)
	err := cs.DeleteCollection(c.Ctx, *metav1.NewDeleteOptions(0), metav1.ListOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("deleting pods in %s: %v", ns, err)
	}
	err = wait.PollUntilContextTimeout(c.Ctx, pollInterval, waitTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := cs.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		return len(list.Items) == 0, nil
	})
	if err != nil {
		t.Fatalf("waiting for the pods in %s to go away: %v", ns, err)
	}
	c.waitForSchedulerToForget(t, ns)
}

// waitForSchedulerToForget waits until the scheduler's cache holds no pod of
// ns, so capacity freed by deleting them is visible to the next pods: without
// this, a pod created right after a deletion may be judged against stale
// usage and be reported unschedulable before the retry that would bind it.
func (c *cluster) waitForSchedulerToForget(t *testing.T, ns string) {
	t.Helper()
	if c.Scheduler == nil || c.SchedulerCtx.Err() != nil {
		return // no scheduler running, nothing to wait for
	}
	err := wait.PollUntilContextTimeout(c.Ctx, 20*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		// Assumed pods are in their node's NodeInfo too.
		dump := c.Scheduler.Cache.Dump()
		for _, ni := range dump.Nodes {
			for _, pi := range ni.GetPods() {
				if pi.GetPod().Namespace == ns {
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("waiting for the scheduler cache to drop the pods of %s: %v", ns, err)
	}
}

// isDeviceResource says which resources the no-overcommit invariant checks:
// every extended resource (all device plugin resources are extended
// resources; cpu, memory, pods and hugepages are not).
func isDeviceResource(name v1.ResourceName) bool {
	return v1helper.IsExtendedResourceName(name)
}

// checkNoOvercommit asserts the invariant the whole scheduler must keep: for
// every node and every device resource, the sum of the requests of the pods
// bound to the node is at most the node's allocatable. It reads the truth from
// the apiserver, not from the scheduler's cache. It returns the number of bound
// pods it saw.
func (c *cluster) checkNoOvercommit(t *testing.T) int {
	t.Helper()
	return c.checkNoOvercommitFiltered(t, func(string, v1.ResourceName) bool { return true })
}

// checkNoOvercommitFiltered is checkNoOvercommit on the (node, resource)
// pairs for which check returns true.
func (c *cluster) checkNoOvercommitFiltered(t *testing.T, check func(node string, name v1.ResourceName) bool) int {
	t.Helper()
	nodes, err := c.ClientSet.CoreV1().Nodes().List(c.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing nodes: %v", err)
	}
	pods, err := c.ClientSet.CoreV1().Pods(metav1.NamespaceAll).List(c.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing pods: %v", err)
	}

	type usage struct {
		requested int64
		pods      []string
	}
	used := map[string]map[v1.ResourceName]*usage{} // node -> resource -> usage
	bound := 0
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.Spec.NodeName == "" || pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
			continue
		}
		bound++
		reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
		for name, q := range reqs {
			if !isDeviceResource(name) || q.IsZero() {
				continue
			}
			byRes := used[pod.Spec.NodeName]
			if byRes == nil {
				byRes = map[v1.ResourceName]*usage{}
				used[pod.Spec.NodeName] = byRes
			}
			u := byRes[name]
			if u == nil {
				u = &usage{}
				byRes[name] = u
			}
			u.requested += q.Value()
			u.pods = append(u.pods, fmt.Sprintf("%s/%s(%s)", pod.Namespace, pod.Name, q.String()))
		}
	}

	allocatable := map[string]v1.ResourceList{}
	for _, n := range nodes.Items {
		allocatable[n.Name] = n.Status.Allocatable
	}
	var violations []string
	for node, byRes := range used {
		alloc, nodeExists := allocatable[node]
		for name, u := range byRes {
			if !check(node, name) {
				continue
			}
			var capacity int64
			if q, ok := alloc[name]; ok {
				capacity = q.Value()
			}
			if !nodeExists || u.requested > capacity {
				sort.Strings(u.pods)
				violations = append(violations, fmt.Sprintf(
					"node %s (exists=%v) resource %s: bound pods request %d > allocatable %d; pods: %s",
					node, nodeExists, name, u.requested, capacity, strings.Join(u.pods, ", ")))
			}
		}
	}
	if len(violations) > 0 {
		slices.Sort(violations)
		t.Errorf("DEVICE OVERCOMMIT: %d violation(s):\n  %s", len(violations), strings.Join(violations, "\n  "))
	}
	return bound
}

var getOpts = metav1.GetOptions{}

// waitForNode waits until the pod is bound, whatever intermediate
// Unschedulable conditions it goes through, and returns the node.
func (c *cluster) waitForNode(t *testing.T, pod *v1.Pod) string {
	t.Helper()
	var last *v1.Pod
	err := wait.PollUntilContextTimeout(c.Ctx, pollInterval, waitTimeout, true, func(ctx context.Context) (bool, error) {
		p, err := c.ClientSet.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, getOpts)
		if err != nil {
			return false, nil
		}
		last = p
		return p.Spec.NodeName != "", nil
	})
	if err != nil {
		o := outcome{}
		if last != nil {
			o, _ = outcomeOf(last)
		}
		t.Fatalf("waiting for pod %s/%s to be bound: %v; last seen: %v", pod.Namespace, pod.Name, err, o)
	}
	return last.Spec.NodeName
}

// deleteNode deletes the node and waits until it is gone, so the next suite's
// scheduler counts only its own nodes.
func (c *cluster) deleteNode(t *testing.T, name string) {
	t.Helper()
	nodes := c.ClientSet.CoreV1().Nodes()
	err := nodes.Delete(c.Ctx, name, *metav1.NewDeleteOptions(0))
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting node %s: %v", name, err)
		return
	}
	err = wait.PollUntilContextTimeout(c.Ctx, pollInterval, waitTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := nodes.Get(ctx, name, getOpts)
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("waiting for node %s to go away: %v", name, err)
	}
}
