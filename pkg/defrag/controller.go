// Package defrag is devicefit-defragmenter's controller (cmd/devicefit-defragmenter)
// and the application of defragmentation plans it shares with `kubectl
// devicefit defrag --apply` (apply.go). The plans themselves are
// pkg/replay's (PlanForPod, PlanFreeNodes): the scheduler's own profile run
// over a snapshot of the cluster, so that a plan places pods as the
// scheduler will.
package defrag

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/events"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/devicefit/devicefit/pkg/apis/defragmenter/v1alpha1"
	"github.com/devicefit/devicefit/pkg/cli"
	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/replay"
)

// Event reasons the defragmenter records.
const (
	// ReasonPlanned (dry run): the moves that would make room.
	ReasonPlanned = "DefragPlanned"
	// ReasonMoving: the moves are being made, on the pod they make room
	// for (or on each node being freed).
	ReasonMoving = "DefragMoving"
	// ReasonEvicted: on a moved pod, evicted for its controller to recreate.
	ReasonEvicted = "DefragEvicted"
	// ReasonFailed: a plan stopped part way.
	ReasonFailed = "DefragFailed"
)

// maxTargetsPerPass bounds the pending pods planned for in one pass: each
// plan simulates the profile over the whole cluster.
const maxTargetsPerPass = 5

// Controller makes room for pending device pods, and keeps whole device
// nodes free, by moving opted-in pods within a budget.
type Controller struct {
	cfg     *v1alpha1.DefragmenterConfiguration
	client  kubernetes.Interface
	profile *cli.Profile
	pods    corelisters.PodLister
	nodes   corelisters.NodeLister
	pdbs    policylisters.PodDisruptionBudgetLister
	// cache holds the rest of what a plan reads; a pass reads it instead
	// of listing the cluster.
	cache    *cli.SnapshotCache
	recorder events.EventRecorder
	clock    clock.Clock
	budget   *Budget
	optIn    func(*v1.Pod) bool
	set      devices.ResourceSet
	// reported are the dry-run plans already reported, per pod or node, so
	// that each pass does not repeat the same Event; touched are those a
	// pass reported or found reported, the others are dropped after it.
	reported map[types.UID]string
	touched  sets.Set[types.UID]
}

// New returns a controller for a defaulted, validated configuration. It
// registers the informers it reads with factory, which the caller starts
// afterwards and waits for before Run.
func New(ctx context.Context, cfg *v1alpha1.DefragmenterConfiguration, client kubernetes.Interface, factory informers.SharedInformerFactory, profile *cli.Profile, recorder events.EventRecorder, c clock.Clock) (*Controller, error) {
	set, err := devices.NewResourceSet(profile.Fit.DeviceResources)
	if err != nil {
		return nil, err
	}
	optIn, err := OptedIn(cfg.OptIn)
	if err != nil {
		return nil, err
	}
	cache, err := cli.NewSnapshotCache(ctx, client, factory)
	if err != nil {
		return nil, err
	}
	for _, w := range cache.Warnings() {
		klog.FromContext(ctx).Info("Plans will not see a kind", "warning", w)
	}
	RegisterMetrics()
	return &Controller{
		cfg: cfg, client: client, profile: profile, recorder: recorder, clock: c,
		pods: factory.Core().V1().Pods().Lister(), nodes: factory.Core().V1().Nodes().Lister(),
		pdbs: factory.Policy().V1().PodDisruptionBudgets().Lister(), cache: cache,
		budget: NewBudget(int(*cfg.Budget.MovesPerHour), c), optIn: optIn, set: set,
		reported: map[types.UID]string{}, touched: sets.New[types.UID](),
	}, nil
}

// OptedIn returns whether a pod may move under o: in one of its namespaces,
// or matching its pod selector.
func OptedIn(o v1alpha1.OptIn) (func(*v1.Pod) bool, error) {
	namespaces := sets.New(o.Namespaces...)
	selector := labels.Nothing()
	if o.PodSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(o.PodSelector)
		if err != nil {
			return nil, fmt.Errorf("optIn.podSelector: %w", err)
		}
		selector = s
	}
	return func(p *v1.Pod) bool {
		return namespaces.Has(p.Namespace) || selector.Matches(labels.Set(p.Labels))
	}, nil
}

// Run makes a pass every interval until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	klog.FromContext(ctx).Info("Defragmenter running", "dryRun", c.cfg.DryRun, "interval", c.cfg.Interval.Duration,
		"movesPerHour", *c.cfg.Budget.MovesPerHour, "concurrentMoves", *c.cfg.Budget.ConcurrentMoves, "profile", c.profile.Source)
	wait.UntilWithContext(ctx, c.Pass, c.cfg.Interval.Duration)
}

// Pass looks at the cluster once: room for the pending pods first (at most
// one plan applied per pass: the next pass plans on what it changed), then
// the whole-free nodes.
func (c *Controller) Pass(ctx context.Context) {
	budgetRemaining.Set(float64(c.budget.Remaining()))
	defer func() {
		budgetRemaining.Set(float64(c.budget.Remaining()))
		for uid := range c.reported {
			if !c.touched.Has(uid) {
				delete(c.reported, uid)
			}
		}
		c.touched.Clear()
	}()
	if p := c.cfg.Pending; p != nil && *p.Enabled {
		if targets := c.targets(); len(targets) > 0 && c.forPending(ctx, targets) {
			return
		}
	}
	if f := c.cfg.FreeNodes; f != nil && f.Count > 0 {
		c.forFreeNodes(ctx)
	}
}

// targets are the device pods of the profile unschedulable for
// pending.after, highest priority first, then longest waiting. Pods of the
// configuration's other profiles are left alone: the plan would be made
// with a profile that does not place them.
func (c *Controller) targets() []*v1.Pod {
	pods, err := c.pods.List(labels.Everything())
	if err != nil {
		return nil
	}
	now := c.clock.Now()
	since := map[*v1.Pod]time.Time{}
	var out []*v1.Pod
	for _, p := range pods {
		if p.Spec.NodeName != "" || p.DeletionTimestamp != nil || p.Spec.SchedulerName != c.profile.Profile.SchedulerName || !c.asksDevices(p) {
			continue
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == v1.PodScheduled && cond.Status == v1.ConditionFalse && cond.Reason == v1.PodReasonUnschedulable &&
				now.Sub(cond.LastTransitionTime.Time) >= c.cfg.Pending.After.Duration {
				since[p] = cond.LastTransitionTime.Time
				out = append(out, p)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		pi, pj := corev1helpers.PodPriority(out[i]), corev1helpers.PodPriority(out[j])
		if pi != pj {
			return pi > pj
		}
		return since[out[i]].Before(since[out[j]])
	})
	return out
}

// asksDevices: the pod requests a device resource of the profile. Pods
// asking devices only through DRA claims are not targets: the planner's dry
// run removes pods through the PreFilter extensions, and DynamicResources
// has none on v1.37.2, so it cannot see the devices a move frees.
func (c *Controller) asksDevices(p *v1.Pod) bool {
	for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
		if !q.IsZero() && c.set.Contains(name) {
			return true
		}
	}
	return false
}

// snapshot is the cluster as the planner needs it, from the informers'
// caches.
func (c *Controller) snapshot(context.Context) (replay.Cluster, replay.MoveRules, error) {
	cluster, err := c.cache.Snapshot()
	if err != nil {
		return cluster, replay.MoveRules{}, err
	}
	pdbs, err := c.pdbs.List(labels.Everything())
	if err != nil {
		return cluster, replay.MoveRules{}, fmt.Errorf("listing PodDisruptionBudgets from the cache: %w", err)
	}
	for i := range pdbs {
		pdbs[i] = pdbs[i].DeepCopy()
	}
	return cluster, replay.MoveRules{PDBs: pdbs, OptedIn: c.optIn}, nil
}

func (c *Controller) policy() replay.Policy {
	return replay.Policy{Name: c.profile.Profile.SchedulerName, Source: c.profile.Source, Profile: c.profile.Profile}
}

// forPending plans for the targets in turn and applies the first plan
// within the limits; it reports whether one was applied or the budget
// stopped the pass.
func (c *Controller) forPending(ctx context.Context, targets []*v1.Pod) bool {
	logger := klog.FromContext(ctx)
	cluster, rules, err := c.snapshot(ctx)
	if err != nil {
		logger.Error(err, "Taking a snapshot of the cluster")
		plans.WithLabelValues(TriggerPending, OutcomeError).Inc()
		return false
	}
	for i, target := range targets {
		if i == maxTargetsPerPass {
			break
		}
		plan, err := replay.PlanForPod(ctx, c.policy(), cluster, target, rules)
		if err != nil {
			logger.Error(err, "Planning moves", "pod", klog.KObj(target))
			plans.WithLabelValues(TriggerPending, OutcomeError).Inc()
			continue
		}
		switch {
		case !plan.Fits:
			logger.V(2).Info("No moves make room", "pod", klog.KObj(target), "reason", plan.Reason)
			plans.WithLabelValues(TriggerPending, OutcomeNoPlan).Inc()
			continue
		case len(plan.Moves) == 0:
			// It fits now: the scheduler's next attempt places it.
			continue
		case len(plan.Moves) > int(c.cfg.Pending.MaxMoves):
			logger.V(2).Info("Too many moves", "pod", klog.KObj(target), "moves", len(plan.Moves), "maxMoves", c.cfg.Pending.MaxMoves)
			plans.WithLabelValues(TriggerPending, OutcomeTooManyMoves).Inc()
			continue
		}
		what := fmt.Sprintf("so that it fits node %s: %s", plan.Node, movesText(plan.Moves))
		if c.cfg.DryRun {
			c.dryRun(ctx, target, TriggerPending, plan.Moves, what)
			continue
		}
		if left := c.budget.Remaining(); len(plan.Moves) > left {
			logger.Info("Plan over budget, deferred", "pod", klog.KObj(target), "moves", len(plan.Moves), "remaining", left)
			plans.WithLabelValues(TriggerPending, OutcomeOverBudget).Inc()
			return true
		}
		// The plan took a while: the pod may have been bound or deleted
		// since the snapshot, and then no move is wanted.
		if fresh, err := c.client.CoreV1().Pods(target.Namespace).Get(ctx, target.Name, metav1.GetOptions{}); err != nil || fresh.UID != target.UID || fresh.Spec.NodeName != "" {
			logger.V(2).Info("Pod no longer pending, plan dropped", "pod", klog.KObj(target))
			continue
		}
		c.recorder.Eventf(target, nil, v1.EventTypeNormal, ReasonMoving, "Defragment",
			"Moving %d pod(s) %s", len(plan.Moves), what)
		c.apply(ctx, TriggerPending, target, target, []string{plan.Node}, plan.Moves, cluster)
		return true
	}
	return false
}

// forFreeNodes keeps freeNodes.count whole-free nodes of the resource.
func (c *Controller) forFreeNodes(ctx context.Context) {
	logger := klog.FromContext(ctx)
	f := c.cfg.FreeNodes
	// The informer caches tell whether enough nodes are free already: the
	// snapshot (a copy of every cache) is taken only when they are not.
	if nodes, err := c.nodes.List(labels.Everything()); err == nil {
		if pods, err := c.pods.List(labels.Everything()); err == nil {
			free, err := replay.WholeFreeNodes(replay.Cluster{Nodes: nodes, Pods: pods}, v1.ResourceName(f.Resource), f.Product)
			if err == nil && len(free) >= int(f.Count) {
				return
			}
		}
	}
	cluster, rules, err := c.snapshot(ctx)
	if err != nil {
		logger.Error(err, "Taking a snapshot of the cluster")
		plans.WithLabelValues(TriggerFreeNodes, OutcomeError).Inc()
		return
	}
	plan, err := replay.PlanFreeNodes(ctx, c.policy(), cluster, int(f.Count), v1.ResourceName(f.Resource), f.Product, rules)
	switch {
	case err != nil:
		logger.Error(err, "Planning whole-free nodes")
		plans.WithLabelValues(TriggerFreeNodes, OutcomeError).Inc()
		return
	case !plan.Done:
		logger.V(2).Info("No moves leave the nodes whole-free", "want", f.Count, "reason", plan.Reason)
		plans.WithLabelValues(TriggerFreeNodes, OutcomeNoPlan).Inc()
		return
	case len(plan.Moves) == 0:
		return
	}
	emptied := sets.New[string]()
	for _, m := range plan.Moves {
		emptied.Insert(m.From)
	}
	var nodes []*v1.Node
	for _, n := range cluster.Nodes {
		if emptied.Has(n.Name) {
			nodes = append(nodes, n)
		}
	}
	what := fmt.Sprintf("to leave %d node(s) with no %s allocated (%s): %s", f.Count, f.Resource, strings.Join(plan.Free, ", "), movesText(plan.Moves))
	if c.cfg.DryRun {
		for _, n := range nodes {
			c.dryRun(ctx, n, TriggerFreeNodes, plan.Moves, what)
		}
		return
	}
	if left := c.budget.Remaining(); len(plan.Moves) > left {
		logger.Info("Plan over budget, deferred", "trigger", TriggerFreeNodes, "moves", len(plan.Moves), "remaining", left)
		plans.WithLabelValues(TriggerFreeNodes, OutcomeOverBudget).Inc()
		return
	}
	for _, n := range nodes {
		c.recorder.Eventf(n, nil, v1.EventTypeNormal, ReasonMoving, "Defragment", "Moving %d pod(s) %s", len(plan.Moves), what)
	}
	c.apply(ctx, TriggerFreeNodes, nil, nodes[0], sets.List(emptied), plan.Moves, cluster)
}

// dryRun reports a plan once per object and plan.
func (c *Controller) dryRun(ctx context.Context, regarding runtime.Object, trigger string, ms []replay.Move, what string) {
	plans.WithLabelValues(trigger, OutcomeDryRun).Inc()
	meta, err := apimeta.Accessor(regarding)
	if err != nil {
		return
	}
	c.touched.Insert(meta.GetUID())
	if c.reported[meta.GetUID()] == what {
		return
	}
	c.reported[meta.GetUID()] = what
	moves.WithLabelValues(trigger, "true").Add(float64(len(ms)))
	klog.FromContext(ctx).Info("Dry run: would move pods", "trigger", trigger, "object", klog.KObj(meta), "moves", len(ms), "plan", what)
	c.recorder.Eventf(regarding, nil, v1.EventTypeNormal, ReasonPlanned, "Defragment", "Dry run: would move %d pod(s) %s", len(ms), what)
}

// apply makes the moves, spending the budget as each eviction happens.
func (c *Controller) apply(ctx context.Context, trigger string, target *v1.Pod, regarding runtime.Object, reserved []string, ms []replay.Move, cluster replay.Cluster) {
	logger := klog.FromContext(ctx)
	a := Apply{
		Client: c.client, Grace: c.cfg.EvictionGracePeriodSeconds, Timeout: c.cfg.MoveTimeout.Duration,
		Batch: int(*c.cfg.Budget.ConcurrentMoves),
		Report: func(p Progress) {
			switch p.Kind {
			case Evicted:
				c.budget.Spend()
				budgetRemaining.Set(float64(c.budget.Remaining()))
				moves.WithLabelValues(trigger, "false").Inc()
				logger.Info("Evicted", "pod", klog.KObj(p.Pod), "node", p.Move.From, "expectedNode", p.Move.To, "move", p.Index, "of", p.Total)
				c.recorder.Eventf(p.Pod, regarding, v1.EventTypeNormal, ReasonEvicted, "Evict",
					"Evicted by devicefit-defragmenter (%s) for its controller to recreate it elsewhere (expected on %s)", trigger, p.Move.To)
			case Reserved, Released:
				logger.V(2).Info(string(p.Kind), "node", p.Node)
			case ReleaseFailed:
				logger.Error(p.Err, "Removing the reserve taint", "node", p.Node, "taint", ReserveKey)
			case Bound:
				logger.Info("Pod bound after the moves", "pod", klog.KObj(p.Pod), "node", p.Node)
			}
		},
	}
	if err := a.Run(ctx, target, reserved, ms, cluster.Pods); err != nil {
		logger.Error(err, "Defragmentation stopped", "trigger", trigger)
		plans.WithLabelValues(trigger, OutcomeFailed).Inc()
		c.recorder.Eventf(regarding, nil, v1.EventTypeWarning, ReasonFailed, "Defragment", "Defragmentation stopped: %v", err)
		return
	}
	plans.WithLabelValues(trigger, OutcomeApplied).Inc()
}

// movesText lists moves as "ns/pod (from a to b), ...".
func movesText(ms []replay.Move) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = fmt.Sprintf("%s (from %s to %s)", m.Pod, m.From, m.To)
	}
	return strings.Join(parts, ", ")
}
