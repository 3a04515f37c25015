package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	resourcehelper "k8s.io/component-helpers/resource"
	testutil "k8s.io/kubernetes/test/integration/util"
)

// The overcommit fleet: 24 nodes, 148 nvidia.com/gpu and 14 MIG slices.
type fleetGroup struct {
	prefix  string
	count   int
	labels  map[string]string
	devices map[v1.ResourceName]int64
}

func overcommitFleet() []nodeSpec {
	groups := []fleetGroup{
		{"h100", 6, gfdLabels(modelH100, 8), devs(gpu, 8)},
		{"h200", 4, gfdLabels(modelH200, 8), devs(gpu, 8)},
		{"a100", 4, gfdLabels(modelA100, 8), devs(gpu, 8)},
		{"a10", 4, gfdLabels(modelA10, 4), devs(gpu, 4)},
		{"t4ts", 2, timeSlicedLabels(modelT4, 2, 4), devs(gpu, 8)},
		{"migmx", 2, migMixedLabels(modelA100, 2, "1g.10gb", 9728, 7), map[v1.ResourceName]int64{gpu: 2, mig1g10: 7}},
		{"cpu", 2, nil, nil},
	}
	var fleet []nodeSpec
	for _, g := range groups {
		for i := range g.count {
			fleet = append(fleet, nodeSpec{name: fmt.Sprintf("%s-%02d", g.prefix, i), labels: g.labels, devices: g.devices})
		}
	}
	return fleet
}

// podKind is a class of pods and, as the test's independent oracle, the node
// groups (name prefixes) that may serve it.
type podKind struct {
	name        string
	resource    v1.ResourceName
	annotations map[string]string
	groups      []string
}

var podKinds = map[string]podKind{
	"any":       {"any", gpu, nil, []string{"h100", "h200", "a100", "a10", "t4ts", "migmx"}},
	"h100":      {"h100", gpu, map[string]string{annProducts: "H100-80GB-HBM3"}, []string{"h100"}},
	"h200":      {"h200", gpu, map[string]string{annMinMemory: "100Gi"}, []string{"h200"}},
	"ampere":    {"ampere", gpu, map[string]string{annFamilies: "ampere"}, []string{"a100", "a10", "migmx"}},
	"t4":        {"t4", gpu, map[string]string{annProducts: "Tesla-T4"}, []string{"t4ts"}},
	"hopperx":   {"hopperx", gpu, map[string]string{annFamilies: "hopper", annSharing: "exclusive"}, []string{"h100", "h200"}},
	"compute86": {"compute86", gpu, map[string]string{annMinCompute: "8.6"}, []string{"h100", "h200", "a10"}},
	"mig":       {"mig", mig1g10, nil, []string{"migmx"}},
}

const kindLabel = "devicefit.test/kind"

func (k podKind) serves(node string) bool {
	group, _, _ := strings.Cut(node, "-")
	return slices.Contains(k.groups, group)
}

func (c *cluster) createKindPod(t *testing.T, ns, name string, kind podKind, count int64) {
	t.Helper()
	pod := makePod(ns, podSpec{name: name, devices: devs(kind.resource, count), annotations: kind.annotations})
	pod.Labels = map[string]string{kindLabel: kind.name}
	if _, err := c.ClientSet.CoreV1().Pods(ns).Create(c.Ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod %s: %v", name, err)
	}
}

// testNoOvercommit drives 339 device pods of random sizes and selectors, with
// churn, through the scheduler on a 24-node fleet, then checks from the
// apiserver's point of view that
//   - no node's device allocatable is exceeded (the invariant),
//   - every bound pod sits on a node its selector admits,
//   - no pod is left pending while a node it admits has room for it.
func testNoOvercommit(t *testing.T, c *cluster) {
	fleet := overcommitFleet()
	for _, n := range fleet {
		c.createNode(t, n)
	}
	c.startScheduler(t, defaultProfiles()...)
	if err := testutil.WaitForNodesInCache(c.Ctx, c.Scheduler, len(fleet)); err != nil {
		t.Fatalf("scheduler cache: %v", err)
	}
	ns := c.NS.Name
	rng := rand.New(rand.NewPCG(20260601, 42))

	// Phase 1: one-device pods in disjoint pools, each below its pool's
	// capacity, so every one of them must bind, whatever the placement order.
	phase1 := []struct {
		kind  string
		count int
	}{{"h100", 40}, {"h200", 28}, {"t4", 14}, {"mig", 12}, {"ampere", 45}}
	var names1 []string
	for _, p := range phase1 {
		for range p.count {
			name := podName("p1", len(names1))
			c.createKindPod(t, ns, name, podKinds[p.kind], 1)
			names1 = append(names1, name)
		}
	}
	out := c.waitForOutcomes(t, ns, names1)
	var notBound []string
	for _, name := range names1 {
		if out[name].node == "" {
			notBound = append(notBound, fmt.Sprintf("%s: %v", name, out[name]))
		}
	}
	if len(notBound) > 0 {
		t.Errorf("phase 1 fits the fleet by construction, yet %d of %d pods did not bind:\n  %s",
			len(notBound), len(names1), strings.Join(notBound, "\n  "))
	}
	c.checkPlacements(t, ns)
	if bound := c.checkNoOvercommit(t); bound != len(names1)-len(notBound) {
		t.Errorf("invariant check saw %d bound pods, want %d", bound, len(names1)-len(notBound))
	}
	if t.Failed() {
		return
	}

	// Phase 2: 200 pods of random kind and size arrive while the fleet is
	// nearly full; then half of phase 1 leaves, and the waiting pods race for
	// the freed devices.
	kindNames := slices.Sorted(func(yield func(string) bool) {
		for k := range podKinds {
			if !yield(k) {
				return
			}
		}
	})
	sizes := []int64{1, 1, 1, 1, 2, 2, 4, 8} // mostly small, some whole nodes
	var names2 []string
	for i := range 200 {
		kind := podKinds[kindNames[rng.IntN(len(kindNames))]]
		size := sizes[rng.IntN(len(sizes))]
		if kind.resource == mig1g10 {
			size = min(size, 2)
		}
		name := podName("p2", i)
		c.createKindPod(t, ns, name, kind, size)
		names2 = append(names2, name)
	}
	c.waitForOutcomes(t, ns, names2)

	victims := slices.Clone(names1)
	rng.Shuffle(len(victims), func(i, j int) { victims[i], victims[j] = victims[j], victims[i] })
	victims = victims[:len(victims)/2]
	for _, name := range victims {
		err := c.ClientSet.CoreV1().Pods(ns).Delete(c.Ctx, name, *metav1.NewDeleteOptions(0))
		if err != nil {
			t.Fatalf("deleting %s: %v", name, err)
		}
	}

	c.waitForStableBindings(t, ns, 4*time.Second)
	c.checkPlacements(t, ns)
	bound := c.checkNoOvercommit(t)
	c.checkWorkConserving(t, ns)
	t.Logf("after churn: %d pods bound (%d of phase 1 kept, %d deleted), %d created in total",
		bound, len(names1)-len(victims), len(victims), len(names1)+len(names2))
	if bound <= len(names1)-len(victims) {
		t.Errorf("no phase-2 pod was bound after %d phase-1 pods freed their devices", len(victims))
	}
}

// waitForStableBindings waits until the set of bound pods in ns has not
// changed for quiet (longer than the scheduler's max backoff).
func (c *cluster) waitForStableBindings(t *testing.T, ns string, quiet time.Duration) {
	t.Helper()
	var (
		last      string
		lastMoved = time.Now()
	)
	err := wait.PollUntilContextTimeout(c.Ctx, 250*time.Millisecond, 2*waitTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := c.ClientSet.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		var b strings.Builder
		for _, p := range list.Items {
			fmt.Fprintf(&b, "%s=%s;", p.Name, p.Spec.NodeName)
		}
		if s := b.String(); s != last {
			last, lastMoved = s, time.Now()
			return false, nil
		}
		return time.Since(lastMoved) >= quiet, nil
	})
	if err != nil {
		t.Fatalf("bindings in %s did not settle: %v", ns, err)
	}
}

// fleetUsage reads nodes and bound pods from the apiserver and returns the
// free devices per node and resource, and the pods in ns.
func (c *cluster) fleetUsage(t *testing.T, ns string) (map[string]map[v1.ResourceName]int64, []v1.Pod) {
	t.Helper()
	nodes, err := c.ClientSet.CoreV1().Nodes().List(c.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing nodes: %v", err)
	}
	pods, err := c.ClientSet.CoreV1().Pods(ns).List(c.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing pods: %v", err)
	}
	free := map[string]map[v1.ResourceName]int64{}
	for _, n := range nodes.Items {
		free[n.Name] = map[v1.ResourceName]int64{}
		for name, q := range n.Status.Allocatable {
			if isDeviceResource(name) {
				free[n.Name][name] = q.Value()
			}
		}
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" {
			continue
		}
		for name, q := range resourcehelper.PodRequests(&p, resourcehelper.PodResourcesOptions{}) {
			if isDeviceResource(name) && free[p.Spec.NodeName] != nil {
				free[p.Spec.NodeName][name] -= q.Value()
			}
		}
	}
	return free, pods.Items
}

// checkPlacements asserts that every bound pod of ns is on a node its kind admits.
func (c *cluster) checkPlacements(t *testing.T, ns string) {
	t.Helper()
	_, pods := c.fleetUsage(t, ns)
	var bad []string
	for _, p := range pods {
		kind, ok := podKinds[p.Labels[kindLabel]]
		if !ok {
			t.Fatalf("pod %s has no known %s label", p.Name, kindLabel)
		}
		if p.Spec.NodeName != "" && !kind.serves(p.Spec.NodeName) {
			bad = append(bad, fmt.Sprintf("%s (kind %s, annotations %v) on %s", p.Name, kind.name, p.Annotations, p.Spec.NodeName))
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		t.Errorf("%d pod(s) bound to nodes their selector excludes:\n  %s", len(bad), strings.Join(bad, "\n  "))
	}
}

// checkWorkConserving asserts, eventually, that no pending pod of ns fits a
// node its kind admits: a pod rejected while the fleet was full must be
// retried and bound once devices are freed.
func (c *cluster) checkWorkConserving(t *testing.T, ns string) {
	t.Helper()
	var stuck []string
	err := wait.PollUntilContextTimeout(c.Ctx, time.Second, waitTimeout, true, func(context.Context) (bool, error) {
		free, pods := c.fleetUsage(t, ns)
		stuck = stuck[:0]
		for _, p := range pods {
			if p.Spec.NodeName != "" {
				continue
			}
			kind := podKinds[p.Labels[kindLabel]]
			want := resourcehelper.PodRequests(&p, resourcehelper.PodResourcesOptions{})[kind.resource]
			for node, byRes := range free {
				if kind.serves(node) && byRes[kind.resource] >= want.Value() {
					o, _ := outcomeOf(&p)
					stuck = append(stuck, fmt.Sprintf("%s (kind %s, %s %s) fits %s (%d free): %v",
						p.Name, kind.name, want.String(), kind.resource, node, byRes[kind.resource], o))
					break
				}
			}
		}
		return len(stuck) == 0, nil
	})
	if err != nil {
		sort.Strings(stuck)
		t.Errorf("%d pending pod(s) fit a node with free devices:\n  %s", len(stuck), strings.Join(stuck, "\n  "))
	}
}
