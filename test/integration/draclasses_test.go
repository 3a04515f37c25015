package integration

import (
	"bytes"
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	testutil "k8s.io/kubernetes/test/integration/util"

	"github.com/devicefit/devicefit/internal/nvdra"
	"github.com/devicefit/devicefit/pkg/cli"
	"github.com/devicefit/devicefit/pkg/plugins/devicefit"
)

// gpuV2ClassName is a second class for the same whole GPUs, naming
// nvidia.com/gpu too: how an operator moves from one class to another.
const gpuV2ClassName = "gpu-v2.nvidia.com"

const h100Product = "NVIDIA-H100-80GB-HBM3"

// testDRATwoClasses: with two DeviceClasses naming nvidia.com/gpu, the
// scheduler's resolver serves it by the newer one (the smaller name on a
// tie: gpu-v2.nvidia.com either way), and devicefit must count the GPUs
// once, under that class, and pack as with one class: a 3-GPU pod joins
// the 4-GPU pod's node, so the 8-GPU pod still finds a whole node. Then
// the newer class is deleted: kube-scheduler's cache forgets the name
// (dynamic-resource-allocation v0.37.2), a pod asking nvidia.com/gpu says
// why, kubectl devicefit warns, and updating the remaining class (the
// documented remedy) lets the pod bind.
func testDRATwoClasses(t *testing.T, c *cluster) {
	ns := testutil.WithNewNamespace(t, c.TestContext, "dra-two").NS.Name
	t.Cleanup(func() { c.deletePodsAndWait(t, ns); c.deleteClaims(t, ns) })
	pool := map[string]string{"pool": "dra-two"}
	nodes := []string{"two-a", "two-b", "two-c", "two-d"}
	// Before the slices: the collector counts them as soon as they exist.
	allocatableBefore := metricValue(t, "devicefit_devices", string(gpu), h100Product, "allocatable")
	var slices []*resourceapi.ResourceSlice
	for _, n := range nodes {
		c.createNode(t, nodeSpec{name: n, labels: pool})
		slices = append(slices, nvdra.NodeSlice(n, nvdra.GPUs(0, 8, "NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", "80Gi")...))
	}
	c.createDRA(t, slices, []*resourceapi.DeviceClass{nvdra.Class(gpuV2ClassName, nvdra.WholeGPUs, string(gpu))})
	c.waitForSlicesOn(t, nodes...)

	four := c.createPod(t, ns, podSpec{name: "four", devices: devs(gpu, 4), nodeSelector: pinned(pool, nodes[0])})
	first := c.waitForBound(t, four)
	three := c.createPod(t, ns, podSpec{name: "three", devices: devs(gpu, 3), nodeSelector: pool})
	if second := c.waitForBound(t, three); second != first {
		t.Errorf("two classes naming %s: the 3-GPU pod went to %s, want %s beside the 4-GPU pod", gpu, second, first)
	}
	eight := c.createPod(t, ns, podSpec{name: "eight", devices: devs(gpu, 8), nodeSelector: pool})
	c.waitForBound(t, eight)
	c.checkDRAAllocations(t)
	for _, p := range []*v1.Pod{four, three, eight} {
		if got := c.extendedClaimClass(t, p); got != gpuV2ClassName {
			t.Errorf("pod %s: the scheduler's claim asks DeviceClass %q, want %q (the newer class)", p.Name, got, gpuV2ClassName)
		}
	}
	// The metrics count each GPU once, under the resource the class
	// serving it names: 32 more allocatable H100s, not 64.
	if got := metricValue(t, "devicefit_devices", string(gpu), h100Product, "allocatable") - allocatableBefore; got != 32 {
		t.Errorf("devicefit_devices{%s, %s, allocatable} grew by %v, want 32", gpu, h100Product, got)
	}

	// kubectl devicefit names the serving class, and warns of the name
	// two classes share.
	objects, err := cli.DRAObjects(c.Ctx, c.ClientSet)
	if err != nil {
		t.Fatal(err)
	}
	rows := cli.Asked(cli.ExtendedResources(objects, nil), eight)
	var out bytes.Buffer
	if err := cli.PrintExtendedResources(&out, rows); err != nil {
		t.Fatal(err)
	}
	if want := "nvidia.com/gpu   " + gpuV2ClassName + "   " + gpuV2ClassName + "," + gpuClassName; !strings.Contains(out.String(), want) {
		t.Errorf("kubectl devicefit's extended resources:\n%s\nwant a line with %q", out.String(), want)
	}
	if w := strings.Join(cli.ExtendedWarnings(rows), "\n"); !strings.Contains(w, "nvidia.com/gpu is named by 2 DeviceClasses") {
		t.Errorf("warnings %q: want one for nvidia.com/gpu named by 2 DeviceClasses", w)
	}

	// Deleting the newer class leaves nvidia.com/gpu served by none in the
	// running scheduler.
	api := c.ClientSet.ResourceV1().DeviceClasses()
	if err := api.Delete(c.Ctx, gpuV2ClassName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitForClasses(t, gpuV2ClassName, false)
	late := c.createPod(t, ns, podSpec{name: "late", devices: devs(gpu, 2), nodeSelector: pool})
	msg := c.waitForUnschedulable(t, late)
	want := "0/4 nodes are available: requests 2 nvidia.com/gpu; " + devicefit.UnservedText + ", though DeviceClass " + gpuClassName + " names it"
	if !strings.HasPrefix(msg, want) {
		t.Errorf("pod asking %s with no class serving it:\n got %q\nwant %q at the start", gpu, msg, want)
	}
	late, err = c.ClientSet.CoreV1().Pods(ns).Get(c.Ctx, late.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if objects, err = cli.DRAObjects(c.Ctx, c.ClientSet); err != nil {
		t.Fatal(err)
	}
	rows = cli.Asked(cli.ExtendedResources(objects, []*v1.Pod{late}), late)
	w := strings.Join(cli.ExtendedWarnings(rows), "\n")
	if want := "nvidia.com/gpu is served by no DeviceClass in the running scheduler's view, though DeviceClass " + gpuClassName + " names it (1 pending pods, e.g. " + ns + "/late)"; !strings.Contains(w, want) {
		t.Errorf("warnings %q: want %q", w, want)
	}
	out.Reset()
	if err := cli.PrintExtendedResources(&out, rows); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "<none in the running scheduler>") {
		t.Errorf("kubectl devicefit's extended resources:\n%s\nwant nvidia.com/gpu served by none", out.String())
	}

	// Any update of the remaining class makes the cache map the name
	// again, and DeviceFit's DeviceClass hint retries the pod.
	class, err := api.Get(c.Ctx, gpuClassName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	metav1.SetMetaDataAnnotation(&class.ObjectMeta, "devicefit.io/touched", "serve nvidia.com/gpu again")
	if _, err := api.Update(c.Ctx, class, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitForNode(t, late)
	if got := c.extendedClaimClass(t, late); got != gpuClassName {
		t.Errorf("pod %s: the scheduler's claim asks DeviceClass %q, want %q", late.Name, got, gpuClassName)
	}
	c.checkDRAAllocations(t)
}

// extendedClaimClass is the DeviceClass of the claim the scheduler made for
// the pod's extended resources (status.extendedResourceClaimStatus).
func (c *cluster) extendedClaimClass(t *testing.T, pod *v1.Pod) string {
	t.Helper()
	p, err := c.ClientSet.CoreV1().Pods(pod.Namespace).Get(c.Ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.ExtendedResourceClaimStatus == nil {
		t.Fatalf("pod %s: no extendedResourceClaimStatus", pod.Name)
	}
	claim, err := c.ClientSet.ResourceV1().ResourceClaims(pod.Namespace).Get(c.Ctx, p.Status.ExtendedResourceClaimStatus.ResourceClaimName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range claim.Spec.Devices.Requests {
		if r.Exactly != nil {
			return r.Exactly.DeviceClassName
		}
	}
	return ""
}

// waitForClasses waits until the API server lists class (or no longer
// does); the scheduler's informer follows the same watch.
func (c *cluster) waitForClasses(t *testing.T, class string, present bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(c.Ctx, pollInterval, waitTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := c.ClientSet.ResourceV1().DeviceClasses().Get(ctx, class, metav1.GetOptions{})
		return (err == nil) == present, nil
	})
	if err != nil {
		t.Fatalf("waiting for DeviceClass %s (present %v): %v", class, present, err)
	}
}
