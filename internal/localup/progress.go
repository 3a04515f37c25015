package localup

import (
	"context"
	"fmt"
	"io"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/devicefit/devicefit/internal/controlplane"
)

// podState is where a pod stands from the scheduler's point of view.
type podState int

const (
	statePending podState = iota
	stateBound
	stateUnschedulable
)

func stateOf(p *v1.Pod) podState {
	if p.Spec.NodeName != "" {
		return stateBound
	}
	if c := scheduledCondition(p); c != nil && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
		return stateUnschedulable
	}
	return statePending
}

func scheduledCondition(p *v1.Pod) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == v1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// waitSettled prints a progress line every second until every pod is bound
// or marked unschedulable, and returns the pods as last seen. There is no
// kubelet, so a bound pod stays Pending with spec.nodeName set: binding is
// the end of the scheduler's work and of this wait.
func waitSettled(ctx context.Context, out io.Writer, cs kubernetes.Interface, want int, timeout time.Duration, sched *controlplane.Process) ([]v1.Pod, error) {
	start := time.Now()
	deadline := start.Add(timeout)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		list, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing pods: %w", err)
		}
		var counts [3]int
		for i := range list.Items {
			counts[stateOf(&list.Items[i])]++
		}
		fmt.Fprintf(out, "  %4.0fs  bound %3d  unschedulable %3d  pending %3d  (of %d)\n",
			time.Since(start).Seconds(), counts[stateBound], counts[stateUnschedulable], counts[statePending], len(list.Items))
		if len(list.Items) == want && counts[statePending] == 0 {
			return list.Items, nil
		}
		if err := sched.Exited(); err != nil {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, controlplane.Blame(sched, fmt.Errorf("%d of %d pods still pending after %v", counts[statePending], want, timeout))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}
