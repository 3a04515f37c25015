package faults

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/devicefit/devicefit/pkg/devices"
)

// GFD products of TestDeviceChurn, one per case so that the scheduler's
// device gauges tell when it has seen each change.
const (
	productH100      = "NVIDIA-H100-80GB-HBM3"
	productA100x40   = "NVIDIA-A100-SXM4-40GB"
	productH200      = "NVIDIA-H200"
	productH20       = "NVIDIA-H20"
	productA100x80   = "NVIDIA-A100-SXM4-80GB"
	productMIG3g40gb = productA100x80 + "-MIG-3g.40gb"
	productMIG1g10gb = productA100x80 + "-MIG-1g.10gb"

	resourceMIG1g10gb = v1.ResourceName("nvidia.com/mig-1g.10gb")
	resourceMIG2g20gb = v1.ResourceName("nvidia.com/mig-2g.20gb")
)

// TestDeviceChurn: the devices under a running scheduler change. A GPU
// turns unhealthy, a node goes away, GFD relabels a product, an operator
// switches a node from the single to the mixed MIG strategy, a broken node
// status is repaired, a pod's devicefit.io annotation is corrected. After each
// change, with the scheduler quiet (nothing left to try), no pod placed
// since violates the new state (checkInvariants, with the pods placed before
// the change grandfathered), and pods that waited are requeued by the
// queueing hints and placed once capacity returns. Each case is a few
// dozen pods on two or three nodes of eight GPUs, so that every count is
// known exactly. One scheduler serves the four cases, one after another.
func TestDeviceChurn(t *testing.T) {
	sc := startScheduler(t, schedulerConfig(t, "churn", nil), "scheduler-churn")
	waitLeader(t, sc)
	t.Run("unhealthy GPU", func(t *testing.T) { testUnhealthyGPU(t, sc) })
	t.Run("node deleted", func(t *testing.T) { testNodeDeleted(t, sc) })
	t.Run("product relabelled", func(t *testing.T) { testProductRelabelled(t, sc) })
	t.Run("MIG single to mixed", func(t *testing.T) { testMIGSingleToMixed(t, sc) })
	t.Run("allocatable above capacity", func(t *testing.T) { testAllocatableAboveCapacity(t, sc) })
	t.Run("annotation corrected", func(t *testing.T) { testAnnotationCorrected(t, sc) })
}

// churnCase is one case's namespace, pod watch and scheduler.
type churnCase struct {
	t     *testing.T
	sc    *scheduler
	ns    string
	group string
	w     *podWatch
	// old is grandfathered: the pods bound before the last change.
	old map[types.UID]bool
}

// testUnhealthyGPU: two nodes of 8 H100, 20 pods of one H100: 16 bound, 4
// wait. Two GPUs of u0 turn unhealthy (allocatable 8 → 6, capacity stays):
// u0 is over by 2 and takes nothing. Three of its pods go: 5 of 6, it takes
// exactly one more. The GPUs heal: it takes two more, one pod still waits.
func testUnhealthyGPU(t *testing.T, sc *scheduler) {
	const group, u0 = "unhealthy", "unhealthy-h100-0"
	registerNodes(t, group,
		wholeGPUs(u0, productH100, 81559, 9, 0, 8, "hopper"),
		wholeGPUs("unhealthy-h100-1", productH100, 81559, 9, 0, 8, "hopper"))
	c := newChurnCase(t, sc, group)
	c.create("pod", 20, resourceGPU, devices.AnnotationProducts, productH100)
	c.check(4)

	c.grandfather()
	setAllocatable(t, u0, resourceGPU, 6)
	waitSeesAllocatable(t, sc, resourceGPU, productH100, 14)
	got := c.check(4)
	onU0 := got.onNode(c.ns, u0)
	if len(onU0) != 8 {
		t.Fatalf("%s holds %d pods after its GPUs went from 8 to 6, want its 8 (no new one)", u0, len(onU0))
	}

	deletePods(t, c.ns, names(onU0[:3])...)
	got = c.check(3)
	if n := len(got.onNode(c.ns, u0)); n != 6 {
		t.Errorf("%s holds %d pods, want 6: 5 left of 8 after 3 deletions, 1 more for its 6 healthy GPUs", u0, n)
	}

	setAllocatable(t, u0, resourceGPU, 8)
	waitSeesAllocatable(t, sc, resourceGPU, productH100, 16)
	got = c.check(1)
	if n := len(got.onNode(c.ns, u0)); n != 8 {
		t.Errorf("%s holds %d pods after its GPUs healed, want 8", u0, n)
	}
}

// testNodeDeleted: two nodes of 8 A100 40GB, 20 pods: 16 bound, 4 wait.
// Node d0 is deleted, its 8 pods left bound to it (no pod garbage collector
// runs): nothing new goes there. A new node d2 joins: the 4 waiting pods go
// to it. d0 registers again with its 8 orphans still bound: it is full, so
// of 6 new pods 4 go to d2 and 2 wait, until the orphans are deleted.
func testNodeDeleted(t *testing.T, sc *scheduler) {
	const group, d0, d2 = "deleted", "deleted-a100-0", "deleted-a100-2"
	a100 := func(name string) node { return wholeGPUs(name, productA100x40, 40960, 8, 0, 8, "ampere") }
	registerNodes(t, group, a100(d0), a100("deleted-a100-1"))
	c := newChurnCase(t, sc, group)
	c.create("pod", 20, resourceGPU, devices.AnnotationProducts, productA100x40)
	got := c.check(4)
	orphans := names(got.onNode(c.ns, d0))

	c.grandfather()
	if err := env.CP.Client.CoreV1().Nodes().Delete(testContext(t, time.Minute), d0, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSeesAllocatable(t, sc, resourceGPU, productA100x40, 8)
	c.check(4)

	registerNodes(t, group, a100(d2))
	waitSeesAllocatable(t, sc, resourceGPU, productA100x40, 16)
	got = c.check(0)
	if n := len(got.onNode(c.ns, d2)); n != 4 {
		t.Errorf("%s, the node that joined, holds %d pods, want the 4 that waited", d2, n)
	}

	registerNodes(t, group, a100(d0))
	waitSeesAllocatable(t, sc, resourceGPU, productA100x40, 24)
	c.grandfather()
	c.create("more", 6, resourceGPU, devices.AnnotationProducts, productA100x40)
	got = c.check(2)
	if n := len(got.onNode(c.ns, d0)); n != len(orphans) {
		t.Errorf("%s, back with %d pods still bound to it, holds %d", d0, len(orphans), n)
	}

	deletePods(t, c.ns, orphans...)
	got = c.check(0)
	if n := len(got.onNode(c.ns, d0)); n != 2 {
		t.Errorf("%s holds %d pods once its orphans were deleted, want the 2 that waited", d0, n)
	}
}

// testProductRelabelled: a node of 8 H200, 10 pods that want H200: 8 bound,
// 2 wait. GFD relabels the node H20 (exact names: H20 never matches H200).
// Three of its pods go: the H200 pods must not take the GPUs, 3 new pods
// that want H20 do. A new H200 node joins: the 2 waiting pods go to it.
func testProductRelabelled(t *testing.T, sc *scheduler) {
	const group, r0, r1 = "relabel", "relabel-0", "relabel-1"
	registerNodes(t, group, wholeGPUs(r0, productH200, 143771, 9, 0, 8, "hopper"))
	c := newChurnCase(t, sc, group)
	c.create("h200", 10, resourceGPU, devices.AnnotationProducts, productH200)
	got := c.check(2)

	c.grandfather()
	updateNode(t, r0, false, func(n *v1.Node) {
		n.Labels[devices.LabelGPUProduct] = productH20
		n.Labels[devices.LabelGPUMemory] = "97871"
	})
	waitSeesAllocatable(t, sc, resourceGPU, productH20, 8)
	c.check(2)

	deletePods(t, c.ns, names(got.onNode(c.ns, r0)[:3])...)
	got = c.check(2)
	if n := len(got.onNode(c.ns, r0)); n != 5 {
		t.Errorf("%s, relabelled %s, holds %d pods after 3 of its 8 H200 pods went, want 5", r0, productH20, n)
	}

	c.create("h20", 3, resourceGPU, devices.AnnotationProducts, productH20)
	got = c.check(2)
	c.want(got, "h20-", r0)

	registerNodes(t, group, wholeGPUs(r1, productH200, 143771, 9, 0, 8, "hopper"))
	got = c.check(0)
	if n := len(got.onNode(c.ns, r1)); n != 2 {
		t.Errorf("%s, the H200 node that joined, holds %d pods, want the 2 that waited", r1, n)
	}
}

// testMIGSingleToMixed: a node of 4 A100 80GB under the single MIG strategy,
// two 3g.40gb slices per GPU (nvidia.com/gpu 8, product ...-MIG-3g.40gb),
// with nvidia.com/mig-1g.10gb and mig-2g.20gb left at 0 by an earlier mixed
// setup. 10 pods want a 3g.40gb slice (8 bound, 2 wait), 6 want a
// mig-1g.10gb, 2 a mig-2g.20gb (all wait). The switch to mixed comes in two
// steps, as it does in a cluster: first the device plugin (mig-1g.10gb 28,
// nvidia.com/gpu 0) while the labels still say single — DeviceFit must keep
// the MIG pods off (the strategy cannot serve them); then GFD (strategy
// mixed, per-profile labels) — the 6 mig-1g.10gb pods go there. mig-2g.20gb
// stays at 0 and its pods wait. A node still on single 3g.40gb joins: the 2
// slice pods go to it.
func testMIGSingleToMixed(t *testing.T, sc *scheduler) {
	const group, m0, m1 = "mig", "mig-a100-0", "mig-a100-1"
	single := func(name string) node {
		return node{
			name:    name,
			labels:  gfdSingle3g40gb(),
			devices: map[v1.ResourceName]int64{resourceGPU: 8, resourceMIG1g10gb: 0, resourceMIG2g20gb: 0},
		}
	}
	registerNodes(t, group, single(m0))
	c := newChurnCase(t, sc, group)
	c.create("slice", 10, resourceGPU, devices.AnnotationProducts, productMIG3g40gb)
	c.create("mig1g", 6, resourceMIG1g10gb)
	c.create("mig2g", 2, resourceMIG2g20gb)
	c.check(10)

	c.grandfather()
	updateNode(t, m0, true, func(n *v1.Node) {
		for _, l := range []v1.ResourceList{n.Status.Capacity, n.Status.Allocatable} {
			l[resourceGPU] = resource.MustParse("0")
			l[resourceMIG1g10gb] = resource.MustParse("28")
		}
	})
	waitSeesAllocatable(t, sc, resourceMIG1g10gb, "", 28)
	got := c.check(10)
	for _, p := range got.pods {
		if p.Namespace == c.ns && strings.HasPrefix(p.Name, "mig1g-") && !strings.Contains(scheduledMessage(&p), "MIG setup") {
			t.Errorf("pod %s waits, but not for the node's MIG strategy: %s", p.Name, scheduledMessage(&p))
		}
	}

	updateNode(t, m0, false, func(n *v1.Node) {
		n.Labels[devices.LabelMIGStrategy] = string(devices.MIGStrategyMixed)
		n.Labels[devices.LabelGPUProduct] = productA100x80
		n.Labels[devices.LabelGPUMemory] = "81920"
		n.Labels[string(resourceMIG1g10gb)+".product"] = productMIG1g10gb
		n.Labels[string(resourceMIG1g10gb)+".memory"] = "9856"
		n.Labels[string(resourceMIG1g10gb)+".count"] = "28"
	})
	waitSeesAllocatable(t, sc, resourceMIG1g10gb, productMIG1g10gb, 28)
	got = c.check(4)
	c.want(got, "mig1g-", m0)

	registerNodes(t, group, single(m1))
	got = c.check(2)
	c.want(got, "slice-", m0, m1)
	for _, p := range got.pods {
		if p.Namespace == c.ns && strings.HasPrefix(p.Name, "mig2g-") && p.Spec.NodeName != "" {
			t.Errorf("pod %s, asking for a mig-2g.20gb no node has, is bound to %s", p.Name, p.Spec.NodeName)
		}
	}
}

// testAllocatableAboveCapacity: a node whose status says 8 allocatable
// GPUs of a capacity of 4, a broken status DeviceFit refuses to trust; its
// 2 pods wait. The status is repaired by bringing allocatable down to the
// capacity: the 2 pods are placed (DeviceFit's hint on allocatable).
//
// Not tested, because no hint can see it: a repair that raises the capacity
// to 8 and leaves allocatable alone. kube-scheduler derives its node events
// from spec.unschedulable, allocatable, labels, taints, conditions and
// annotations (NodeSchedulingPropertiesChange), not from capacity, so the
// pods then wait for the 5-minute flush of unschedulable pods.
func testAllocatableAboveCapacity(t *testing.T, sc *scheduler) {
	const group, b0 = "broken", "broken-l40s-0"
	registerNodes(t, group, wholeGPUs(b0, "NVIDIA-L40S", 46068, 8, 9, 4, "ada-lovelace"))
	setAllocatable(t, b0, resourceGPU, 8)
	waitSeesAllocatable(t, sc, resourceGPU, "NVIDIA-L40S", 8)
	c := newChurnCase(t, sc, group)
	c.create("pod", 2, resourceGPU)
	got := c.check(2)
	for _, p := range got.pods {
		if p.Namespace == c.ns && !strings.Contains(scheduledMessage(&p), "more device allocatable than capacity") {
			t.Errorf("pod %s waits, but not for the broken status: %s", p.Name, scheduledMessage(&p))
		}
	}

	setAllocatable(t, b0, resourceGPU, 4)
	waitSeesAllocatable(t, sc, resourceGPU, "NVIDIA-L40S", 4)
	c.check(0)
}

// testAnnotationCorrected: a pod asks for a product no node has (a typo the
// admission policy cannot know: the syntax is right) and waits; its owner
// corrects devicefit.io/products (annotations are mutable, the policy
// admits the update). The pod must be placed within the checker's minute,
// not at the scheduler's 5-minute flush: the change is the pod's own.
//
// It fails while DeviceFit registers no event for the pod's own update
// (fwk.TargetPod, fwk.Update): the scheduling queue asks only the plugins
// that rejected the pod whether its update may help (PriorityQueue.Update),
// and DeviceFit, the only one here, has no hint for it.
func testAnnotationCorrected(t *testing.T, sc *scheduler) {
	const group = "typo"
	registerNodes(t, group, wholeGPUs("typo-l40s-0", "NVIDIA-L40S", 46068, 8, 9, 8, "ada-lovelace"))
	c := newChurnCase(t, sc, group)
	c.create("pod", 1, resourceGPU, devices.AnnotationProducts, "NVIDIA-L40")
	c.check(1)

	patch := []byte(`{"metadata":{"annotations":{"` + devices.AnnotationProducts + `":"NVIDIA-L40S"}}}`)
	if _, err := env.CP.Client.CoreV1().Pods(c.ns).Patch(testContext(t, time.Minute), "pod-0", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	c.check(0)
}

// gfdSingle3g40gb: GFD's labels for 4 A100 80GB, each split into two
// 3g.40gb slices, under the single strategy: the slice is the product.
func gfdSingle3g40gb() map[string]string {
	l := gfdA100x80()
	l[devices.LabelGPUProduct] = productMIG3g40gb
	l[devices.LabelGPUMemory] = "40192"
	return l
}

func gfdA100x80() map[string]string {
	return map[string]string{
		"nvidia.com/gpu.present":     "true",
		devices.LabelGPUProduct:      productA100x80,
		devices.LabelGPUMemory:       "81920",
		devices.LabelGPUFamily:       "ampere",
		devices.LabelGPUComputeMajor: "8",
		devices.LabelGPUComputeMinor: "0",
		devices.LabelGPUCount:        "4",
		devices.LabelMIGStrategy:     string(devices.MIGStrategySingle),
	}
}

func newChurnCase(t *testing.T, sc *scheduler, group string) *churnCase {
	return &churnCase{t: t, sc: sc, group: group, ns: newNamespace(t), w: watchPods(t)}
}

// create creates n pods named prefix-<i> that request one of r.
func (c *churnCase) create(prefix string, n int, r v1.ResourceName, annotations ...string) {
	c.t.Helper()
	var pods []*v1.Pod
	for i := 0; i < n; i++ {
		pods = append(pods, smallPod(c.ns, c.group, fmt.Sprintf("%s-%d", prefix, i), r, 1, annotations...))
	}
	if err := createPods(testContext(c.t, 2*time.Minute), pods); err != nil {
		c.t.Fatal(err)
	}
}

// grandfather marks the pods bound now as placed under the old state.
func (c *churnCase) grandfather() { c.old = c.w.grandfather() }

// check waits until the scheduler is quiet, then checks the invariants with
// unbound pods of the case left waiting.
func (c *churnCase) check(unbound int) *checked {
	c.t.Helper()
	waitQuiet(c.t, c.sc)
	return checkInvariants(c.t, c.w, expect{
		namespace: c.ns, unbound: unbound, grandfathered: c.old, exactEvents: true,
		alive: []*scheduler{c.sc}, wait: time.Minute,
	})
}

// want fails the case unless every bound pod named prefix* is on one of
// nodes.
func (c *churnCase) want(got *checked, prefix string, nodes ...string) {
	c.t.Helper()
	for _, p := range got.pods {
		if p.Namespace != c.ns || !strings.HasPrefix(p.Name, prefix) || p.Spec.NodeName == "" {
			continue
		}
		if !slices.Contains(nodes, p.Spec.NodeName) {
			c.t.Errorf("pod %s is on %s, want one of %v", p.Name, p.Spec.NodeName, nodes)
		}
	}
}

// names returns the pods' names, sorted.
func names(pods []v1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	slices.Sort(out)
	return out
}
