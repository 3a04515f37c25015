package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/devicefit/devicefit/internal/controlplane"
	"github.com/devicefit/devicefit/internal/e2eutil"
)

// scheduler is bin/devicefit-scheduler run as the manifests would run it.
type scheduler = e2eutil.Scheduler

// sharedScheduler starts, once for the package, bin/devicefit-scheduler with
// the KubeSchedulerConfiguration of the applied ConfigMap and the identity of
// the applied ServiceAccount: a token from the TokenRequest API for API
// access (clientConnection.kubeconfig) and for the secure port's delegated
// authentication and authorization. Leader election stays as configured.
// It stops when the package's tests are over.
func sharedScheduler(t *testing.T) *scheduler {
	t.Helper()
	requireManifests(t)
	s.schedOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		s.sched, s.schedErr = s.env.StartScheduler(ctx, e2eutil.SchedulerOptions{})
	})
	if s.schedErr != nil {
		t.Fatalf("starting devicefit-scheduler with the manifests' identity: %v", s.schedErr)
	}
	return s.sched
}

// withLog adds the end of p's log to err.
func withLog(p *controlplane.Process, err error) error { return e2eutil.WithLog(p, err) }

// forbiddenLines returns the lines of the scheduler's log (stdout and stderr)
// that report an RBAC denial.
func forbiddenLines(p *controlplane.Process) ([]string, error) {
	data, err := os.ReadFile(p.LogPath)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, "is forbidden") {
			out = append(out, l)
		}
	}
	return out, nil
}

// scenarioResult is the outcome of the scenario: every pod bound.
type scenarioResult struct {
	namespace string
	pods      []v1.Pod
}

// devicePods counts the bound pods that request resourceGPU and the devices
// they hold, for assertions on the scheduler's metrics.
func (r *scenarioResult) devicePods() (pods int, devices int64) {
	for _, p := range r.pods {
		var n int64
		for _, c := range p.Spec.Containers {
			if q, ok := c.Resources.Requests[resourceGPU]; ok {
				n += q.Value()
			}
		}
		if n > 0 {
			pods++
			devices += n
		}
	}
	return pods, devices
}

// sharedScenario registers the fleet and has the scheduler bind the scenario's
// pods, once for the package.
func sharedScenario(t *testing.T) (*scheduler, *scenarioResult) {
	t.Helper()
	sched := sharedScheduler(t)
	s.scenarioOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		s.scenario, s.scenarioErr = runScenario(ctx, sched)
	})
	if s.scenarioErr != nil {
		t.Fatalf("scenario: %v", s.scenarioErr)
	}
	return sched, s.scenario
}

func runScenario(ctx context.Context, sched *scheduler) (*scenarioResult, error) {
	if err := registerFleet(ctx); err != nil {
		return nil, err
	}
	ns := "e2e-scenario"
	if _, err := s.cp.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	var pods []*v1.Pod
	for _, sp := range scenarioPods(ns) {
		pods = append(pods, sp.pod)
	}
	if err := createPods(ctx, pods); err != nil {
		return nil, err
	}
	var list *v1.PodList
	var pending []string
	err := controlplane.Poll(ctx, 500*time.Millisecond, 90*time.Second, sched.Process, func(ctx context.Context) (bool, error) {
		var err error
		list, err = s.cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		pending = pending[:0]
		for _, p := range list.Items {
			if p.Spec.NodeName == "" {
				pending = append(pending, p.Name+" "+scheduledMessage(&p))
			}
		}
		return len(list.Items) == len(pods) && len(pending) == 0, nil
	})
	if err != nil {
		return nil, withLog(sched.Process, fmt.Errorf("waiting for %d pods to be bound: %w; not bound: %s", len(pods), err, strings.Join(pending, "; ")))
	}
	return &scenarioResult{namespace: ns, pods: list.Items}, nil
}

func scheduledMessage(p *v1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled {
			return fmt.Sprintf("(%s: %s)", c.Reason, c.Message)
		}
	}
	return "(not tried yet)"
}

// TestSchedulerWithManifestsRBAC: the scheduler, with the manifests'
// configuration and nothing but the manifests' RBAC, takes its lease, binds
// every pod of the scenario to a node its selector admits, and is never
// refused anything: a missing permission shows as "is forbidden" in its log
// (list/watch of an informer, events, the lease, the
// extension-apiserver-authentication ConfigMap, token and access reviews).
func TestSchedulerWithManifestsRBAC(t *testing.T) {
	sched, sc := sharedScenario(t)
	ctx := testContext(t, 2*time.Minute)
	cs := s.cp.Client

	if sched.Config.Lease.ResourceNamespace != systemNamespace || sched.Config.Lease.ResourceName != "devicefit-scheduler" {
		t.Errorf("the ConfigMap's lease is %s/%s, want %s/devicefit-scheduler",
			sched.Config.Lease.ResourceNamespace, sched.Config.Lease.ResourceName, systemNamespace)
	}
	lease, err := cs.CoordinationV1().Leases(sched.Config.Lease.ResourceNamespace).Get(ctx, sched.Config.Lease.ResourceName, metav1.GetOptions{})
	switch {
	case err != nil:
		t.Errorf("lease %s/%s: %v", sched.Config.Lease.ResourceNamespace, sched.Config.Lease.ResourceName, err)
	case lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "":
		t.Errorf("lease %s/%s has no holder", lease.Namespace, lease.Name)
	default:
		t.Logf("lease %s/%s held by %s", lease.Namespace, lease.Name, *lease.Spec.HolderIdentity)
	}

	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: fleetLabel})
	if err != nil {
		t.Fatal(err)
	}
	product := map[string]string{}
	for _, n := range nodes.Items {
		product[n.Name] = n.Labels[labelGPUProduct]
	}
	allowed := map[string][]string{}
	for _, sp := range scenarioPods(sc.namespace) {
		allowed[sp.pod.Name] = sp.allowed
	}
	for _, p := range sc.pods {
		got := product[p.Spec.NodeName]
		if a := allowed[p.Name]; a != nil && !slices.Contains(a, got) {
			t.Errorf("pod %s bound to %s (%q); its selector admits only %v", p.Name, p.Spec.NodeName, got, a)
		}
	}
	t.Logf("%d pods bound", len(sc.pods))

	// The scheduler reports each binding as an event (events.k8s.io); wait
	// for them, so that a refused event write has had its chance to be
	// logged before the log is searched.
	var events int
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := cs.EventsV1().Events(sc.namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		events = 0
		for _, e := range list.Items {
			if e.Reason == "Scheduled" {
				events++
			}
		}
		return events >= len(sc.pods), nil
	})
	if err != nil {
		t.Errorf("%d Scheduled events for %d bound pods: %v", events, len(sc.pods), err)
	}

	lines, err := forbiddenLines(sched.Process)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) > 0 {
		shown := lines
		if len(shown) > 10 {
			shown = shown[:10]
		}
		t.Errorf("the scheduler was refused by RBAC %d times (%s), first:\n%s",
			len(lines), sched.Process.LogPath, strings.Join(shown, "\n"))
	}
}
