package faults

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/devicefit/devicefit/internal/controlplane"
	"github.com/devicefit/devicefit/internal/e2eutil"
)

// scheduler is one bin/devicefit-scheduler process of a test, with what
// the fault tests read of it: its /metrics, whether it leads.
type scheduler struct{ *e2eutil.Scheduler }

// leaseTimings are leaderElection's leaseDuration, renewDeadline and
// retryPeriod.
type leaseTimings struct{ lease, renew, retry time.Duration }

// fastLease is short enough that a killed leader is replaced within
// seconds, long enough that a loaded 2-core machine does not make a live
// leader miss its renewals.
var fastLease = &leaseTimings{4 * time.Second, 3 * time.Second, time.Second}

// schedulerConfig renders the deployed configuration for the test's
// schedulers (Env.SchedulerConfig) as <name>-config.yaml, with the lease
// timings when not nil, else the manifests' own.
func schedulerConfig(t *testing.T, name string, timings *leaseTimings) *e2eutil.SchedulerConfig {
	t.Helper()
	var edit func(map[string]interface{}) error
	if timings != nil {
		edit = e2eutil.LeaderElectionTimings(timings.lease, timings.renew, timings.retry)
	}
	cfg, err := env.SchedulerConfig(testContext(t, time.Minute), name+"-config.yaml", edit)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// startScheduler starts a scheduler process named name with cfg
// (Env.RunScheduler: its log is <dir>/<name>.log, it is stopped when the
// test ends); its Get authenticates as the admin, for /metrics.
func startScheduler(t *testing.T, cfg *e2eutil.SchedulerConfig, name string, args ...string) *scheduler {
	t.Helper()
	return &scheduler{env.RunScheduler(t, e2eutil.SchedulerOptions{
		Name: name, Config: cfg, Token: env.CP.AdminToken, ReadyTimeout: 2 * time.Minute, Args: args,
	})}
}

// metrics returns the metric families of the scheduler's /metrics.
func (sc *scheduler) metrics(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	code, body, err := sc.Get(ctx, "/metrics")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET %s/metrics: %d %s", sc.URL, code, strings.TrimSpace(body))
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(strings.NewReader(body))
}

// sum adds the samples of the family whose labels include every pair of
// match (name, value, name, value, ...).
func sum(f *dto.MetricFamily, match ...string) float64 {
	var total float64
	if f == nil {
		return 0
	}
samples:
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(match); i += 2 {
			if labels[match[i]] != match[i+1] {
				continue samples
			}
		}
		switch {
		case m.Gauge != nil:
			total += m.GetGauge().GetValue()
		case m.Counter != nil:
			total += m.GetCounter().GetValue()
		case m.Untyped != nil:
			total += m.GetUntyped().GetValue()
		}
	}
	return total
}

// isLeader reports client-go's leader_election_master_status of the process.
func (sc *scheduler) isLeader(ctx context.Context) (bool, error) {
	m, err := sc.metrics(ctx)
	if err != nil {
		return false, err
	}
	return sum(m["leader_election_master_status"]) == 1, nil
}

// waitLeader waits until exactly one of the running schedulers says it
// leads, and returns it.
func waitLeader(t *testing.T, scheds ...*scheduler) *scheduler {
	t.Helper()
	var leader *scheduler
	var last string
	err := wait.PollUntilContextTimeout(testContext(t, 2*time.Minute), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		leader = nil
		var leaders []string
		for _, sc := range scheds {
			if sc.Process.Exited() != nil {
				continue
			}
			ok, err := sc.isLeader(ctx)
			if err != nil {
				last = err.Error()
				return false, nil
			}
			if ok {
				leader = sc
				leaders = append(leaders, sc.Name)
			}
		}
		last = fmt.Sprintf("leaders %v", leaders)
		return len(leaders) == 1, nil
	})
	if err != nil {
		t.Fatalf("waiting for one leader among %d schedulers: %v (%s)", len(scheds), err, last)
	}
	return leader
}

// lease returns the lease the schedulers compete for.
func lease(ctx context.Context, le controlplane.LeaderElection) (holder string, acquired time.Time, transitions int32, err error) {
	l, err := env.CP.Client.CoordinationV1().Leases(le.ResourceNamespace).Get(ctx, le.ResourceName, metav1.GetOptions{})
	if err != nil {
		return "", time.Time{}, 0, err
	}
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	if l.Spec.AcquireTime != nil {
		acquired = l.Spec.AcquireTime.Time
	}
	if l.Spec.LeaseTransitions != nil {
		transitions = *l.Spec.LeaseTransitions
	}
	return holder, acquired, transitions, nil
}

// waitQuiet waits until the scheduler has nothing left to try: no pod in
// its active or backoff queue and every unbound devicefit pod of the cluster
// parked as unschedulable (scheduler_pending_pods), for three seconds. Only
// then is "this pod stays pending" a fact rather than a race, and a
// placement that violates the state can no longer be on its way.
func waitQuiet(t *testing.T, sc *scheduler) {
	t.Helper()
	var last string
	stable := 0
	err := wait.PollUntilContextTimeout(testContext(t, 4*time.Minute), time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := sc.Process.Exited(); err != nil {
			return false, err
		}
		unbound, err := unboundPods(ctx)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		m, err := sc.metrics(ctx)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		// Queues active, backoff, gated, incomplete (pod groups) and
		// unschedulable.
		q := m["scheduler_pending_pods"]
		parked, queued := sum(q, "queue", "unschedulable"), sum(q)
		last = fmt.Sprintf("queues: %v pods unschedulable, %v elsewhere (active %v, backoff %v); %d unbound devicefit pods in the API",
			parked, queued-parked, sum(q, "queue", "active"), sum(q, "queue", "backoff"), len(unbound))
		if queued == parked && int(parked) == len(unbound) {
			stable++
		} else {
			stable = 0
		}
		// The queue's gauges may lag a moment: three readings a second apart.
		return stable >= 3, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s to have nothing left to try: %v (%s)", sc.Name, err, last)
	}
}

// unboundPods lists the devicefit pods of the cluster that no node holds.
func unboundPods(ctx context.Context) ([]v1.Pod, error) {
	list, err := env.CP.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName="})
	if err != nil {
		return nil, err
	}
	var out []v1.Pod
	for _, p := range list.Items {
		if p.Spec.SchedulerName == e2eutil.SchedulerName && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// waitSeesAllocatable waits until the scheduler's informer caches hold
// want devices of resource r (of product, or of all products when product
// is ""), as its devicefit_devices{state="allocatable"} gauge counts them:
// the node change the test made has reached the scheduler.
func waitSeesAllocatable(t *testing.T, sc *scheduler, r v1.ResourceName, product string, want float64) {
	t.Helper()
	waitSeesDevices(t, sc, r, product, "allocatable", want)
}

// waitSeesDevices waits until the scheduler's devicefit_devices gauge of
// state, for resource r and product ("": all products), reads want.
func waitSeesDevices(t *testing.T, sc *scheduler, r v1.ResourceName, product, state string, want float64) {
	t.Helper()
	match := []string{"resource", string(r), "state", state}
	if product != "" {
		match = append(match, "product", product)
	}
	var got float64
	err := wait.PollUntilContextTimeout(testContext(t, 2*time.Minute), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := sc.Process.Exited(); err != nil {
			return false, err
		}
		m, err := sc.metrics(ctx)
		if err != nil {
			return false, nil
		}
		got = sum(m["devicefit_devices"], match...)
		return got == want, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s to count %v %s %s of product %q: %v (it counts %v)", sc.Name, want, state, r, product, err, got)
	}
}
