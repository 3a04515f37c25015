package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/devicefit/devicefit/internal/e2eutil"
	"github.com/devicefit/devicefit/internal/nvdra"
	"github.com/devicefit/devicefit/pkg/devices"
)

// DRA in the fault tests: nodes whose GPUs are published in ResourceSlices
// (no device allocatable), tainted so that only the tests' DRA pods go
// there; pods asking nvidia.com/gpu that the DeviceClass serves from the
// slices, and pods with a claim from a ResourceClaimTemplate.
const (
	draTaint     = "faults.devicefit.io/dra"
	draClassName = "gpu.nvidia.com"
	draProduct   = "NVIDIA-H100-80GB-HBM3"
	draTemplate  = "one-gpu"
)

// draOrphanWait bounds the wait for the pods after a scheduler died or
// stopped with DRA-backed pods in flight. A pod whose binding the old
// scheduler had begun keeps the claim that scheduler created for its
// nvidia.com/gpu (PreBind writes the claim, then its allocation, then
// binds). The new scheduler's DynamicResources finds that claim, deletes
// it in PostFilter ("deletion of ResourceClaim completed") and leaves the
// pod unschedulable for the cycle; the deleted claim had no allocation
// yet, so DynamicResources' queueing hint skips the event (upstream,
// v1.37.2) and the pod waits for the flush of unschedulable pods, then
// binds. The scheduler that takes over runs with orphanFlush, so the wait
// is a minute and a half at most, not the default 5 minutes.
const draOrphanWait = 3 * time.Minute

// orphanFlush shortens the flush of unschedulable pods (upstream's
// deprecated but working flag; 5 minutes by default) for the schedulers
// that take over from one that left DRA pods in flight. Only those: the
// churn tests check that a queueing hint, not the flush, requeues a pod
// within a minute, which a short flush would hide.
const orphanFlush = "--pod-max-in-unschedulable-pods-duration=60s"

// draControllers are the kube-controller-manager controllers DRA needs.
var draControllers = []string{"resourceclaim-controller", "garbage-collector-controller"}

// createDeviceClass creates the DeviceClass of the DRA nodes' GPUs.
func createDeviceClass(ctx context.Context) error {
	class := nvdra.Class(draClassName, nvdra.WholeGPUs, string(resourceGPU))
	if _, err := env.CP.Client.ResourceV1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating DeviceClass %s: %w", class.Name, err)
	}
	return nil
}

// registerDRANodes registers n DRA nodes of 8 H100 each in group (names
// prefix-0, …), their slices, and deletes both when the test ends.
func registerDRANodes(t *testing.T, group, prefix string, n int) {
	t.Helper()
	ctx := testContext(t, time.Minute)
	for i := range n {
		name := fmt.Sprintf("%s-%d", prefix, i)
		// No device resource: its GPUs are in the slice.
		if err := (e2eutil.Node{Name: name}).Register(ctx, env.CP.Client, 250, map[string]string{groupLabel: group}); err != nil {
			t.Fatal(err)
		}
		updateNode(t, name, false, func(n *v1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: draTaint, Value: "true", Effect: v1.TaintEffectNoSchedule})
		})
		slice := nvdra.NodeSlice(name, nvdra.GPUs(0, 8, "NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", "81559Mi")...)
		if _, err := env.CP.Client.ResourceV1().ResourceSlices().Create(ctx, slice, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating ResourceSlice %s: %v", slice.Name, err)
		}
		t.Cleanup(func() {
			for _, err := range []error{
				env.CP.Client.ResourceV1().ResourceSlices().Delete(context.Background(), slice.Name, metav1.DeleteOptions{}),
				env.CP.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}),
			} {
				if err != nil && !apierrors.IsNotFound(err) {
					t.Errorf("deleting DRA node %s: %v", name, err)
				}
			}
		})
	}
}

// createClaimTemplate creates the namespace's template of one GPU claim.
func createClaimTemplate(t *testing.T, ns string) {
	t.Helper()
	tmpl := &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: draTemplate},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{
			Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
				Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: draClassName, Count: 1},
			}}},
		}},
	}
	if _, err := env.CP.Client.ResourceV1().ResourceClaimTemplates(ns).Create(testContext(t, 30*time.Second), tmpl, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ResourceClaimTemplate: %v", err)
	}
}

// draPods are the DRA pods of a test in group: extended pods ask one
// nvidia.com/gpu with devicefit.io/products H100, which only the DRA nodes
// serve (from slices); claim pods bring a claim from the template. Both
// tolerate the DRA nodes' taint.
func draPods(ns, group string, extended, claims int) []*v1.Pod {
	var out []*v1.Pod
	tolerate := func(p *v1.Pod) *v1.Pod {
		p.Spec.Tolerations = append(p.Spec.Tolerations, v1.Toleration{Key: draTaint, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule})
		return p
	}
	for i := range extended {
		out = append(out, tolerate(smallPod(ns, group, fmt.Sprintf("dra-gpu-%03d", i), resourceGPU, 1, devices.AnnotationProducts, draProduct)))
	}
	for i := range claims {
		p := smallPod(ns, group, fmt.Sprintf("dra-claim-%03d", i), resourceGPU, 0)
		delete(p.Spec.Containers[0].Resources.Requests, resourceGPU)
		delete(p.Spec.Containers[0].Resources.Limits, resourceGPU)
		p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To(draTemplate)}}
		p.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "gpu"}}
		out = append(out, tolerate(p))
	}
	return out
}

// waitClaimsGone waits until the namespace has no ResourceClaim left: the
// pods are deleted, so kube-controller-manager must have deleted their
// claims (the resourceclaim controller those from templates, the garbage
// collector the scheduler's own), releasing their devices.
func waitClaimsGone(t *testing.T, ns string) {
	t.Helper()
	ctx := testContext(t, 3*time.Minute)
	var left []string
	err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := env.CP.Client.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		left = left[:0]
		for _, c := range list.Items {
			left = append(left, fmt.Sprintf("%s (reserved for %d)", c.Name, len(c.Status.ReservedFor)))
		}
		return len(left) == 0, nil
	})
	if err != nil {
		t.Errorf("claims of deleted pods in %s still there after 2 minutes: %v", ns, first(left, 10))
	}
}

// interleave spreads extra evenly through pods, so that they arrive during
// the stream (and the fault), not after it.
func interleave(pods, extra []*v1.Pod) []*v1.Pod {
	if len(extra) == 0 {
		return pods
	}
	out := make([]*v1.Pod, 0, len(pods)+len(extra))
	every := max(len(pods)/len(extra), 1)
	for i, p := range pods {
		out = append(out, p)
		if i%every == every-1 && len(extra) > 0 {
			out, extra = append(out, extra[0]), extra[1:]
		}
	}
	return append(out, extra...)
}
