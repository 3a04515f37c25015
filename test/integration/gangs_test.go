package integration

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/kubernetes/pkg/features"
	testutil "k8s.io/kubernetes/test/integration/util"
)

// cliqueLabel is the GFD label of a multi-node NVLink domain (the NVLink
// fabric's cluster UUID and clique ID), the topology key gangs ask for.
const cliqueLabel = "nvidia.com/gpu.clique"

// TestGangs runs pod groups (scheduling.k8s.io/v1beta1 Workload and PodGroup)
// through the scheduler's pod-group cycle, on an apiserver of its own: the
// gates must be on before the apiserver starts (InitTestAPIServer then
// enables scheduling.k8s.io/v1beta1 through --runtime-config, and the API
// admits schedulingConstraints) and before the profiles are defaulted
// (GangScheduling, TopologyPlacementGenerator and PodGroupPodsCount join the
// default plugins then).
//
// Run: go test ./test/integration/ -count=1 -run TestGangs [-v]
func TestGangs(t *testing.T) {
	featuregatetesting.SetFeatureGatesDuringTest(t, utilfeature.DefaultFeatureGate, featuregatetesting.FeatureOverrides{
		features.GenericWorkload:                 true,
		features.TopologyAwareWorkloadScheduling: true,
	})
	api := startAPIServer(t)
	t.Run("CliqueChoice", func(t *testing.T) { testCliqueChoice(t, api.suite(t, "gangs")) })
	t.Run("GangSelector", func(t *testing.T) { testGangSelector(t, api.suite(t, "gangsel")) })
	t.Run("GangReasons", func(t *testing.T) { testGangReasons(t, api.suite(t, "gangwhy")) })
	t.Run("TwinCliques", func(t *testing.T) { testTwinCliques(t, api.suite(t, "twins")) })
}

// testTwinCliques: DeviceFit judges each placement at its first member
// (placementroom.go, twins.go). Clique full has no free GPU; cliques y
// and z are twins, alike but for names and clique value. The 2 x 8 gang
// binds in y or z; through the real pod-group cycle, clique full is
// rejected for room and one of y and z as the other's twin, each counted
// in devicefit_filter_rejections_total.
func testTwinCliques(t *testing.T, c *cluster) {
	const gpusPerNode = 8
	for _, clique := range []string{"full", "y", "z"} {
		for i := range 2 {
			c.createNode(t, nodeSpec{name: fmt.Sprintf("twin-%s-%d", clique, i), labels: cliqueLabels(clique, gpusPerNode), devices: devs(gpu, gpusPerNode)})
		}
	}
	busy := testutil.WithNewNamespace(t, c.TestContext, "busy").NS.Name
	t.Cleanup(func() { c.deletePodsAndWait(t, busy) })
	for i := range 2 {
		c.createPod(t, busy, podSpec{name: podName("busy", i), nodeName: fmt.Sprintf("twin-full-%d", i),
			devices: map[v1.ResourceName]int64{gpu: gpusPerNode, v1.ResourceCPU: 1}})
	}
	c.startSchedulerWithProfiles(t, loadDeployedProfiles(t)...)
	if err := testutil.WaitForNodesInCache(c.Ctx, c.Scheduler, 6); err != nil {
		t.Fatalf("scheduler cache: %v", err)
	}
	rejected := func(reason string) float64 {
		return metricSum(t, "devicefit_filter_rejections_total", map[string]string{"reason": reason})
	}
	room, twins := rejected("placement_room"), rejected("placement_twin")
	ns := c.NS.Name
	names := c.createGang(t, ns, schedulerName, "twin-2x8", 2, gpusPerNode)
	got := c.waitForGangBound(t, ns, "twin-2x8", len(names))
	if !equal(got, []string{"y", "y"}) && !equal(got, []string{"z", "z"}) {
		t.Errorf("2 x 8 gang in cliques %v, want both in y or both in z", got)
	}
	if d := rejected("placement_room") - room; d < 1 {
		t.Errorf("placements rejected for room: %v more, want clique full's", d)
	}
	if d := rejected("placement_twin") - twins; d < 1 {
		t.Errorf("placements rejected as twins: %v more, want one of y and z", d)
	}
}

// testGangReasons: a pending gang pod's message names the real reason on
// every node, as a single pod's does (testPendingReasons). Inside a
// pod-group cycle upstream runs no per-pod PostFilter, so the nodes a
// candidate list left out would read only "didn't satisfy plugin(s)
// [DeviceFit]"; DeviceFit names no list there. The gang asks for A100s
// and 24 cores per pod, with no topology constraint (one placement, all
// nodes: the message is deterministic): the A100 nodes lack the CPU, the
// H100 nodes are the wrong model.
func testGangReasons(t *testing.T, c *cluster) {
	for i := range 2 {
		c.createNode(t, nodeSpec{name: fmt.Sprintf("why-h-%d", i), labels: gfdLabels(modelH100, 8), devices: devs(gpu, 8)})
		c.createNode(t, nodeSpec{name: fmt.Sprintf("why-x-%d", i), labels: gfdLabels(modelA100, 8), devices: devs(gpu, 8), cpu: "16"})
	}
	c.startSchedulerWithProfiles(t, loadDeployedProfiles(t)...)
	if err := testutil.WaitForNodesInCache(c.Ctx, c.Scheduler, 4); err != nil {
		t.Fatalf("scheduler cache: %v", err)
	}
	ns := c.NS.Name
	names := c.createGang(t, ns, schedulerName, "a100-cpu", 2, 8, gangOptions{
		annotations: map[string]string{annProducts: modelA100.product}, anyDomain: true})
	// The pod the group's cycle failed on carries the nodes' reasons; the
	// others say the group's minCount cannot be met.
	const want = "0/4 nodes are available: 2 Insufficient cpu, 2 node(s) didn't match devicefit.io/products."
	var explained int
	for name, o := range c.waitForOutcomes(t, ns, names) {
		switch {
		case !o.unschedulable:
			t.Errorf("gang pod %s %v, want unschedulable", name, o)
		case strings.HasPrefix(o.message, want):
			explained++
		case strings.Contains(o.message, "[DeviceFit]"):
			t.Errorf("gang pod %s %v: DeviceFit's reason is hidden", name, o)
		}
	}
	if explained == 0 {
		t.Errorf("no gang pod's message begins %q", want)
	}
}

// testGangSelector: DeviceFit inside the pod-group cycle. The gang's pods
// accept only A100s (devicefit.io/products); clique h has H100s, clique x
// A100s. For placement h, DeviceFit's PreFilter names only A100 nodes, none
// of them in h, so the placement is infeasible and the gang binds in x,
// although DevicePack's product value alone would prefer the H100s (less
// device memory: 81559 MiB against 81920).
func testGangSelector(t *testing.T, c *cluster) {
	for i := range 2 {
		l := cliqueLabels("h", 8)
		c.createNode(t, nodeSpec{name: fmt.Sprintf("sel-h-%d", i), labels: l, devices: devs(gpu, 8)})
		l = gfdLabels(modelA100, 8)
		l[cliqueLabel] = "x"
		c.createNode(t, nodeSpec{name: fmt.Sprintf("sel-x-%d", i), labels: l, devices: devs(gpu, 8)})
	}
	c.startSchedulerWithProfiles(t, loadDeployedProfiles(t)...)
	if err := testutil.WaitForNodesInCache(c.Ctx, c.Scheduler, 4); err != nil {
		t.Fatalf("scheduler cache: %v", err)
	}
	ns := c.NS.Name
	names := c.createGang(t, ns, schedulerName, "a100-only", 2, 8, gangOptions{annotations: map[string]string{annProducts: modelA100.product}})
	if got, want := c.waitForGangBound(t, ns, "a100-only", len(names)), []string{"x", "x"}; !equal(got, want) {
		t.Errorf("A100-only gang in cliques %v, want %v", got, want)
	}
}

// testCliqueChoice: two NVLink cliques of 8-GPU nodes can each take a gang
// of 4 pods × 8 GPUs. Clique a has six nodes, two of them full; clique b
// has five untouched nodes, each with less CPU (32 cores against 128).
//
// devicefit (the deployed profile) puts the gang in a, which it fills, and
// keeps b whole: the next gang, 5 × 8 GPUs, fits in b. The upstream default
// profile scores placements with NodeResourcesFit's MostAllocated over CPU
// and memory (its gang pods ask for 24 cores each: 60% of b's CPU, 13% of
// a's), takes b and leaves one free node there and four in a: the 5 × 8 gang
// finds no clique (all or nothing: none of its pods binds), until the first
// gang leaves: then it is requeued and takes b.
func testCliqueChoice(t *testing.T, c *cluster) {
	const gpusPerNode = 8
	for i := range 6 {
		c.createNode(t, nodeSpec{name: fmt.Sprintf("clique-a-%d", i), labels: cliqueLabels("a", gpusPerNode), devices: devs(gpu, gpusPerNode)})
	}
	for i := range 5 {
		c.createNode(t, nodeSpec{name: fmt.Sprintf("clique-b-%d", i), labels: cliqueLabels("b", gpusPerNode), devices: devs(gpu, gpusPerNode), cpu: "32"})
	}
	// Two earlier jobs fill clique-a-0 and clique-a-1 (bound at creation).
	busy := testutil.WithNewNamespace(t, c.TestContext, "busy").NS.Name
	t.Cleanup(func() { c.deletePodsAndWait(t, busy) })
	for i := range 2 {
		c.createPod(t, busy, podSpec{name: podName("busy", i), nodeName: fmt.Sprintf("clique-a-%d", i),
			devices: map[v1.ResourceName]int64{gpu: gpusPerNode, v1.ResourceCPU: 1}})
	}

	deployed := loadDeployedProfiles(t)
	upstream := configtestingProfile(t, spreadSchedulerName)
	c.startSchedulerWithProfiles(t, append(deployed, upstream)...)
	if err := testutil.WaitForNodesInCache(c.Ctx, c.Scheduler, 11); err != nil {
		t.Fatalf("scheduler cache: %v", err)
	}
	// The deployed profile lists DevicePack under multiPoint only: the
	// framework enables it at placementScore with its weight there, beside
	// upstream's placement scorers.
	want := []string{"DevicePack:10", "NodeResourcesFit:1", "PodGroupPodsCount:1"}
	if got := placementScorers(c, schedulerName); !equal(got, want) {
		t.Errorf("placementScore plugins of %s: %v, want %v", schedulerName, got, want)
	}
	if got, want := placementScorers(c, spreadSchedulerName), []string{"NodeResourcesFit:1", "PodGroupPodsCount:1"}; !equal(got, want) {
		t.Errorf("placementScore plugins of %s: %v, want %v", spreadSchedulerName, got, want)
	}

	// run submits the 4 × 8 gang, waits for it, then the 5 × 8 gang, to
	// profile sched, each in a namespace of its own; it returns the cliques
	// of the first gang's pods and those of the second's (nil when it was
	// not bound), and the namespaces.
	run := func(t *testing.T, sched string) (first, second []string, ns1, ns2 string) {
		ns1 = testutil.WithNewNamespace(t, c.TestContext, "gang").NS.Name
		t.Cleanup(func() { c.deletePodsAndWait(t, ns1) })
		ns2 = testutil.WithNewNamespace(t, c.TestContext, "gang").NS.Name
		t.Cleanup(func() { c.deletePodsAndWait(t, ns2) })
		big := c.createGang(t, ns1, sched, "train-4x8", 4, gpusPerNode)
		outcomes := c.waitForOutcomes(t, ns1, big)
		for _, name := range big {
			if outcomes[name].node == "" {
				t.Fatalf("%s: gang pod %s %v, want bound", sched, name, outcomes[name])
			}
		}
		first = c.cliquesOf(t, ns1, big)
		// The pod-group cycle, not pod-by-pod scheduling, placed them.
		if cond := c.podGroupScheduled(t, ns1, "train-4x8-workers"); cond == nil || cond.Status != metav1.ConditionTrue {
			t.Errorf("%s: PodGroup train-4x8-workers condition %s = %v, want True", sched, schedulingv1beta1.PodGroupInitiallyScheduled, cond)
		}
		next := c.createGang(t, ns2, sched, "train-5x8", 5, gpusPerNode)
		outcomes = c.waitForOutcomes(t, ns2, next)
		var bound int
		for _, name := range next {
			if outcomes[name].node != "" {
				bound++
			}
		}
		switch bound {
		case len(next):
			second = c.cliquesOf(t, ns2, next)
		case 0:
			if cond := c.podGroupScheduled(t, ns2, "train-5x8-workers"); cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != schedulingv1beta1.PodGroupReasonUnschedulable {
				t.Errorf("%s: PodGroup train-5x8-workers condition %s = %v, want False/%s", sched, schedulingv1beta1.PodGroupInitiallyScheduled, cond, schedulingv1beta1.PodGroupReasonUnschedulable)
			}
		default:
			t.Errorf("%s: %d of the 5 pods of the second gang bound: gangs bind all or nothing", sched, bound)
		}
		return first, second, ns1, ns2
	}

	t.Run("devicefit fills the used clique and keeps b whole", func(t *testing.T) {
		first, second, _, _ := run(t, schedulerName)
		if want := []string{"a", "a", "a", "a"}; !equal(first, want) {
			t.Errorf("4 x 8 gang in cliques %v, want %v", first, want)
		}
		if want := []string{"b", "b", "b", "b", "b"}; !equal(second, want) {
			t.Errorf("5 x 8 gang in cliques %v, want %v", second, want)
		}
	})
	t.Run("upstream default breaks the untouched clique", func(t *testing.T) {
		first, second, ns1, ns2 := run(t, spreadSchedulerName)
		if want := []string{"b", "b", "b", "b"}; !equal(first, want) {
			t.Errorf("4 x 8 gang in cliques %v, want %v", first, want)
		}
		if second != nil {
			t.Fatalf("5 x 8 gang bound in cliques %v, want unschedulable (no clique has 5 free nodes)", second)
		}
		// The unschedulable gang is requeued when the first one leaves, and
		// takes clique b whole.
		c.deletePodsAndWait(t, ns1)
		if got, want := c.waitForGangBound(t, ns2, "train-5x8", 5), []string{"b", "b", "b", "b", "b"}; !equal(got, want) {
			t.Errorf("after the 4 x 8 gang left: 5 x 8 gang in cliques %v, want %v", got, want)
		}
	})
}

// placementScorers lists the profile's placementScore plugins as
// name:weight, sorted.
func placementScorers(c *cluster, profile string) []string {
	var out []string
	for _, p := range c.Scheduler.Profiles[profile].ListPlugins().PlacementScore.Enabled {
		out = append(out, fmt.Sprintf("%s:%d", p.Name, p.Weight))
	}
	sort.Strings(out)
	return out
}

// cliqueLabels: GFD labels of an H100 node in NVLink clique id.
func cliqueLabels(id string, count int) map[string]string {
	l := gfdLabels(modelH100, count)
	l[cliqueLabel] = id
	return l
}

// gangOptions: the gang pods' annotations; anyDomain leaves out the
// topology constraint (the group may span cliques).
type gangOptions struct {
	annotations map[string]string
	anyDomain   bool
}

// createGang creates a Workload with one gang template (minCount pods, all
// in one clique unless opts say anyDomain), its PodGroup and pods pods of
// perPod GPUs and 24 cores each, for profile sched; it returns the pods'
// names.
func (c *cluster) createGang(t *testing.T, ns, sched, name string, pods int, perPod int64, opts ...gangOptions) []string {
	t.Helper()
	var o gangOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	policy := schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: int32(pods)}}
	constraints := &schedulingv1beta1.PodGroupSchedulingConstraints{
		Topology: []schedulingv1beta1.TopologyConstraint{{Key: cliqueLabel}},
	}
	if o.anyDomain {
		constraints = nil
	}
	wl := &schedulingv1beta1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: schedulingv1beta1.WorkloadSpec{PodGroupTemplates: []schedulingv1beta1.PodGroupTemplate{{
			Name: "workers", SchedulingPolicy: policy, SchedulingConstraints: constraints,
		}}},
	}
	if _, err := c.ClientSet.SchedulingV1beta1().Workloads(ns).Create(c.Ctx, wl, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Workload %s/%s: %v", ns, name, err)
	}
	pg := &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-workers", Namespace: ns},
		Spec: schedulingv1beta1.PodGroupSpec{
			WorkloadRef:           &schedulingv1beta1.WorkloadReference{WorkloadName: name, TemplateName: "workers"},
			SchedulingPolicy:      policy,
			SchedulingConstraints: constraints,
		},
	}
	if _, err := c.ClientSet.SchedulingV1beta1().PodGroups(ns).Create(c.Ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating PodGroup %s/%s: %v", ns, pg.Name, err)
	}
	var names []string
	for i := range pods {
		spec := podSpec{name: podName(name, i), schedulerName: sched, podGroup: pg.Name,
			devices: map[v1.ResourceName]int64{gpu: perPod, v1.ResourceCPU: 24}}
		spec.annotations = o.annotations
		p := c.createPod(t, ns, spec)
		names = append(names, p.Name)
	}
	return names
}

// podGroupScheduled waits for the PodGroup's PodGroupInitiallyScheduled
// condition (the scheduler patches it after the group's cycle) and returns
// it; nil when it did not come within waitTimeout.
func (c *cluster) podGroupScheduled(t *testing.T, ns, name string) *metav1.Condition {
	t.Helper()
	var cond *metav1.Condition
	_ = wait.PollUntilContextTimeout(c.Ctx, pollInterval, waitTimeout, true, func(ctx context.Context) (bool, error) {
		pg, err := c.ClientSet.SchedulingV1beta1().PodGroups(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		cond = apimeta.FindStatusCondition(pg.Status.Conditions, schedulingv1beta1.PodGroupInitiallyScheduled)
		return cond != nil, nil
	})
	return cond
}

// waitForGangBound waits until all pods of the gang created by createGang
// (name, pods) are bound and returns their cliques, sorted.
func (c *cluster) waitForGangBound(t *testing.T, ns, name string, pods int) []string {
	t.Helper()
	names := make([]string, pods)
	for i := range names {
		names[i] = podName(name, i)
	}
	err := wait.PollUntilContextTimeout(c.Ctx, pollInterval, waitTimeout, true, func(ctx context.Context) (bool, error) {
		for _, n := range names {
			pod, err := c.ClientSet.CoreV1().Pods(ns).Get(ctx, n, metav1.GetOptions{})
			if err != nil || pod.Spec.NodeName == "" {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("waiting for gang %s/%s to bind: %v", ns, name, err)
	}
	return c.cliquesOf(t, ns, names)
}

// cliquesOf returns the clique label of each named pod's node, sorted.
func (c *cluster) cliquesOf(t *testing.T, ns string, pods []string) []string {
	t.Helper()
	var out []string
	for _, name := range pods {
		pod, err := c.ClientSet.CoreV1().Pods(ns).Get(c.Ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		node, err := c.ClientSet.CoreV1().Nodes().Get(c.Ctx, pod.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, node.Labels[cliqueLabel])
	}
	sort.Strings(out)
	return out
}

func equal(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }
