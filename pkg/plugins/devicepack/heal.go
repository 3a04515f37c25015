package devicepack

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/metrics"
)

// A shortlist miss: nodes the shortlist named fail the profile's filters
// although PreFilter found that the pod fits them. A reproduction error
// (an upstream change on the next Kubernetes bump), a pod nominated to a
// listed node between PreFilter and Filter, or a claim deallocated inside
// the DRA window shortlistdra.go describes can each cause one. When every
// listed node fails, the pod is unschedulable in this cycle although other
// nodes fit it; left alone, DefaultPreemption would search only the listed
// nodes for victims (the framework marks the others
// UnschedulableAndUnresolvable), and every retry would list the same nodes.
// So PostFilter, which runs exactly then, heals it:
//   - it stops the PostFilter chain (UnschedulableAndUnresolvable), so no
//     preemption runs on the list-limited set: DevicePack's PostFilter must
//     come before DefaultPreemption's, which readProfile checks;
//   - the pod's next cycle names no shortlist (retries): every node DeviceFit
//     names is filtered, DeviceFit's list being a superset of the nodes the
//     pod fits by construction (devicefit/candidates.go);
//   - the pod is activated (Handle.Activate): the queue requeues it as soon
//     as this cycle ends, through the backoff queue (one initial backoff at
//     most; the queue pops it at once when nothing else waits,
//     SchedulerPopFromBackoffQ), instead of parking it until a cluster
//     event;
//   - devicefit_shortlist_misses_total{failed="all"} counts it and a log
//     line names the pod.
// A miss thus costs one cycle more. When some listed nodes fail but one
// passes, checkShortlist notices it in PreScore (if the framework runs it:
// not when a single node passes), counts it ({failed="some"}) and stops the
// shortlist for good: the framework then chose among fewer nodes than
// PreFilter scored, and the choice may differ from scoring every node.

// MissText is the PostFilter message of a cycle whose shortlist missed; it
// ends the pod's PodScheduled message until the retry places it.
const MissText = "every node DevicePack's shortlist named failed the filters; the pod is retried at once on every node"

// PostFilter heals a shortlist miss (above); without a shortlist in the
// cycle it leaves the pod to the PostFilter plugins after it.
func (pl *DevicePack) PostFilter(ctx context.Context, cycleState fwk.CycleState, pod *v1.Pod, _ fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	s := readShortlist(cycleState)
	if s == nil {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	// PostFilter runs only when no node passed the filters, and a list of
	// any length is filtered whole when none passes: every listed node
	// failed.
	logger := klog.FromContext(ctx)
	pl.retries.add(pod.UID)
	metrics.ShortlistMisses.WithLabelValues(metrics.FailedAll).Inc()
	logger.Info("Every node DevicePack's shortlist named failed the filters; retrying the pod at once on every node",
		"pod", klog.KObj(pod), "listed", s.listed)
	pl.handle.Activate(logger, map[string]*v1.Pod{klog.KObj(pod).String(): pod})
	return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, MissText)
}

// checkShortlist runs in PreScore: every node the shortlist named passed
// the profile's filters, or PreFilter's reproduction of them is wrong and
// the choice may not be the one scoring every node would make. Then
// DevicePack stops naming shortlists (the cycles run on every node) and
// says why once. Only lists of at most alwaysFiltered nodes are checked:
// of a longer one, a profile with percentageOfNodesToScore below 100 has
// the framework filter only a share.
func (pl *DevicePack) checkShortlist(ctx context.Context, pod *v1.Pod, s *shortlistState, nodes []fwk.NodeInfo) {
	if len(nodes) >= s.listed || s.listed > alwaysFiltered {
		return
	}
	metrics.ShortlistMisses.WithLabelValues(metrics.FailedSome).Inc()
	if pl.shortlistBroken.Swap(true) {
		return
	}
	klog.FromContext(ctx).Error(nil, "A node DevicePack's shortlist named failed the profile's filters; DevicePack names no more shortlists",
		"pod", klog.KObj(pod), "listed", s.listed, "feasible", len(nodes))
}

// alwaysFiltered is upstream's minFeasibleNodesToFind (schedule_one.go): a
// list of at most this many nodes is filtered whole, whatever the
// profile's percentageOfNodesToScore.
const alwaysFiltered = 100

// retrySet holds the pods whose last cycle's shortlist missed: their next
// cycle names none. A pod deleted before its retry leaves its entry
// behind, so the set is bounded: past maxRetries it starts over, and a pod
// it forgot is listed once more.
type retrySet struct {
	mu   sync.Mutex
	pods map[types.UID]struct{}
}

const maxRetries = 1024

func (r *retrySet) add(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pods == nil || len(r.pods) >= maxRetries {
		r.pods = map[types.UID]struct{}{}
	}
	r.pods[uid] = struct{}{}
}

// take reports whether the pod is to be retried on every node, and
// forgets it: the retry is one cycle.
func (r *retrySet) take(uid types.UID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.pods[uid]
	delete(r.pods, uid)
	return ok
}
