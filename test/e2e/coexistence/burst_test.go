package coexistence

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/devicefit/devicefit/internal/clustercheck"
	"github.com/devicefit/devicefit/internal/e2eutil"
	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/routing"
)

// The burst: more GPU pods than the fleet has GPUs, device-plugin and DRA,
// with and without schedulerName, and CPU pods for the default scheduler
// asking more CPU than the fleet has left.
const (
	namedGPUPods = 60  // schedulerName: devicefit
	plainGPUPods = 60  // no schedulerName: routed, or the default scheduler's
	draPods      = 30  // a claim for one DRA GPU, half naming devicefit
	cpuPods      = 380 // 2 CPUs and 8Gi each, the default scheduler's
)

// defaultDevices are DeviceFit's default device resources, which the
// deployed configuration keeps (valid: TestDefaultResourcePatterns).
var defaultDevices, _ = devices.NewResourceSet(devices.DefaultResourcePatterns())

// ownershipTaint is the device nodes' taint with node ownership.
var ownershipTaint = v1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: v1.TaintEffectNoSchedule}

// TestBurst: both schedulers at once, three ways. With the routing policy
// every device pod is devicefit's and no device is booked twice; with node
// ownership too, nothing is booked twice on any node; without either the
// over-commitment is measured and logged, not asserted (it depends on the
// race).
func TestBurst(t *testing.T) {
	t.Run("routing policy", func(t *testing.T) {
		r := burst(t, "routed")
		r.checkDevicesRouted(t)
		r.checkNoOvercommit(t, devices.NVIDIAGPU)
		r.checkDRA(t)
		// CPU pods of the default scheduler still share the GPU nodes.
		t.Logf("with routing alone, over-committed: %s", r.overcommitText())
	})
	t.Run("routing policy and node ownership", func(t *testing.T) {
		setOwnership(t, true)
		t.Cleanup(func() { setOwnership(t, false) })
		r := burst(t, "owned")
		r.checkDevicesRouted(t)
		r.checkNoOvercommit(t, devices.NVIDIAGPU, v1.ResourceCPU, v1.ResourceMemory, v1.ResourcePods)
		r.checkDRA(t)
	})
	t.Run("neither (measured)", func(t *testing.T) {
		setRouting(t, false)
		t.Cleanup(func() { setRouting(t, true) })
		r := burst(t, "unrouted")
		problems, _ := r.dra.Problems()
		t.Logf("without routing or node ownership: %d bound, over-committed: %s; DRA problems: %d %v",
			r.bound, r.overcommitText(), len(problems), problems)
	})
}

// burstResult is the fleet after a burst into ns settled.
type burstResult struct {
	ns     string
	pods   []v1.Pod // all bound pods of the cluster, and the burst's pending ones
	bound  int      // of the burst
	events map[string]string
	dra    *clustercheck.DRA
	nodes  []v1.Node
}

// burst creates the burst in a namespace of its own, concurrently and in
// a seeded random order, waits until every pod is bound or unschedulable,
// and reads the result. The namespace's pods are force-deleted when the
// test ends, so that the next burst finds the fleet empty.
func burst(t *testing.T, name string) *burstResult {
	ctx := e2eutil.TestContext(t, 6*time.Minute)
	cs := env.CP.Client
	ns := e2eutil.CreateNamespace(t, cs, "coexist-"+name)
	t.Cleanup(func() { emptyNamespace(t, ns) })
	tmpl := &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: ns},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: draClassName, Count: 1}}},
		}}},
	}
	if _, err := cs.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := burstPods(ns)
	rand.New(rand.NewPCG(42, uint64(len(name)))).Shuffle(len(pods), func(i, j int) { pods[i], pods[j] = pods[j], pods[i] })
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, len(pods))
	next := make(chan *v1.Pod)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range next {
				if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("creating %s: %w", p.Name, err)
				}
			}
		}()
	}
	for _, p := range pods {
		next <- p
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	bound := settle(t, ctx, ns, len(pods))
	t.Logf("%s: %d pods created and settled in %s, %d bound", name, len(pods), time.Since(start).Round(time.Second), bound)

	r := &burstResult{ns: ns, bound: bound}
	all, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range all.Items {
		if p.Spec.NodeName != "" || p.Namespace == ns {
			r.pods = append(r.pods, p)
		}
	}
	if r.events, err = clustercheck.PlacedBy(ctx, cs, ns); err != nil {
		t.Fatal(err)
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r.nodes = nodes.Items
	if r.dra, err = clustercheck.ReadDRA(ctx, cs); err != nil {
		t.Fatal(err)
	}
	return r
}

// burstPods are the burst's pods: GPU pods of 1, 2 and 4 GPUs with 4 CPUs
// and 16Gi per GPU.
func burstPods(ns string) []*v1.Pod {
	var out []*v1.Pod
	gpuPod := func(name string, gpus int64, scheduler string) *v1.Pod {
		p := e2eutil.DevicePod(ns, name, devices.NVIDIAGPU, gpus)
		p.Spec.SchedulerName = scheduler
		r := p.Spec.Containers[0].Resources.Requests
		r[v1.ResourceCPU] = *resource.NewQuantity(4*gpus, resource.DecimalSI)
		r[v1.ResourceMemory] = *resource.NewQuantity(16*gpus<<30, resource.BinarySI)
		return p
	}
	sizes := []int64{1, 1, 1, 2, 2, 4}
	for i := range namedGPUPods {
		out = append(out, gpuPod(fmt.Sprintf("named-%d", i), sizes[i%len(sizes)], e2eutil.SchedulerName))
	}
	for i := range plainGPUPods {
		out = append(out, gpuPod(fmt.Sprintf("plain-%d", i), sizes[i%len(sizes)], ""))
	}
	for i := range draPods {
		p := e2eutil.DevicePod(ns, fmt.Sprintf("dra-%d", i), devices.NVIDIAGPU, 0)
		if i%2 == 1 {
			p.Spec.SchedulerName = ""
		}
		p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("gpu")}}
		p.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "gpu"}}
		out = append(out, p)
	}
	for i := range cpuPods {
		p := e2eutil.DevicePod(ns, fmt.Sprintf("cpu-%d", i), devices.NVIDIAGPU, 0)
		p.Spec.SchedulerName = ""
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("8Gi")}
		out = append(out, p)
	}
	return out
}

// settle waits until each of the n pods of ns is bound or marked
// unschedulable and the number bound stayed the same for three seconds;
// it returns that number.
func settle(t *testing.T, ctx context.Context, ns string, n int) int {
	t.Helper()
	last, stable := -1, 0
	var bound, waiting int
	err := wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := env.CP.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		bound, waiting = 0, 0
		for _, p := range list.Items {
			switch {
			case p.Spec.NodeName != "":
				bound++
			case !unschedulable(&p):
				waiting++
			}
		}
		if len(list.Items) != n || waiting > 0 || bound != last {
			last, stable = bound, 0
			return false, nil
		}
		stable++
		return stable >= 3, nil
	})
	if err != nil {
		t.Fatalf("the burst did not settle: %d bound, %d neither bound nor unschedulable (%v)", bound, waiting, err)
	}
	return bound
}

func unschedulable(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// checkDevicesRouted: every device pod of the burst names devicefit, and
// every one bound was bound by devicefit (its Scheduled event's reporting
// controller is the profile's name); CPU pods stay the default scheduler's.
func (r *burstResult) checkDevicesRouted(t *testing.T) {
	t.Helper()
	var devicePods, boundDevice int
	for i := range r.pods {
		p := &r.pods[i]
		if p.Namespace != r.ns {
			continue
		}
		if !devices.AsksForDevices(p, defaultDevices) {
			if p.Spec.SchedulerName != v1.DefaultSchedulerName {
				t.Errorf("CPU pod %s has schedulerName %q, want %q", p.Name, p.Spec.SchedulerName, v1.DefaultSchedulerName)
			}
			continue
		}
		devicePods++
		if p.Spec.SchedulerName != e2eutil.SchedulerName {
			t.Errorf("device pod %s has schedulerName %q, want %q", p.Name, p.Spec.SchedulerName, e2eutil.SchedulerName)
		}
		if p.Spec.NodeName == "" {
			continue
		}
		boundDevice++
		if by := r.events[p.Name]; by != e2eutil.SchedulerName {
			t.Errorf("device pod %s was bound to %s by %q, want %q", p.Name, p.Spec.NodeName, by, e2eutil.SchedulerName)
		}
	}
	if boundDevice == 0 {
		t.Errorf("none of the %d device pods was bound", devicePods)
	}
	t.Logf("%d device pods, %d bound by devicefit", devicePods, boundDevice)
}

// overcommitText words overcommitted for the log.
func (r *burstResult) overcommitText() string {
	over := clustercheck.Overcommitted(r.nodes, r.pods, r.dra)
	var parts []string
	for _, res := range []v1.ResourceName{devices.NVIDIAGPU, v1.ResourceCPU, v1.ResourceMemory, v1.ResourcePods} {
		parts = append(parts, fmt.Sprintf("%s on %d nodes %v", res, len(over[res]), over[res]))
	}
	return strings.Join(parts, "; ")
}

func (r *burstResult) checkNoOvercommit(t *testing.T, resources ...v1.ResourceName) {
	t.Helper()
	over := clustercheck.Overcommitted(r.nodes, r.pods, r.dra)
	for _, res := range resources {
		if len(over[res]) > 0 {
			t.Errorf("%s over-committed on %v", res, over[res])
		}
	}
}

// checkDRA: no device is in two claims, and the DRA pods' claims were
// allocated.
func (r *burstResult) checkDRA(t *testing.T) {
	t.Helper()
	problems, allocated := r.dra.Problems()
	for _, p := range problems {
		t.Error(p)
	}
	if allocated == 0 {
		t.Error("no DRA device was allocated")
	}
}

// setOwnership taints the device nodes and gives the routing policy the
// toleration (on), or undoes both.
func setOwnership(t *testing.T, on bool) {
	t.Helper()
	ctx := e2eutil.TestContext(t, time.Minute)
	cs := env.CP.Client
	for _, name := range deviceNodes() {
		node, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var taints []v1.Taint
		for _, tt := range node.Spec.Taints {
			if tt.Key != ownershipTaint.Key {
				taints = append(taints, tt)
			}
		}
		if on {
			taints = append(taints, ownershipTaint)
		}
		node.Spec.Taints = taints
		if _, err := cs.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	o := routing.Options{SchedulerName: e2eutil.SchedulerName, Resources: devices.DefaultResourcePatterns()}
	if on {
		o.Toleration = &v1.Toleration{Key: ownershipTaint.Key, Operator: v1.TolerationOpEqual, Value: ownershipTaint.Value, Effect: ownershipTaint.Effect}
	}
	want, _, err := routing.Policy(o)
	if err != nil {
		t.Fatal(err)
	}
	policies := cs.AdmissionregistrationV1().MutatingAdmissionPolicies()
	got, err := policies.Get(ctx, routing.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Spec.Mutations = want.Spec.Mutations
	if _, err := policies.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForPolicy(t, func(p *v1.Pod) bool {
		has := false
		for _, tol := range p.Spec.Tolerations {
			has = has || tol.Key == ownershipTaint.Key
		}
		return p.Spec.SchedulerName == e2eutil.SchedulerName && has == on
	})
}

// setRouting deletes the routing policy's binding (off) or creates it again.
func setRouting(t *testing.T, on bool) {
	t.Helper()
	ctx := e2eutil.TestContext(t, time.Minute)
	bindings := env.CP.Client.AdmissionregistrationV1().MutatingAdmissionPolicyBindings()
	if on {
		b := &admissionv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: routing.Name},
			Spec: admissionv1.MutatingAdmissionPolicyBindingSpec{PolicyName: routing.Name}}
		if _, err := bindings.Create(ctx, b, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	} else if err := bindings.Delete(ctx, routing.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForPolicy(t, func(p *v1.Pod) bool { return (p.Spec.SchedulerName == e2eutil.SchedulerName) == on })
}

// waitForPolicy waits until a GPU pod created for the default scheduler
// (dry run) comes back as ok says.
func waitForPolicy(t *testing.T, ok func(*v1.Pod) bool) {
	t.Helper()
	probe := e2eutil.DevicePod(metav1.NamespaceDefault, "routing-probe", devices.NVIDIAGPU, 1)
	probe.Spec.SchedulerName = ""
	var last *v1.Pod
	if err := wait.PollUntilContextTimeout(e2eutil.TestContext(t, time.Minute), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := env.CP.Client.CoreV1().Pods(probe.Namespace).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, nil
		}
		last = p
		return ok(p), nil
	}); err != nil {
		t.Fatalf("the routing policy did not change as asked: a probe came back with %+v", last.Spec)
	}
}

// emptyNamespace force-deletes the namespace's pods (no kubelet finishes
// them) and waits until they and their claims are gone.
func emptyNamespace(t *testing.T, ns string) {
	ctx := e2eutil.TestContext(t, 2*time.Minute)
	cs := env.CP.Client
	if err := cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{}); err != nil {
		t.Errorf("deleting the pods of %s: %v", ns, err)
		return
	}
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) > 0 {
			return false, nil
		}
		claims, err := cs.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(claims.Items) == 0, nil
	})
	if err != nil {
		t.Errorf("the pods and claims of %s are not gone: %v", ns, err)
	}
}
