package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/devicefit/devicefit/internal/e2eutil"
	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/routing"
)

// The MutatingAdmissionPolicy devicefit-route-device-pods
// (manifests/components/routing), as TestMain applied it. Pods are created
// with server-side dry run: admission runs, and the API server returns the
// pod as it would have stored it.

// routingOverheadClass is a RuntimeClass whose overhead is one GPU.
const routingOverheadClass = "e2e-routing-gpu-overhead"

// TestRoutingPolicy: each rule of the policy, on pods created for the
// default scheduler. A pod the policy leaves alone must come back exactly as
// it does from a namespace the policy does not match.
func TestRoutingPolicy(t *testing.T) {
	requireManifests(t)
	ns := newNamespace(t)
	optedOut := optedOutNamespace(t)
	createRoutingOverheadClass(t)
	waitForRouting(t, ns)

	tests := []struct {
		name   string
		mutate func(*v1.Pod)
		routed bool
	}{
		{"GPU", func(p *v1.Pod) { setDevice(p, resourceGPU, "1", "1") }, true},
		{"GPU limit only", func(p *v1.Pod) { setDevice(p, resourceGPU, "", "2") }, true},
		{"MIG slice (a prefix)", func(p *v1.Pod) { setDevice(p, "nvidia.com/mig-1g.10gb", "1", "1") }, true},
		{"AMD GPU", func(p *v1.Pod) { setDevice(p, "amd.com/gpu", "1", "1") }, true},
		{"DRA-backed extended resource", func(p *v1.Pod) { setDevice(p, "deviceclass.resource.kubernetes.io/gpu.example.com", "1", "1") }, true},
		{"init container", func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "init", Image: p.Spec.Containers[0].Image, Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{resourceGPU: resource.MustParse("1")}, Limits: v1.ResourceList{resourceGPU: resource.MustParse("1")}}}}
		}, true},
		{"resource claim", func(p *v1.Pod) {
			p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("gpu-template")}}
			p.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "gpu"}}
		}, true},
		{"RuntimeClass overhead", func(p *v1.Pod) { p.Spec.RuntimeClassName = ptr.To(routingOverheadClass) }, true},
		{"empty scheduler name (defaulted)", func(p *v1.Pod) { p.Spec.SchedulerName = ""; setDevice(p, resourceGPU, "1", "1") }, true},

		{"CPU pod", func(*v1.Pod) {}, false},
		{"no resources at all", func(p *v1.Pod) { p.Spec.Containers[0].Resources = v1.ResourceRequirements{} }, false},
		{"zero GPUs", func(p *v1.Pod) { setDevice(p, resourceGPU, "0", "0") }, false},
		{"odd quantities", func(p *v1.Pod) {
			c := &p.Spec.Containers[0].Resources
			c.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1e-3"), v1.ResourceMemory: resource.MustParse("0.5Gi"), "example.com/dongle": resource.MustParse("1k")}
			c.Limits = v1.ResourceList{"example.com/dongle": resource.MustParse("1k")}
		}, false},
		{"many containers", func(p *v1.Pod) {
			for i := range 40 {
				p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: fmt.Sprintf("c%d", i), Image: p.Spec.Containers[0].Image,
					Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("10m")}}})
			}
		}, false},
		{"another scheduler", func(p *v1.Pod) { p.Spec.SchedulerName = "other-scheduler"; setDevice(p, resourceGPU, "1", "1") }, false},
		{"already bound", func(p *v1.Pod) { p.Spec.NodeName = "some-node"; setDevice(p, resourceGPU, "1", "1") }, false},
		{"opted out", func(p *v1.Pod) {
			p.Labels = map[string]string{routing.OptOutLabel: "false"}
			setDevice(p, resourceGPU, "1", "1")
		}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := plainPod(ns)
			tc.mutate(p)
			got := admitted(t, p)
			if tc.routed {
				if got.Spec.SchedulerName != e2eutil.SchedulerName {
					t.Errorf("schedulerName %q, want %q", got.Spec.SchedulerName, e2eutil.SchedulerName)
				}
				return
			}
			alone := p.DeepCopy()
			alone.Namespace = optedOut
			want := admitted(t, alone)
			if diff := cmp.Diff(want.Spec, got.Spec); diff != "" {
				t.Errorf("the policy changed a pod it should leave alone (-without,+with):\n%s", diff)
			}
		})
	}
}

// plainPod is a CPU pod for the default scheduler.
func plainPod(ns string) *v1.Pod {
	p := devicePod(ns, "routing", resourceGPU, 0)
	p.Spec.SchedulerName = v1.DefaultSchedulerName
	return p
}

// admitted creates p with server-side dry run and returns the pod the API
// server would have stored.
func admitted(t *testing.T, p *v1.Pod) *v1.Pod {
	t.Helper()
	got, err := s.cp.Client.CoreV1().Pods(p.Namespace).Create(testContext(t, 10*time.Second), p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatalf("refused, want admitted: %v", err)
	}
	return got
}

// optedOutNamespace creates a namespace the policy does not match.
func optedOutNamespace(t *testing.T) string {
	t.Helper()
	name := e2eutil.NamespaceName("e2e-optout", t.Name())
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{routing.OptOutLabel: "false"}}}
	if _, err := s.cp.Client.CoreV1().Namespaces().Create(testContext(t, 30*time.Second), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	return name
}

func createRoutingOverheadClass(t *testing.T) {
	t.Helper()
	rc := &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: routingOverheadClass},
		Handler:    "runc",
		Overhead:   &nodev1.Overhead{PodFixed: v1.ResourceList{resourceGPU: resource.MustParse("1")}},
	}
	_, err := s.cp.Client.NodeV1().RuntimeClasses().Create(testContext(t, 30*time.Second), rc, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// waitForRouting waits until the API server runs the policy: it loads
// policies from an informer, a moment after they are applied.
func waitForRouting(t *testing.T, ns string) {
	t.Helper()
	p := plainPod(ns)
	setDevice(p, resourceGPU, "1", "1")
	var got string
	if wait.PollUntilContextTimeout(testContext(t, 30*time.Second), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		out, err := s.cp.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, nil
		}
		got = out.Spec.SchedulerName
		return got == e2eutil.SchedulerName, nil
	}) != nil {
		t.Fatalf("the routing policy does not run: a GPU pod for the default scheduler kept schedulerName %q", got)
	}
}

// TestRoutingNodeOwnership: with node ownership, routed pods get the
// toleration of the device nodes' taint, once, beside the tolerations they
// have; CPU pods get none. The policy is the generated one under another
// name, matching a namespace of the test's that the base policy (without
// the toleration) does not: the first policy to route a pod would make the
// other's match condition false.
func TestRoutingNodeOwnership(t *testing.T) {
	requireManifests(t)
	const label = "e2e.devicefit.io/node-ownership"
	ns := e2eutil.NamespaceName("e2e-owned", t.Name())
	if _, err := s.cp.Client.CoreV1().Namespaces().Create(testContext(t, 30*time.Second),
		&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{label: "true", routing.OptOutLabel: "false"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	taint := v1.Toleration{Key: "nvidia.com/gpu", Operator: v1.TolerationOpEqual, Value: "present", Effect: v1.TaintEffectNoSchedule}
	policy, binding, err := routing.Policy(routing.Options{Name: "e2e-node-ownership", SchedulerName: e2eutil.SchedulerName,
		Resources: devices.DefaultResourcePatterns(), Toleration: &taint})
	if err != nil {
		t.Fatal(err)
	}
	policy.Spec.MatchConstraints.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{label: "true"}}
	// Fail: an expression error fails the test instead of admitting the pod
	// unchanged.
	policy.Spec.FailurePolicy = ptr.To(admissionv1.Fail)
	adm := s.cp.Client.AdmissionregistrationV1()
	ctx := testContext(t, 30*time.Second)
	if _, err := adm.MutatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = adm.MutatingAdmissionPolicies().Delete(context.Background(), policy.Name, metav1.DeleteOptions{})
	})
	if _, err := adm.MutatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = adm.MutatingAdmissionPolicyBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})

	gpuPod := func() *v1.Pod {
		p := plainPod(ns)
		setDevice(p, resourceGPU, "1", "1")
		return p
	}
	count := func(p *v1.Pod) int {
		n := 0
		for _, tol := range p.Spec.Tolerations {
			if tol == taint {
				n++
			}
		}
		return n
	}
	var last *v1.Pod
	if wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		out, err := s.cp.Client.CoreV1().Pods(ns).Create(ctx, gpuPod(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, nil
		}
		last = out
		return count(out) > 0, nil
	}) != nil {
		t.Fatalf("the node-ownership policy does not run: a GPU pod got tolerations %v", last.Spec.Tolerations)
	}

	other := v1.Toleration{Key: "example.com/spot", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}
	tests := []struct {
		name   string
		pod    func() *v1.Pod
		want   int // tolerations equal to taint's
		others []v1.Toleration
	}{
		{"GPU pod", gpuPod, 1, nil},
		{"GPU pod with a toleration of its own", func() *v1.Pod { p := gpuPod(); p.Spec.Tolerations = []v1.Toleration{other}; return p }, 1, []v1.Toleration{other}},
		{"GPU pod tolerating already", func() *v1.Pod { p := gpuPod(); p.Spec.Tolerations = []v1.Toleration{taint}; return p }, 1, nil},
		{"devicefit's own GPU pod", func() *v1.Pod { p := gpuPod(); p.Spec.SchedulerName = e2eutil.SchedulerName; return p }, 1, nil},
		{"CPU pod", func() *v1.Pod { return plainPod(ns) }, 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := admitted(t, tc.pod())
			if n := count(got); n != tc.want {
				t.Errorf("%d tolerations of the device nodes' taint, want %d: %v", n, tc.want, got.Spec.Tolerations)
			}
			for _, o := range tc.others {
				if !slices.Contains(got.Spec.Tolerations, o) {
					t.Errorf("the pod's own toleration %v is gone: %v", o, got.Spec.Tolerations)
				}
			}
			if wantName := map[bool]string{true: e2eutil.SchedulerName, false: v1.DefaultSchedulerName}[tc.want > 0]; got.Spec.SchedulerName != wantName {
				t.Errorf("schedulerName %q, want %q", got.Spec.SchedulerName, wantName)
			}
		})
	}
}
