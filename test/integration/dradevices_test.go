package integration

import (
	"context"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/component-base/metrics/legacyregistry"
	testutil "k8s.io/kubernetes/test/integration/util"

	"github.com/devicefit/devicefit/internal/nvdra"
	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/plugins/devicefit"
)

// DRA-native devices: the GPUs of these nodes are published in
// ResourceSlices with the attribute names of NVIDIA's DRA driver, and the
// nodes advertise no device allocatable. A DeviceClass serves nvidia.com/gpu
// from them (KEP-5004), another the MIG devices; pods either ask for
// nvidia.com/gpu or bring ResourceClaims. No driver runs: the scheduler
// allocates from the slices and binds, and no kubelet prepares anything.
const (
	gpuClassName = "gpu.nvidia.com"
	migClassName = "mig.nvidia.com"
)

func testDRADevices(t *testing.T, c *cluster) {
	c.createDRA(t, nil, []*resourceapi.DeviceClass{
		nvdra.Class(gpuClassName, nvdra.WholeGPUs, string(gpu)),
		nvdra.Class(migClassName, nvdra.MIGs, ""),
	})
	spread := configtestingProfile(t, spreadSchedulerName)
	c.startSchedulerWithProfiles(t, append(loadDeployedProfiles(t), spread)...)

	t.Run("selectors read the slices, and a mixed node passes only if first fit gives the right product", func(t *testing.T) {
		testDRASelectors(t, c)
	})
	t.Run("extended resource: 4 + 4 share a node so an 8 still fits", func(t *testing.T) {
		testDRAPackExtended(t, c)
	})
	t.Run("claims: three 2-device claims share a node so an 8-device claim binds", func(t *testing.T) {
		testDRAPackClaims(t, c)
	})
	t.Run("partitions: two 1-slice MIG claims share one GPU so the other stays whole", func(t *testing.T) {
		testDRAPartitions(t, c)
	})
	t.Run("shares: two half-GPU claims share one GPU so a two-GPU claim binds on the other node", func(t *testing.T) {
		testDRAShares(t, c)
	})
	// Last: it deletes a class serving nvidia.com/gpu and repairs it.
	t.Run("two classes name nvidia.com/gpu: 4 + 3 share a node so an 8 still fits", func(t *testing.T) {
		testDRATwoClasses(t, c)
	})
}

func l40s(first, n int) []resourceapi.Device {
	return nvdra.GPUs(first, n, "NVIDIA L40S", "Ada Lovelace", "8.9.0", "46068Mi")
}

func a100(first, n int) []resourceapi.Device {
	return nvdra.GPUs(first, n, "NVIDIA A100-SXM4-80GB", "Ampere", "8.0.0", "80Gi")
}

func testDRASelectors(t *testing.T, c *cluster) {
	ns := testutil.WithNewNamespace(t, c.TestContext, "dra-sel").NS.Name
	t.Cleanup(func() { c.deletePodsAndWait(t, ns); c.deleteClaims(t, ns) })
	pool := map[string]string{"pool": "dra-sel"}
	// "mixed" lists two L40S before two A100s: the allocator gives the L40S
	// first.
	for _, n := range []string{"sel-mixed", "sel-a100", "sel-l40s"} {
		c.createNode(t, nodeSpec{name: n, labels: pool})
	}
	c.createDRA(t, []*resourceapi.ResourceSlice{
		nvdra.NodeSlice("sel-mixed", append(l40s(0, 2), a100(2, 2)...)...),
		nvdra.NodeSlice("sel-a100", a100(0, 4)...),
		nvdra.NodeSlice("sel-l40s", l40s(0, 4)...),
	}, nil)
	c.waitForSlices(t, 3)

	type selCase struct {
		name        string
		annotations map[string]string
		nodes       []string
		product     string
	}
	place := func(tc selCase) {
		t.Helper()
		p := c.createPod(t, ns, podSpec{name: tc.name, devices: devs(gpu, 2), annotations: tc.annotations, nodeSelector: pool})
		node := c.waitForBound(t, p)
		if !slices.Contains(tc.nodes, node) {
			t.Errorf("%s: bound to %s, want one of %v", tc.name, node, tc.nodes)
		}
		for _, d := range c.podDevices(t, p) {
			if d.Facts.Product != tc.product {
				t.Errorf("%s: got device %s/%s (%s), want %s", tc.name, d.Pool, d.Name, d.Facts.Product, tc.product)
			}
		}
	}
	place(selCase{"products", map[string]string{annProducts: "A100-SXM4-80GB"}, []string{"sel-a100"}, "NVIDIA-A100-SXM4-80GB"})
	place(selCase{"min-memory", map[string]string{annMinMemory: "64Gi"}, []string{"sel-a100"}, "NVIDIA-A100-SXM4-80GB"})

	// sel-a100 is full now. sel-mixed still has two A100s, but first fit
	// would give this pod its L40S: DeviceFit turns it away with the reason,
	// as it does sel-l40s, and DynamicResources says why sel-a100 cannot.
	p := c.createPod(t, ns, podSpec{name: "products-mixed", devices: devs(gpu, 2),
		annotations: map[string]string{annProducts: "A100-SXM4-80GB"}, nodeSelector: pool})
	msg := c.waitForUnschedulable(t, p)
	if want := "0/3 nodes are available: 1 cannot allocate all claims, 2 " + devicefit.ReasonProduct + "."; !strings.HasPrefix(msg, want) {
		t.Errorf("A100 pod with only the mixed node's A100s left: want %q at the start of %q", want, msg)
	}
	c.deletePod(t, p)

	place(selCase{"families", map[string]string{annFamilies: "ada-lovelace"}, []string{"sel-l40s", "sel-mixed"}, "NVIDIA-L40S"})
	c.checkDRAAllocations(t)
}

func testDRAPackExtended(t *testing.T, c *cluster) {
	run := func(t *testing.T, sched, prefix string) (first, second string, eightBound bool) {
		ns := testutil.WithNewNamespace(t, c.TestContext, prefix).NS.Name
		t.Cleanup(func() { c.deletePodsAndWait(t, ns); c.deleteClaims(t, ns) })
		pool := map[string]string{"pool": prefix}
		a, b := prefix+"-a", prefix+"-b"
		for _, n := range []string{a, b} {
			c.createNode(t, nodeSpec{name: n, labels: pool})
		}
		c.createDRA(t, []*resourceapi.ResourceSlice{
			nvdra.NodeSlice(a, nvdra.GPUs(0, 8, "NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", "80Gi")...),
			nvdra.NodeSlice(b, nvdra.GPUs(0, 8, "NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", "80Gi")...),
		}, nil)
		c.waitForSlicesOn(t, a, b)
		// 16 cores each, so that LeastAllocated sees the difference. The
		// first pod is pinned to a: the second one's node is then the
		// scheduler's choice between a used node and an empty one (not a
		// tie broken at random, nor the batching hint of a twin pod).
		four := map[v1.ResourceName]int64{gpu: 4, v1.ResourceCPU: 16}
		p1 := c.createPod(t, ns, podSpec{name: "four-0", schedulerName: sched, devices: four, nodeSelector: pinned(pool, a)})
		first = c.waitForBound(t, p1)
		p2 := c.createPod(t, ns, podSpec{name: "four-1", schedulerName: sched, devices: four, nodeSelector: pool})
		second = c.waitForBound(t, p2)
		p3 := c.createPod(t, ns, podSpec{name: "eight", schedulerName: sched, devices: devs(gpu, 8), nodeSelector: pool})
		eightBound = c.waitForOutcomes(t, ns, []string{p3.Name})[p3.Name].node != ""
		c.checkDRAAllocations(t)
		return first, second, eightBound
	}
	t.Run("devicefit", func(t *testing.T) {
		first, second, eight := run(t, schedulerName, "dra-pack")
		if first != second || !eight {
			t.Errorf("devicefit: 4-GPU pods on %s and %s (want one node), 8-GPU pod bound %v (want true)", first, second, eight)
		}
	})
	t.Run("upstream default spreads and strands the 8", func(t *testing.T) {
		first, second, eight := run(t, spreadSchedulerName, "dra-spread")
		if first == second || eight {
			t.Errorf("upstream: 4-GPU pods on %s and %s (want two nodes), 8-GPU pod bound %v (want false)", first, second, eight)
		}
	})
}

func testDRAPackClaims(t *testing.T, c *cluster) {
	ns := testutil.WithNewNamespace(t, c.TestContext, "dra-claims").NS.Name
	t.Cleanup(func() { c.deletePodsAndWait(t, ns); c.deleteClaims(t, ns) })
	pool := map[string]string{"pool": "dra-claims"}
	for _, n := range []string{"claims-a", "claims-b"} {
		c.createNode(t, nodeSpec{name: n, labels: pool})
	}
	c.createDRA(t, []*resourceapi.ResourceSlice{
		nvdra.NodeSlice("claims-a", a100(0, 8)...),
		nvdra.NodeSlice("claims-b", a100(0, 8)...),
	}, nil)
	c.waitForSlicesOn(t, "claims-a", "claims-b")
	const a100Product = "NVIDIA-A100-SXM4-80GB"
	placedBefore := metricValue(t, "devicefit_placed_devices_total", string(gpu), a100Product, "")
	// The first is pinned to claims-a; the other two are the scheduler's
	// choice.
	nodes := map[string]int{}
	for i := range 3 {
		name := podName("two", i)
		c.createClaim(t, nvdra.Claim(ns, name, gpuClassName, 2))
		sel := pool
		if i == 0 {
			sel = pinned(pool, "claims-a")
		}
		p := c.createPod(t, ns, podSpec{name: name, claims: []string{name}, nodeSelector: sel})
		nodes[c.waitForBound(t, p)]++
	}
	c.createClaim(t, nvdra.Claim(ns, "eight", gpuClassName, 8))
	p := c.createPod(t, ns, podSpec{name: "eight", claims: []string{"eight"}, nodeSelector: pool})
	o := c.waitForOutcomes(t, ns, []string{p.Name})[p.Name]
	if len(nodes) != 1 || o.node == "" {
		t.Errorf("2-device claim pods per node %v (want all on one), 8-device claim pod %v (want bound)", nodes, o)
	}
	c.checkDRAAllocations(t)

	// The metrics count the claims' devices under the class's extended
	// resource name and the devices' product.
	if got := metricValue(t, "devicefit_placed_devices_total", string(gpu), a100Product, "") - placedBefore; got != 14 {
		t.Errorf("devicefit_placed_devices_total{nvidia.com/gpu, %s}: grew by %v, want 14", a100Product, got)
	}
	for state, want := range map[string]float64{"allocatable": 16, "allocated": 14, "free": 2} {
		if got := metricValue(t, "devicefit_devices", string(gpu), a100Product, state); got != want {
			t.Errorf("devicefit_devices{nvidia.com/gpu, %s, %s} = %v, want %v", a100Product, state, got, want)
		}
	}
}

// metricValue reads a devicefit metric of the in-process scheduler from the
// registry its /metrics serves, by resource, product and (gauges) state.
func metricValue(t *testing.T, name, resourceName, product, state string) float64 {
	t.Helper()
	labels := map[string]string{"resource": resourceName, "product": product}
	if state != "" {
		labels["state"] = state
	}
	return metricSum(t, name, labels)
}

// metricSum sums the counters or gauges of the metric family name whose
// labels include those given, as the in-process scheduler's /metrics serves
// them.
func metricSum(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if l[k] != v {
					continue metrics
				}
			}
			switch {
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

func testDRAPartitions(t *testing.T, c *cluster) {
	ns := testutil.WithNewNamespace(t, c.TestContext, "dra-mig").NS.Name
	t.Cleanup(func() { c.deletePodsAndWait(t, ns); c.deleteClaims(t, ns) })
	pool := map[string]string{"pool": "dra-mig"}
	var slices []*resourceapi.ResourceSlice
	for _, n := range []string{"mig-a", "mig-b"} {
		c.createNode(t, nodeSpec{name: n, labels: pool})
		slices = append(slices, nvdra.Partitionable(n, 1, 4, "NVIDIA A100-SXM4-40GB", "1g.10gb", "40Gi", "10Gi")...)
	}
	c.createDRA(t, slices, nil)
	c.waitForSlicesOn(t, "mig-a", "mig-b")
	// The first slice is pinned to mig-a; the second is the scheduler's
	// choice between the cut GPU and the whole one.
	var migNodes []string
	for i := range 2 {
		name := podName("slice", i)
		c.createClaim(t, nvdra.Claim(ns, name, migClassName, 1))
		sel := pool
		if i == 0 {
			sel = pinned(pool, "mig-a")
		}
		p := c.createPod(t, ns, podSpec{name: name, claims: []string{name}, nodeSelector: sel})
		migNodes = append(migNodes, c.waitForBound(t, p))
	}
	c.createClaim(t, nvdra.Claim(ns, "whole", gpuClassName, 1))
	p := c.createPod(t, ns, podSpec{name: "whole", claims: []string{"whole"}, nodeSelector: pool})
	o := c.waitForOutcomes(t, ns, []string{p.Name})[p.Name]
	if migNodes[0] != migNodes[1] || o.node == "" || o.node == migNodes[0] {
		t.Errorf("MIG claim pods on %v (want one node), whole-GPU claim pod %v (want bound on the other)", migNodes, o)
	}
	c.checkDRAAllocations(t)
}

// pinned adds the node's hostname label to a node selector.
func pinned(selector map[string]string, node string) map[string]string {
	out := map[string]string{"kubernetes.io/hostname": node}
	for k, v := range selector {
		out[k] = v
	}
	return out
}

// createDRA creates slices and classes, deleted when t ends.
func (c *cluster) createDRA(t *testing.T, slices []*resourceapi.ResourceSlice, classes []*resourceapi.DeviceClass) {
	t.Helper()
	api := c.ClientSet.ResourceV1()
	for _, s := range slices {
		if _, err := api.ResourceSlices().Create(c.Ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating ResourceSlice %s: %v", s.Name, err)
		}
		t.Cleanup(func() {
			if err := api.ResourceSlices().Delete(c.Ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting ResourceSlice %s: %v", s.Name, err)
			}
		})
	}
	for _, dc := range classes {
		if _, err := api.DeviceClasses().Create(c.Ctx, dc, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating DeviceClass %s: %v", dc.Name, err)
		}
		t.Cleanup(func() {
			if err := api.DeviceClasses().Delete(c.Ctx, dc.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting DeviceClass %s: %v", dc.Name, err)
			}
		})
	}
}

func (c *cluster) createClaim(t *testing.T, claim *resourceapi.ResourceClaim) {
	t.Helper()
	claim = claim.DeepCopy()
	claim.UID = "" // the API server assigns it
	if _, err := c.ClientSet.ResourceV1().ResourceClaims(claim.Namespace).Create(c.Ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ResourceClaim %s: %v", claim.Name, err)
	}
}

// deleteClaims deletes the namespace's claims, the scheduler's own
// extended-resource claims included: without the garbage collector (no
// kube-controller-manager here) they outlive their pods.
func (c *cluster) deleteClaims(t *testing.T, ns string) {
	t.Helper()
	api := c.ClientSet.ResourceV1().ResourceClaims(ns)
	list, err := api.List(c.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Errorf("listing claims: %v", err)
		return
	}
	for _, claim := range list.Items {
		if len(claim.Finalizers) > 0 {
			claim.Finalizers = nil
			if _, err := api.Update(c.Ctx, &claim, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("removing finalizers of claim %s: %v", claim.Name, err)
			}
		}
		if err := api.Delete(c.Ctx, claim.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting claim %s: %v", claim.Name, err)
		}
	}
}

// waitForSlices waits until the scheduler's informers could have seen n
// slices: the API server lists them (the scheduler's cache follows the same
// watch within milliseconds; pods created after this see them).
func (c *cluster) waitForSlices(t *testing.T, n int) {
	t.Helper()
	err := wait.PollUntilContextTimeout(c.Ctx, pollInterval, waitTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := c.ClientSet.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) >= n, nil
	})
	if err != nil {
		t.Fatalf("waiting for %d ResourceSlices: %v", n, err)
	}
}

// waitForSlicesOn waits until each node has a slice.
func (c *cluster) waitForSlicesOn(t *testing.T, nodes ...string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(c.Ctx, pollInterval, waitTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := c.ClientSet.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		seen := map[string]bool{}
		for _, s := range list.Items {
			if s.Spec.NodeName != nil {
				seen[*s.Spec.NodeName] = true
			}
		}
		for _, n := range nodes {
			if !seen[n] {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("waiting for ResourceSlices on %v: %v", nodes, err)
	}
}

// draState reads the slices and claims from the API server into the device
// model: what was published and which claim holds what.
func (c *cluster) draState(t *testing.T) (*devices.DRAInventory, []resourceapi.ResourceClaim) {
	t.Helper()
	sl, err := c.ClientSet.ResourceV1().ResourceSlices().List(c.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claims, err := c.ClientSet.ResourceV1().ResourceClaims("").List(c.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return devices.NewDRAInventory(ptrs(sl.Items)), claims.Items
}

func findDevice(inv *devices.DRAInventory, driver, pool, name string) *devices.DRADevice {
	for _, d := range inv.Devices {
		if d.Driver == driver && d.Pool == pool && d.Name == name {
			return d
		}
	}
	return nil
}

// podDevices returns the devices allocated to the pod's claims (its own and
// the scheduler's extended-resource claim).
func (c *cluster) podDevices(t *testing.T, pod *v1.Pod) []*devices.DRADevice {
	t.Helper()
	p, err := c.ClientSet.CoreV1().Pods(pod.Namespace).Get(c.Ctx, pod.Name, getOpts)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, s := range p.Status.ResourceClaimStatuses {
		if s.ResourceClaimName != nil {
			names[*s.ResourceClaimName] = true
		}
	}
	for _, pc := range p.Spec.ResourceClaims {
		if pc.ResourceClaimName != nil {
			names[*pc.ResourceClaimName] = true
		}
	}
	if s := p.Status.ExtendedResourceClaimStatus; s != nil {
		names[s.ResourceClaimName] = true
	}
	inv, claims := c.draState(t)
	var out []*devices.DRADevice
	for _, claim := range claims {
		if claim.Namespace != p.Namespace || !names[claim.Name] || claim.Status.Allocation == nil {
			continue
		}
		for _, r := range claim.Status.Allocation.Devices.Results {
			if d := findDevice(inv, r.Driver, r.Pool, r.Device); d != nil {
				out = append(out, d)
			} else {
				t.Errorf("pod %s: claim %s holds %s/%s/%s, which no slice publishes", pod.Name, claim.Name, r.Driver, r.Pool, r.Device)
			}
		}
	}
	if len(out) == 0 {
		t.Errorf("pod %s has no allocated device", pod.Name)
	}
	return out
}

// checkDRAAllocations is the invariant for DRA devices
// (devices.DRAAllocationProblems): no device in two claims' allocations,
// every allocated device published, and no shared counter consumed beyond
// its value (a GPU and a MIG slice of it together).
func (c *cluster) checkDRAAllocations(t *testing.T) {
	t.Helper()
	sl, err := c.ClientSet.ResourceV1().ResourceSlices().List(c.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claims, err := c.ClientSet.ResourceV1().ResourceClaims("").List(c.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	problems, held := devices.DRAAllocationProblems(ptrs(sl.Items), ptrs(claims.Items))
	for _, p := range problems {
		t.Error(p)
	}
	t.Logf("DRA invariant: %d devices allocated, none twice, no counter over its value", held)
}

func ptrs[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// deletePod deletes a pending pod and waits until it is gone.
func (c *cluster) deletePod(t *testing.T, pod *v1.Pod) {
	t.Helper()
	pods := c.ClientSet.CoreV1().Pods(pod.Namespace)
	if err := pods.Delete(c.Ctx, pod.Name, *metav1.NewDeleteOptions(0)); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("deleting pod %s: %v", pod.Name, err)
	}
	err := wait.PollUntilContextTimeout(c.Ctx, pollInterval, waitTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := pods.Get(ctx, pod.Name, getOpts)
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("waiting for pod %s to go away: %v", pod.Name, err)
	}
}
