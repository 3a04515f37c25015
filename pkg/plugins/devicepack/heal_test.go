package devicepack

import (
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/devicefit/devicefit/pkg/metrics"
)

// activatingHandle records the pods a plugin activates.
type activatingHandle struct {
	fwk.Handle
	activated []*v1.Pod
}

func (h *activatingHandle) Activate(_ klog.Logger, pods map[string]*v1.Pod) {
	for _, p := range pods {
		h.activated = append(h.activated, p)
	}
}

func missCount(t *testing.T, failed string) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(metrics.ShortlistMisses.WithLabelValues(failed))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestPostFilterHealsAMiss: after a cycle whose shortlist named nodes that
// all failed, PostFilter stops the chain before preemption, activates the
// pod and marks it for a cycle on every node, once; without a shortlist it
// leaves the pod to the plugins after it.
func TestPostFilterHealsAMiss(t *testing.T) {
	metrics.Register()
	tests := []struct {
		name      string
		state     *shortlistState
		wantCode  fwk.Code
		wantRetry bool
	}{
		{"every listed node failed", &shortlistState{listed: 1}, fwk.UnschedulableAndUnresolvable, true},
		{"no shortlist in the cycle", &shortlistState{}, fwk.Unschedulable, false},
		{"DevicePack wrote no state", nil, fwk.Unschedulable, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			h := &activatingHandle{}
			pl := &DevicePack{handle: h}
			pod := gpuPod("p", "1")
			pod.UID = types.UID("uid-" + tc.name)
			cs := framework.NewCycleState()
			if tc.state != nil {
				cs.Write(shortlistStateKey, tc.state)
			}
			before := missCount(t, metrics.FailedAll)
			_, status := pl.PostFilter(ctx, cs, pod, framework.NewDefaultNodeToStatus())
			if status.Code() != tc.wantCode {
				t.Errorf("PostFilter status %v, want %v", status, tc.wantCode)
			}
			var want float64
			if tc.wantRetry {
				want = 1
				if status.Message() != MissText {
					t.Errorf("PostFilter message %q, want %q", status.Message(), MissText)
				}
				if len(h.activated) != 1 || h.activated[0] != pod {
					t.Errorf("activated %v, want the pod", h.activated)
				}
			} else if len(h.activated) != 0 {
				t.Errorf("activated %v without a miss", h.activated)
			}
			if got := missCount(t, metrics.FailedAll) - before; got != want {
				t.Errorf("devicefit_shortlist_misses_total{failed=all} grew by %v, want %v", got, want)
			}
			if got := pl.retries.take(pod.UID); got != tc.wantRetry {
				t.Errorf("retry on every node = %v, want %v", got, tc.wantRetry)
			}
			if pl.retries.take(pod.UID) {
				t.Error("the retry on every node is not used up by one cycle")
			}
		})
	}
}

func TestRetrySetIsBounded(t *testing.T) {
	var r retrySet
	for i := range 2*maxRetries + 1 {
		r.add(types.UID(strconv.Itoa(i)))
	}
	if len(r.pods) > maxRetries {
		t.Errorf("%d pods held, want at most %d", len(r.pods), maxRetries)
	}
	r.add("last")
	if !r.take("last") {
		t.Error("the pod added last is not retried")
	}
}

func TestCheckShortlist(t *testing.T) {
	metrics.Register()
	nodes := func(n int) []fwk.NodeInfo { return make([]fwk.NodeInfo, n) }
	tests := []struct {
		name             string
		listed, feasible int
		broken           bool
	}{
		{"every listed node passed", 3, 3, false},
		{"a listed node failed a filter", 3, 2, true},
		{"a long list the framework may sample", alwaysFiltered + 1, 10, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pl := &DevicePack{}
			before := missCount(t, metrics.FailedSome)
			pl.checkShortlist(ctx, gpuPod("p", "1"), &shortlistState{listed: tc.listed}, nodes(tc.feasible))
			if got := pl.shortlistBroken.Load(); got != tc.broken {
				t.Errorf("shortlist broken = %v, want %v", got, tc.broken)
			}
			var want float64
			if tc.broken {
				want = 1
			}
			if got := missCount(t, metrics.FailedSome) - before; got != want {
				t.Errorf("devicefit_shortlist_misses_total{failed=some} grew by %v, want %v", got, want)
			}
		})
	}
}
