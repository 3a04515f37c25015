package defrag

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/devicefit/devicefit/pkg/replay"
)

// ReserveKey is the taint (and toleration) that keeps a node for the pod a
// plan makes room for while the moved pods are recreated elsewhere.
const ReserveKey = "devicefit.io/defrag"

// FreeNodesValue is the reserve taint's value while nodes are being emptied
// with no pod to make room for.
const FreeNodesValue = "free-nodes"

// Apply carries out plans through the API server: the node reservations,
// the evictions and the waits. `kubectl devicefit defrag --apply` and the
// defragmenter both make their moves with it.
type Apply struct {
	Client kubernetes.Interface
	// Grace overrides each evicted pod's terminationGracePeriodSeconds when
	// set, as kubectl drain's --grace-period does.
	Grace *int64
	// Timeout bounds each wait: a batch's pods gone and replaced, the
	// target bound.
	Timeout time.Duration
	// Batch is how many moves are evicted before waiting for their
	// replacements (the defragmenter's concurrent-move budget); 1 if zero.
	Batch int
	// Report, when set, hears of each step.
	Report func(Progress)
}

// ProgressKind names a step of Apply.Run.
type ProgressKind string

// The steps Apply.Run reports.
const (
	Reserved      ProgressKind = "Reserved"
	Evicted       ProgressKind = "Evicted"
	Replaced      ProgressKind = "Replaced"
	Released      ProgressKind = "Released"
	ReleaseFailed ProgressKind = "ReleaseFailed"
	Bound         ProgressKind = "Bound"
)

// Progress is one step of Apply.Run.
type Progress struct {
	Kind ProgressKind
	// Node: reserved (with Taint), released or bound to.
	Node  string
	Taint v1.Taint
	// Pod and Move: the pod evicted (or replaced) and its move, the
	// Index-th (from 1) of Total.
	Pod          *v1.Pod
	Move         replay.Move
	Index, Total int
	Err          error
}

func (a Apply) report(p Progress) {
	if a.Report != nil {
		a.Report(p)
	}
}

// Run reserves the nodes (for target, when there is one: it tolerates the
// taint; without one the taint's value is FreeNodesValue), makes the moves,
// and waits for the target to be bound. The taints go in every case. pods
// are the cluster's pods the moves name.
func (a Apply) Run(ctx context.Context, target *v1.Pod, reserved []string, moves []replay.Move, pods []*v1.Pod) error {
	value := FreeNodesValue
	if target != nil {
		value = string(target.UID)
	}
	taint := v1.Taint{Key: ReserveKey, Value: value, Effect: v1.TaintEffectNoSchedule}
	if target != nil {
		if err := tolerate(ctx, a.Client, target, taint); err != nil {
			return err
		}
	}
	var tainted []string
	defer func() {
		// Not the caller's ctx: it may be cancelled (Ctrl-C, lost lease).
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		for _, node := range tainted {
			err := editTaints(cctx, a.Client, node, func(ts []v1.Taint) []v1.Taint {
				out := ts[:0]
				for _, t := range ts {
					if t.Key != taint.Key || t.Value != taint.Value {
						out = append(out, t)
					}
				}
				return out
			})
			if err != nil {
				a.report(Progress{Kind: ReleaseFailed, Node: node, Err: err})
				continue
			}
			a.report(Progress{Kind: Released, Node: node})
		}
	}()
	for _, node := range reserved {
		if err := editTaints(ctx, a.Client, node, func(ts []v1.Taint) []v1.Taint { return append(ts, taint) }); err != nil {
			return fmt.Errorf("reserving node %s: %w", node, err)
		}
		tainted = append(tainted, node)
		a.report(Progress{Kind: Reserved, Node: node, Taint: taint})
	}
	if err := a.evict(ctx, moves, pods); err != nil {
		return err
	}
	if target == nil {
		return nil
	}
	return a.waitBound(ctx, target)
}

// tolerate adds the toleration of taint to the pod: an addition, which
// Kubernetes allows on an existing pod.
func tolerate(ctx context.Context, cs kubernetes.Interface, target *v1.Pod, taint v1.Taint) error {
	toleration := v1.Toleration{Key: taint.Key, Operator: v1.TolerationOpEqual, Value: taint.Value, Effect: taint.Effect}
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := cs.CoreV1().Pods(target.Namespace).Get(ctx, target.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, t := range p.Spec.Tolerations {
			if t == toleration {
				return nil
			}
		}
		p.Spec.Tolerations = append(p.Spec.Tolerations, toleration)
		_, err = cs.CoreV1().Pods(p.Namespace).Update(ctx, p, metav1.UpdateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("adding the toleration %s to %s/%s: %w", ReserveKey, target.Namespace, target.Name, err)
	}
	return nil
}

// waitBound waits for the target to be bound once the moves are done.
func (a Apply) waitBound(ctx context.Context, target *v1.Pod) error {
	var node string
	wctx, cancel := context.WithTimeout(ctx, a.Timeout)
	defer cancel()
	err := wait.PollUntilContextCancel(wctx, time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := a.Client.CoreV1().Pods(target.Namespace).Get(ctx, target.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		node = p.Spec.NodeName
		return node != "", nil
	})
	if err != nil {
		return fmt.Errorf("%s/%s was not bound within %s after the moves", target.Namespace, target.Name, a.Timeout)
	}
	a.report(Progress{Kind: Bound, Node: node, Pod: target})
	return nil
}

// editTaints replaces the node's taints with edit's result.
func editTaints(ctx context.Context, cs kubernetes.Interface, name string, edit func([]v1.Taint) []v1.Taint) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Spec.Taints = edit(n.Spec.Taints)
		_, err = cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

// evict makes the moves a batch at a time: evictions (the API server
// refuses one with 429 when a PodDisruptionBudget no longer allows it),
// then a wait until the batch's pods are gone (their devices are free only
// then) and each controller has as many scheduled pods as before.
func (a Apply) evict(ctx context.Context, moves []replay.Move, pods []*v1.Pod) error {
	byName := map[string]*v1.Pod{}
	for _, p := range pods {
		byName[p.Namespace+"/"+p.Name] = p
	}
	batch := max(a.Batch, 1)
	for start := 0; start < len(moves); start += batch {
		if ctx.Err() != nil {
			return fmt.Errorf("stopped before move %d of %d: %w", start+1, len(moves), ctx.Err())
		}
		type owned struct {
			pod    *v1.Pod
			owner  types.UID
			before int
			index  int
		}
		// Every count is taken before the batch's first eviction: two pods
		// of one controller in a batch both wait for its full count.
		var evicted []owned
		for i := start; i < min(start+batch, len(moves)); i++ {
			p := byName[moves[i].Pod]
			if p == nil {
				return fmt.Errorf("move %d: pod %s is not in the snapshot", i+1, moves[i].Pod)
			}
			owner := metav1.GetControllerOf(p)
			if owner == nil {
				return fmt.Errorf("move %d: pod %s has no controller to recreate it", i+1, moves[i].Pod)
			}
			before, err := scheduledOf(ctx, a.Client, p.Namespace, owner.UID)
			if err != nil {
				return err
			}
			evicted = append(evicted, owned{pod: p, owner: owner.UID, before: before, index: i})
		}
		for _, e := range evicted {
			m, p := moves[e.index], e.pod
			ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}}
			if a.Grace != nil {
				ev.DeleteOptions = &metav1.DeleteOptions{GracePeriodSeconds: a.Grace}
			}
			if err := a.Client.PolicyV1().Evictions(p.Namespace).Evict(ctx, ev); err != nil {
				if apierrors.IsTooManyRequests(err) {
					return fmt.Errorf("evicting %s: refused, a PodDisruptionBudget allows no more disruptions now: %w", m.Pod, err)
				}
				return fmt.Errorf("evicting %s: %w", m.Pod, err)
			}
			a.report(Progress{Kind: Evicted, Pod: p, Move: m, Index: e.index + 1, Total: len(moves)})
		}
		// Not the caller's ctx: a stop comes between batches, not while
		// one is under way.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.Timeout)
		for _, e := range evicted {
			err := wait.PollUntilContextCancel(wctx, time.Second, true, func(ctx context.Context) (bool, error) {
				if _, err := a.Client.CoreV1().Pods(e.pod.Namespace).Get(ctx, e.pod.Name, metav1.GetOptions{}); err == nil || !apierrors.IsNotFound(err) {
					return false, nil
				}
				n, err := scheduledOf(ctx, a.Client, e.pod.Namespace, e.owner)
				return err == nil && n >= e.before, nil
			})
			if err != nil {
				cancel()
				return fmt.Errorf("move %d (%s): its replacement was not scheduled within %s", e.index+1, moves[e.index].Pod, a.Timeout)
			}
			a.report(Progress{Kind: Replaced, Pod: e.pod, Move: moves[e.index], Index: e.index + 1, Total: len(moves)})
		}
		cancel()
	}
	return nil
}

// scheduledOf counts the bound, not terminating pods a controller owns.
func scheduledOf(ctx context.Context, cs kubernetes.Interface, ns string, owner types.UID) (int, error) {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range pods.Items {
		p := &pods.Items[i]
		if c := metav1.GetControllerOf(p); c != nil && c.UID == owner && p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n, nil
}
