package integration

import (
	"context"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	testutil "k8s.io/kubernetes/test/integration/util"
	"k8s.io/utils/ptr"

	"github.com/devicefit/devicefit/pkg/metrics"
)

// nominationRace is a PreFilter plugin that runs after DevicePack's and, in
// the first cycle of the pod named racer, nominates blocker to node through
// the scheduler's own nominator: a nomination arriving between DevicePack's
// PreFilter, which named its shortlist, and Filter, which counts it. One of
// the real causes of a shortlist miss (pkg/plugins/devicepack/heal.go).
type nominationRace struct {
	h       fwk.Handle
	racer   string
	node    string
	blocker atomic.Pointer[v1.Pod]
	done    atomic.Bool
}

const nominationRaceName = "NominationRace"

func (r *nominationRace) Name() string { return nominationRaceName }

func (r *nominationRace) PreFilter(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	blocker := r.blocker.Load()
	if pod.Name != r.racer || blocker == nil || r.done.Swap(true) {
		return nil, nil
	}
	pi, err := framework.NewPodInfo(blocker)
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	r.h.AddNominatedPod(klog.FromContext(ctx), pi, &fwk.NominatingInfo{NominatedNodeName: r.node, NominatingMode: fwk.ModeOverride})
	return nil, nil
}

func (r *nominationRace) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// testShortlistMiss injects a shortlist miss through the real framework and
// queue. Node miss-a holds a 6-GPU pod of low priority, miss-b nothing:
// DevicePack's shortlist names miss-a alone (it fills it) for a 2-GPU pod.
// Then the race nominates a pending 2-GPU pod of the racer's priority to
// miss-a, and Filter turns miss-a down: every listed node failed. Healed,
// the pod is retried at once on every node and binds to miss-b, in two
// attempts, the miss counted, and the low-priority pod is never preempted:
// without the healing, DefaultPreemption, searching the listed node alone,
// evicts it to make room on miss-a.
func testShortlistMiss(t *testing.T, c *cluster) {
	const nodeA, nodeB = "miss-a", "miss-b"
	for _, n := range []string{nodeA, nodeB} {
		c.createNode(t, nodeSpec{name: n, labels: gfdLabels(modelA100, 8), devices: devs(gpu, 8)})
	}
	low, err := c.ClientSet.SchedulingV1().PriorityClasses().Create(c.Ctx,
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "devicefit-miss-low"}, Value: -10}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.ClientSet.SchedulingV1().PriorityClasses().Delete(context.Background(), low.Name, metav1.DeleteOptions{})
	})
	victim := makePod(c.NS.Name, podSpec{name: "victim", devices: devs(gpu, 6), nodeName: nodeA})
	victim.Spec.PriorityClassName, victim.Spec.Priority = low.Name, ptr.To(low.Value)
	victim, err = c.ClientSet.CoreV1().Pods(c.NS.Name).Create(c.Ctx, victim, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	race := &nominationRace{racer: "racer", node: nodeA}
	extra := frameworkruntime.Registry{nominationRaceName: func(_ context.Context, _ runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		race.h = h
		return race, nil
	}}
	deployed := loadDeployedProfiles(t)
	deployed[0].Plugins.PreFilter.Enabled = append(deployed[0].Plugins.PreFilter.Enabled, schedconfig.Plugin{Name: nominationRaceName})
	// The blocker waits in another profile, so that the attempts counted
	// for the deployed one are the racer's.
	c.startSchedulerWithPlugins(t, extra, append(deployed, configtestingProfile(t, spreadSchedulerName))...)
	if err := testutil.WaitForNodesInCache(c.Ctx, c.Scheduler, 2); err != nil {
		t.Fatalf("scheduler cache: %v", err)
	}
	// The blocker is pending for good (no node has its label), so it stays
	// in the queue, where the nominator finds its requests.
	blocker := c.createPod(t, c.NS.Name, podSpec{name: "blocker", schedulerName: spreadSchedulerName, devices: devs(gpu, 2),
		nodeSelector: map[string]string{"devicefit.io/test": "nowhere"}})
	c.waitForUnschedulable(t, blocker)
	race.blocker.Store(blocker)

	attempts := func(result string) float64 {
		return metricSum(t, "scheduler_schedule_attempts_total", map[string]string{"profile": schedulerName, "result": result})
	}
	misses := func() float64 {
		return metricSum(t, "devicefit_shortlist_misses_total", map[string]string{metrics.LabelFailed: metrics.FailedAll})
	}
	unschedulableBefore, scheduledBefore, missesBefore := attempts("unschedulable"), attempts("scheduled"), misses()

	racer := c.createPod(t, c.NS.Name, podSpec{name: "racer", devices: devs(gpu, 2)})
	node := c.waitForNode(t, racer)
	if !race.done.Load() {
		t.Fatal("the race never ran: no miss was injected")
	}
	if node != nodeB {
		t.Errorf("the racer bound to %s, want %s (%s holds the nominated blocker)", node, nodeB, nodeA)
	}
	v, err := c.ClientSet.CoreV1().Pods(c.NS.Name).Get(c.Ctx, victim.Name, getOpts)
	if err != nil || v.DeletionTimestamp != nil {
		t.Errorf("the low-priority pod on %s was preempted (%v): preemption ran on the listed node alone", nodeA, err)
	}
	if got := misses() - missesBefore; got != 1 {
		t.Errorf("devicefit_shortlist_misses_total{failed=all} grew by %v, want 1", got)
	}
	// The miss costs one cycle: one unschedulable attempt, then the one that
	// binds.
	if got := attempts("unschedulable") - unschedulableBefore; got != 1 {
		t.Errorf("unschedulable attempts of the racer: %v, want 1", got)
	}
	if got := attempts("scheduled") - scheduledBefore; got != 1 {
		t.Errorf("scheduled attempts: %v, want 1", got)
	}
}
