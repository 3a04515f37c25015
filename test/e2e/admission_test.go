package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/routing"
)

// The ValidatingAdmissionPolicy devicefit-pod-requests
// (manifests/admission-policy.yaml), as TestMain applied it. Pods are created
// with server-side dry run, which runs admission (policies included) but
// stores nothing, so no pod is bound and the scheduler's metrics stay the
// scenario's.

// policyDenied starts kube-apiserver's text for a denial by the policy. It
// reports only the first validation that fails, so a pod with several kinds
// of errors hears of the first (the scheduler, ParseSelector, names all).
const policyDenied = "ValidatingAdmissionPolicy 'devicefit-pod-requests' with binding 'devicefit-pod-requests' denied request: "

// The tails of the policy's messages.
const (
	productsWant = ": want a comma-separated list of GPU products as in the node label nvidia.com/gpu.product"
	familiesWant = `": want a comma-separated list of GPU families as in the node label nvidia.com/gpu.family`
	computeWant  = `": want a CUDA compute capability major[.minor], e.g. 8.0 or 9.0`
	notQuantity  = `" is not a quantity: want the memory per device, e.g. 40Gi or 81920Mi`
	wholeDevices = "devicefit: device quantities must be whole numbers of devices, from 0 to 2147483648 (1, 2, 8; not 0.5 or 500m); "
)

// annotationCases: a devicefit pod requesting one GPU with these annotations
// is denied with a message containing deny, or admitted when deny is "".
var annotationCases = []struct {
	name string
	ann  map[string]string
	deny string
}{
	// Denied.
	{"unknown key", map[string]string{"devicefit.io/product": "H100-80GB-HBM3"},
		policyDenied + "devicefit: unknown annotation devicefit.io/product (misspelt?); the devicefit.io/ annotations are " +
			"devicefit.io/products, devicefit.io/exclude-products, devicefit.io/min-memory, devicefit.io/families, " +
			"devicefit.io/min-compute, devicefit.io/sharing"},
	{"products empty entry", map[string]string{devices.AnnotationProducts: "H100-80GB-HBM3,,A100-SXM4-80GB"},
		policyDenied + "devicefit: devicefit.io/products: an empty entry" + productsWant},
	{"products trailing comma", map[string]string{devices.AnnotationProducts: "H100-80GB-HBM3,"},
		policyDenied + "devicefit: devicefit.io/products: an empty entry" + productsWant},
	{"products empty", map[string]string{devices.AnnotationProducts: " "},
		policyDenied + "devicefit: devicefit.io/products: an empty entry" + productsWant},
	{"products bad character", map[string]string{devices.AnnotationProducts: "H100/80GB"},
		policyDenied + `devicefit: devicefit.io/products: "H100/80GB"` + productsWant},
	{"products vendor only", map[string]string{devices.AnnotationProducts: "NVIDIA"},
		policyDenied + `devicefit: devicefit.io/products: "NVIDIA"` + productsWant},
	{"exclude-products bad character", map[string]string{devices.AnnotationExcludeProducts: "A100;H100"},
		policyDenied + `devicefit: devicefit.io/exclude-products: "A100;H100"` + productsWant},
	// Both lists are one validation, so the message names both.
	{"both product lists", map[string]string{devices.AnnotationProducts: "H100-80GB-HBM3,", devices.AnnotationExcludeProducts: "A100;H100"},
		policyDenied + `devicefit: devicefit.io/products: an empty entry; devicefit.io/exclude-products: "A100;H100"` + productsWant},
	{"min-memory not a quantity", map[string]string{devices.AnnotationMinMemory: "lots"},
		policyDenied + `devicefit: devicefit.io/min-memory "lots` + notQuantity},
	{"min-memory zero", map[string]string{devices.AnnotationMinMemory: "0"},
		policyDenied + `devicefit: devicefit.io/min-memory "0" must be positive, e.g. 40Gi`},
	{"min-memory negative", map[string]string{devices.AnnotationMinMemory: "-40Gi"},
		policyDenied + `devicefit: devicefit.io/min-memory "-40Gi" must be positive, e.g. 40Gi`},
	{"min-memory beyond 1Pi", map[string]string{devices.AnnotationMinMemory: "2Pi"},
		policyDenied + `devicefit: devicefit.io/min-memory "2Pi" is larger than any device memory (1Pi)`},
	// Parsed, these would make the API server compute 10^exponent; the
	// per-request timeout of admit turns a hang into a failure.
	{"min-memory huge negative exponent", map[string]string{devices.AnnotationMinMemory: "1e-31125899906842625"},
		policyDenied + `devicefit: devicefit.io/min-memory "1e-31125899906842625` + notQuantity},
	{"min-memory huge positive exponent", map[string]string{devices.AnnotationMinMemory: "1E31125899906842625"},
		policyDenied + `devicefit: devicefit.io/min-memory "1E31125899906842625` + notQuantity},
	{"families empty entry", map[string]string{devices.AnnotationFamilies: "hopper,,ampere"},
		policyDenied + `devicefit: devicefit.io/families "hopper,,ampere` + familiesWant},
	{"families bad character", map[string]string{devices.AnnotationFamilies: "ada_lovelace"},
		policyDenied + `devicefit: devicefit.io/families "ada_lovelace` + familiesWant},
	{"min-compute word", map[string]string{devices.AnnotationMinCompute: "eight"},
		policyDenied + `devicefit: devicefit.io/min-compute "eight` + computeWant},
	{"min-compute no minor", map[string]string{devices.AnnotationMinCompute: "8."},
		policyDenied + `devicefit: devicefit.io/min-compute "8.` + computeWant},
	{"min-compute sign", map[string]string{devices.AnnotationMinCompute: "+9"},
		policyDenied + `devicefit: devicefit.io/min-compute "+9` + computeWant},
	{"sharing", map[string]string{devices.AnnotationSharing: "shared"},
		policyDenied + `devicefit: devicefit.io/sharing "shared": want exclusive (whole devices only, never a time-sliced or MPS replica) or any (the default)`},
	// Three validations fail; the API server reports the first.
	{"several errors", map[string]string{"devicefit.io/product": "H100", devices.AnnotationMinMemory: "lots", devices.AnnotationSharing: "shared"},
		policyDenied + "devicefit: unknown annotation devicefit.io/product (misspelt?)"},

	// Admitted.
	{"no annotations", nil, ""},
	{"products full names", map[string]string{devices.AnnotationProducts: "NVIDIA-H100-80GB-HBM3,NVIDIA-A100-SXM4-80GB"}, ""},
	{"products without NVIDIA-", map[string]string{devices.AnnotationProducts: "H100-80GB-HBM3"}, ""},
	{"products glob", map[string]string{devices.AnnotationProducts: "H100*"}, ""},
	{"products star", map[string]string{devices.AnnotationProducts: "*"}, ""},
	{"products -SHARED", map[string]string{devices.AnnotationProducts: "NVIDIA-L4-SHARED"}, ""},
	{"products spaces around commas", map[string]string{devices.AnnotationProducts: " H100-80GB-HBM3 , A100-SXM4-80GB "}, ""},
	{"products NVML spaces", map[string]string{devices.AnnotationProducts: "A100 SXM4 40GB"}, ""},
	{"products MIG slice", map[string]string{devices.AnnotationProducts: "NVIDIA-A100-SXM4-80GB-MIG-3g.40gb"}, ""},
	{"exclude-products", map[string]string{devices.AnnotationExcludeProducts: "NVIDIA-L4"}, ""},
	{"min-memory 40Gi", map[string]string{devices.AnnotationMinMemory: "40Gi"}, ""},
	{"min-memory spaces", map[string]string{devices.AnnotationMinMemory: " 81920Mi "}, ""},
	{"min-memory 1Pi", map[string]string{devices.AnnotationMinMemory: "1Pi"}, ""},
	{"families", map[string]string{devices.AnnotationFamilies: "hopper,ampere"}, ""},
	{"families with dash", map[string]string{devices.AnnotationFamilies: "ada-lovelace"}, ""},
	{"min-compute 8.0", map[string]string{devices.AnnotationMinCompute: "8.0"}, ""},
	{"min-compute 9", map[string]string{devices.AnnotationMinCompute: "9"}, ""},
	{"sharing exclusive", map[string]string{devices.AnnotationSharing: "exclusive"}, ""},
	{"sharing Exclusive", map[string]string{devices.AnnotationSharing: "Exclusive"}, ""},
	{"sharing ANY", map[string]string{devices.AnnotationSharing: "ANY"}, ""},
	{"all six", map[string]string{
		devices.AnnotationProducts: "H100*,A100-SXM4-80GB", devices.AnnotationExcludeProducts: "NVIDIA-L4-SHARED",
		devices.AnnotationMinMemory: "40Gi", devices.AnnotationFamilies: "hopper,ampere",
		devices.AnnotationMinCompute: "8.0", devices.AnnotationSharing: "exclusive"}, ""},
	// Not devicefit's: the prefix is exact, for the policy and the scheduler.
	{"other prefixes", map[string]string{"example.com/products": "H100/80GB", "sub.devicefit.io/product": "x"}, ""},
}

// overheadClass is a RuntimeClass whose pod overhead holds more devices than
// the scheduler counts (2^31): the API accepts it, only the policy refuses.
const overheadClass = "e2e-admission-device-overhead"

// TestAdmissionPolicy: bad pods are denied with the policy's message, good
// ones admitted, and the policy agrees with the scheduler's ParseSelector.
func TestAdmissionPolicy(t *testing.T) {
	requireManifests(t)
	ns := newNamespace(t)
	waitForPolicy(t, ns)

	for _, tc := range annotationCases {
		t.Run("annotations/"+tc.name, func(t *testing.T) {
			p := devicePod(ns, "admission", resourceGPU, 1)
			p.Annotations = tc.ann
			checkAdmission(t, admit(t, p), tc.deny)
			// The policy mirrors ParseSelector: it denies exactly what the
			// scheduler would leave unschedulable, so it never refuses a pod
			// the scheduler takes. (Unknown devicefit.io/ keys are errors in
			// ParseSelector too.)
			if _, err := devices.ParseSelector(tc.ann); (err != nil) != (tc.deny != "") {
				t.Errorf("ParseSelector(%v) = %v, but the policy denied: %v", tc.ann, err, tc.deny != "")
			}
		})
	}

	createOverheadClass(t)
	q := resource.MustParse
	for _, tc := range []struct {
		name   string
		mutate func(*v1.Pod)
		deny   string
	}{
		// kube-apiserver's pod validation runs before validating admission
		// and already refuses these three for containers; the policy's
		// checks for them are defence in depth.
		{"fractional GPU", func(p *v1.Pod) { setDevice(p, resourceGPU, "500m", "500m") },
			`spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "500m": must be an integer`},
		{"request differs from limit", func(p *v1.Pod) { setDevice(p, resourceGPU, "1", "2") },
			`spec.containers[0].resources.requests: Invalid value: "1": must be equal to nvidia.com/gpu limit of 2`},
		{"request without limit", func(p *v1.Pod) { setDevice(p, resourceGPU, "1", "") },
			"spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources"},
		{"fractional overhead", func(p *v1.Pod) { p.Spec.Overhead = v1.ResourceList{resourceGPU: q("500m")} },
			`spec.overhead.limits[nvidia.com/gpu]: Invalid value: "500m": must be an integer`},
		// A pod cannot set its own overhead: the RuntimeClass admission
		// plugin refuses one that no RuntimeClass defines.
		{"overhead without RuntimeClass", func(p *v1.Pod) { p.Spec.Overhead = v1.ResourceList{resourceGPU: q("1")} },
			"pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"},
		// Whole numbers beyond the scheduler's bound pass the API's checks:
		// these only the policy catches.
		{"beyond 2^31 devices", func(p *v1.Pod) { setDevice(p, resourceGPU, "3000000000", "3000000000") },
			policyDenied + wholeDevices + `container "main": limits nvidia.com/gpu=3G, requests nvidia.com/gpu=3G. For a fraction of a GPU`},
		{"RuntimeClass overhead beyond 2^31", func(p *v1.Pod) { p.Spec.RuntimeClassName = ptr.To(overheadClass) },
			policyDenied + wholeDevices + "pod overhead: nvidia.com/gpu=3G."},

		{"MIG slice", func(p *v1.Pod) { setDevice(p, resourceGPU, "", ""); setDevice(p, "nvidia.com/mig-1g.10gb", "1", "1") }, ""},
		{"shared GPU", func(p *v1.Pod) { setDevice(p, resourceGPU, "", ""); setDevice(p, "nvidia.com/gpu.shared", "1", "1") }, ""},
		{"limit only", func(p *v1.Pod) { setDevice(p, resourceGPU, "", "2") }, ""},
		// The policy matches devicefit's pods only (this one opted out of
		// the routing policy, which would make it one).
		{"default-scheduler", func(p *v1.Pod) {
			p.Spec.SchedulerName = v1.DefaultSchedulerName
			p.Labels = map[string]string{routing.OptOutLabel: "false"}
			p.Annotations = map[string]string{"devicefit.io/product": "x", devices.AnnotationMinMemory: "lots"}
			setDevice(p, resourceGPU, "3000000000", "3000000000")
		}, ""},
	} {
		t.Run("pods/"+tc.name, func(t *testing.T) {
			p := devicePod(ns, "admission", resourceGPU, 1)
			tc.mutate(p)
			checkAdmission(t, admit(t, p), tc.deny)
		})
	}

	files, err := filepath.Glob(filepath.Join(s.manifests, "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	examples := 0
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		examples++
		t.Run("examples/"+filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var p v1.Pod
			if err := yaml.UnmarshalStrict(data, &p); err != nil || p.Kind != "Pod" {
				t.Fatalf("%s: want one Pod: kind %q, %v", f, p.Kind, err)
			}
			p.Namespace = ns
			checkAdmission(t, admit(t, &p), "")
			if _, err := devices.ParseSelector(p.Annotations); err != nil {
				t.Errorf("the scheduler refuses the example's annotations: %v", err)
			}
		})
	}
	if examples == 0 {
		t.Errorf("no example pods in %s", filepath.Join(s.manifests, "examples"))
	}
}

// TestAdmissionPolicyUpdate: on update the policy checks the devicefit.io/
// annotations the update changes, and nothing else. The pod is real (dry
// run would not give the update an old object) and asks for a product that
// exists nowhere, so the scheduler, if it runs, leaves it Pending.
func TestAdmissionPolicyUpdate(t *testing.T) {
	requireManifests(t)
	ns := newNamespace(t)
	waitForPolicy(t, ns)
	pods := s.cp.Client.CoreV1().Pods(ns)
	p := devicePod(ns, "never-scheduled", resourceGPU, 1, devices.AnnotationProducts, "NVIDIA-NOSUCH-GPU")
	if err := createPods(testContext(t, 30*time.Second), []*v1.Pod{p}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Never bound, so deleted at once.
		if err := pods.Delete(context.Background(), p.Name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting pod %s/%s: %v", ns, p.Name, err)
		}
	})

	// Merge patches (admitted as UPDATE): no resourceVersion to conflict
	// with the scheduler's status writes.
	for _, step := range []struct{ name, patch, deny string }{
		{"unrelated label", `{"metadata":{"labels":{"e2e.devicefit.io/updated":"true"}}}`, ""},
		{"bad min-memory", `{"metadata":{"annotations":{"devicefit.io/min-memory":"lots"}}}`,
			policyDenied + `devicefit: devicefit.io/min-memory "lots` + notQuantity},
		{"good min-memory", `{"metadata":{"annotations":{"devicefit.io/min-memory":"40Gi"}}}`, ""},
	} {
		t.Run(step.name, func(t *testing.T) {
			_, err := pods.Patch(testContext(t, 10*time.Second), p.Name, types.MergePatchType, []byte(step.patch), metav1.PatchOptions{})
			checkAdmission(t, err, step.deny)
		})
	}
	got, err := pods.Get(testContext(t, 10*time.Second), p.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["e2e.devicefit.io/updated"] != "true" || got.Annotations[devices.AnnotationMinMemory] != "40Gi" {
		t.Errorf("after the updates: labels %v, annotations %v", got.Labels, got.Annotations)
	}
}

// admit creates p with server-side dry run, with a timeout of its own: an
// expression that took the API server forever fails its case only.
func admit(t *testing.T, p *v1.Pod) error {
	return createPods(testContext(t, 10*time.Second), []*v1.Pod{p}, metav1.DryRunAll)
}

// checkAdmission: err is nil when deny is "", else contains deny.
func checkAdmission(t *testing.T, err error, deny string) {
	t.Helper()
	switch {
	case deny == "" && err != nil:
		t.Errorf("refused, want admitted: %v", err)
	case deny != "" && err == nil:
		t.Errorf("admitted, want refused with %q", deny)
	case deny != "" && !strings.Contains(err.Error(), deny):
		t.Errorf("refused with\n\t%v\nwant a message containing\n\t%s", err, deny)
	}
}

// setDevice sets the container's request and limit of a device resource
// ("" leaves it unset).
func setDevice(p *v1.Pod, name v1.ResourceName, request, limit string) {
	r := &p.Spec.Containers[0].Resources
	delete(r.Requests, name)
	delete(r.Limits, name)
	if request != "" {
		r.Requests[name] = resource.MustParse(request)
	}
	if limit != "" {
		r.Limits[name] = resource.MustParse(limit)
	}
}

// waitForPolicy waits until the API server enforces the policy: it loads
// policies from an informer, a moment after they are applied.
func waitForPolicy(t *testing.T, ns string) {
	t.Helper()
	p := devicePod(ns, "policy-probe", resourceGPU, 1, "devicefit.io/product", "x")
	var err error
	if wait.PollUntilContextTimeout(testContext(t, 30*time.Second), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err = createPods(ctx, []*v1.Pod{p}, metav1.DryRunAll)
		return err != nil && strings.Contains(err.Error(), policyDenied), nil
	}) != nil {
		t.Fatalf("the policy is not enforced: a pod with an unknown devicefit.io/ annotation got %v", err)
	}
}

// createOverheadClass creates the RuntimeClass overheadClass for the test.
// (One with a fractional device overhead is already refused by the API.)
func createOverheadClass(t *testing.T) {
	t.Helper()
	ctx := testContext(t, 30*time.Second)
	classes := s.cp.Client.NodeV1().RuntimeClasses()
	rc := &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: overheadClass},
		Handler:    "runc",
		Overhead:   &nodev1.Overhead{PodFixed: v1.ResourceList{resourceGPU: resource.MustParse("3000000000")}},
	}
	if _, err := classes.Create(ctx, rc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = classes.Delete(context.Background(), overheadClass, metav1.DeleteOptions{}) })

	rc.Name, rc.Overhead.PodFixed[resourceGPU] = "e2e-admission-fractional-overhead", resource.MustParse("500m")
	_, err := classes.Create(ctx, rc, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	checkAdmission(t, err, `overhead.limits[nvidia.com/gpu]: Invalid value: "500m": must be an integer`)
}
