package perf

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/devicefit/devicefit/test/perf/results"
)

// bindSpan times a pod-group workload's measured phase to the millisecond:
// from the first PodGroup of the measured namespace to the last of its pods
// bound, as a watch in this process sees them. scheduler_perf's own figures
// cannot time a phase of a second or two (v1.37.2): SchedulingThroughput
// drops its first one-second sample and averages the rest, often one, and
// SchedulingDuration ends at the barrier's next one-second poll
// (waitUntilPodsScheduled), so runs that take 1.6 and 2.1 s both report
// about 2.4 s. The pods are created before their groups and wait in
// GangScheduling's PreEnqueue, so the span is the scheduler's work alone.
type bindSpan struct {
	mu          sync.Mutex
	first, last time.Time
	bound       int
	stopCh      chan struct{}
}

// startBindSpan watches namespace's pods and PodGroups until stop.
func startBindSpan(ctx context.Context, client clientset.Interface, namespace string) (*bindSpan, error) {
	s := &bindSpan{stopCh: make(chan struct{})}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace))
	groups := factory.Scheduling().V1beta1().PodGroups().Informer()
	pods := factory.Core().V1().Pods().Informer()
	if _, err := groups.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if _, ok := obj.(*schedulingv1beta1.PodGroup); ok {
				s.see(false)
			}
		},
	}); err != nil {
		return nil, err
	}
	bound := func(old, pod any) {
		p, ok := pod.(*v1.Pod)
		if !ok || p.Spec.NodeName == "" {
			return
		}
		if o, ok := old.(*v1.Pod); ok && o.Spec.NodeName != "" {
			return
		}
		s.see(true)
	}
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { bound(nil, obj) },
		UpdateFunc: bound,
	}); err != nil {
		return nil, err
	}
	factory.Start(s.stopCh)
	synced := factory.WaitForCacheSync(ctx.Done())
	for informer, ok := range synced {
		if !ok {
			close(s.stopCh)
			return nil, fmt.Errorf("the %v informer of namespace %q did not sync", informer, namespace)
		}
	}
	return s, nil
}

// see records an event now: a PodGroup created, or a pod bound. The span
// starts at the first event of either kind, in case a bind's watch event
// overtakes its group's.
func (s *bindSpan) see(bind bool) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.first.IsZero() {
		s.first = now
	}
	if bind {
		s.bound++
		s.last = now
	}
}

// stop ends the watch; the span is nil when no pod was bound.
func (s *bindSpan) stop() *results.Span {
	close(s.stopCh)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bound == 0 {
		return nil
	}
	return &results.Span{Seconds: s.last.Sub(s.first).Seconds(), Pods: s.bound}
}
