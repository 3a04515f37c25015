package integration

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testutil "k8s.io/kubernetes/test/integration/util"
	"k8s.io/utils/ptr"

	dfv1 "github.com/devicefit/devicefit/pkg/apis/config/v1"
	"github.com/devicefit/devicefit/pkg/devices"
)

const (
	draDriver   = "gpu.example.com"
	draClass    = "example-gpu"
	draNode     = "dra-node" // serves example.com/gpu from a ResourceSlice only
	dpNode      = "dp-node"  // serves example.com/gpu from a device plugin (allocatable 1)
	draDevices  = 4
	largestText = "the largest node offers"
)

// testDRAExtendedResource covers KEP-5004 (DRA extended resources, GA in
// 1.37): a DeviceClass with spec.extendedResourceName makes the resource
// servable from ResourceSlices on nodes that show no allocatable for it.
// DeviceFit treats example.com/gpu as a device here, and its "count above
// the largest node" check must then defer to the DynamicResources plugin.
//
// No resource driver runs: the scheduler allocates from the ResourceSlice,
// creates the special ResourceClaim itself in PreBind and binds the pod. Only
// the kubelet would need the driver (to prepare the devices), and there is no
// kubelet here.
func testDRAExtendedResource(t *testing.T, c *cluster) {
	c.createNode(t, nodeSpec{name: dpNode, devices: devs(draGPU, 1)})
	c.createNode(t, nodeSpec{name: draNode})
	c.createNode(t, nodeSpec{name: "cpu"})
	c.createResourceSlice(t, draNode, draDevices)

	args := &dfv1.DeviceFitArgs{
		DeviceResources:  append(devices.DefaultResourcePatterns(), string(draGPU)),
		DeviceNodePolicy: ptr.To(dfv1.DeviceNodePolicyNone),
	}
	c.startScheduler(t, profile(schedulerName, args))
	if err := testutil.WaitForNodesInCache(c.Ctx, c.Scheduler, 3); err != nil {
		t.Fatalf("scheduler cache: %v", err)
	}
	ns := c.NS.Name
	// The scheduler's claims outlive their pods here (no garbage collector).
	t.Cleanup(func() { c.deleteClaims(t, ns) })

	// Control: without a DeviceClass, example.com/gpu is a plain device plugin
	// resource and DeviceFit's check applies: the largest node offers 1.
	early := c.createPod(t, ns, podSpec{name: "before-class", devices: devs(draGPU, 2)})
	msg := c.waitForUnschedulable(t, early)
	if want := "requests 2 example.com/gpu; the largest node offers 1"; !strings.Contains(msg, want) {
		t.Fatalf("before the DeviceClass exists: want %q in the PodScheduled message, got %q", want, msg)
	}

	// The DeviceClass makes the ResourceSlice serve example.com/gpu. DeviceFit's
	// DeviceClass queueing hint requeues the waiting pod, which must now bind
	// to the DRA node.
	c.createDeviceClass(t)
	if node := c.waitForNode(t, early); node != draNode {
		t.Errorf("pod waiting for example.com/gpu: want bound to %s once the DeviceClass exists, got %s", draNode, node)
	}

	// A fresh pod asking for more than the device plugin node offers binds
	// through DRA directly.
	second := c.createPod(t, ns, podSpec{name: "after-class", devices: devs(draGPU, 2)})
	if o := c.waitForOutcomes(t, ns, []string{second.Name})[second.Name]; o.node != draNode {
		t.Errorf("pod requesting 2 example.com/gpu: want bound to %s, got %v", draNode, o)
	}

	// The ResourceSlice is exhausted now (4 devices, 2+2 allocated): a third
	// pod is unschedulable, and for DRA's reasons, not DeviceFit's.
	third := c.createPod(t, ns, podSpec{name: "exhausted", devices: devs(draGPU, 2)})
	msg = c.waitForUnschedulable(t, third)
	if strings.Contains(msg, largestText) {
		t.Errorf("DeviceFit rejected a DRA-served request by node allocatable: %q", msg)
	}

	c.checkClaims(t, ns, map[string]int{early.Name: 2, second.Name: 2})
	// The device plugin node is untouched; DRA-served devices are checked by
	// checkClaims (nodes rightly show no allocatable for them).
	c.checkNoOvercommitExcept(t, draNode)
}

func (c *cluster) createDeviceClass(t *testing.T) {
	t.Helper()
	class := &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: draClass},
		Spec: resourceapi.DeviceClassSpec{
			Selectors: []resourceapi.DeviceSelector{{
				CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", draDriver)},
			}},
			ExtendedResourceName: ptr.To(string(draGPU)),
		},
	}
	if _, err := c.ClientSet.ResourceV1().DeviceClasses().Create(c.Ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating DeviceClass: %v", err)
	}
	t.Cleanup(func() {
		if err := c.ClientSet.ResourceV1().DeviceClasses().Delete(c.Ctx, draClass, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting DeviceClass: %v", err)
		}
	})
}

func (c *cluster) createResourceSlice(t *testing.T, node string, n int) {
	t.Helper()
	slice := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + draDriver},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   draDriver,
			NodeName: ptr.To(node),
			Pool:     resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
		},
	}
	for i := range n {
		slice.Spec.Devices = append(slice.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i)})
	}
	if _, err := c.ClientSet.ResourceV1().ResourceSlices().Create(c.Ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ResourceSlice: %v", err)
	}
	t.Cleanup(func() {
		if err := c.ClientSet.ResourceV1().ResourceSlices().Delete(c.Ctx, slice.Name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting ResourceSlice: %v", err)
		}
	})
}

// checkClaims asserts that each bound pod got a ResourceClaim allocating
// exactly the devices it asked for, and that no device is allocated twice.
func (c *cluster) checkClaims(t *testing.T, ns string, want map[string]int) {
	t.Helper()
	claims, err := c.ClientSet.ResourceV1().ResourceClaims(ns).List(c.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing ResourceClaims: %v", err)
	}
	owners := map[string]string{} // device -> pod
	perPod := map[string]int{}
	for _, claim := range claims.Items {
		if claim.Status.Allocation == nil {
			continue
		}
		owner := "(no owner)"
		for _, ref := range claim.OwnerReferences {
			if ref.Kind == "Pod" {
				owner = ref.Name
			}
		}
		for _, r := range claim.Status.Allocation.Devices.Results {
			key := r.Driver + "/" + r.Pool + "/" + r.Device
			if prev, dup := owners[key]; dup {
				t.Errorf("device %s allocated to both %s and %s", key, prev, owner)
			}
			owners[key] = owner
			perPod[owner]++
		}
	}
	for pod, n := range want {
		if perPod[pod] != n {
			t.Errorf("pod %s: want %d allocated devices, got %d (claims: %d)", pod, n, perPod[pod], len(claims.Items))
		}
		p, err := c.ClientSet.CoreV1().Pods(ns).Get(c.Ctx, pod, getOpts)
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.ExtendedResourceClaimStatus == nil {
			t.Errorf("pod %s: status.extendedResourceClaimStatus not set", pod)
		}
	}
	if len(owners) > draDevices {
		t.Errorf("%d devices allocated, the ResourceSlice has %d", len(owners), draDevices)
	}
}

// checkNoOvercommitExcept runs the invariant on the nodes other than skip.
func (c *cluster) checkNoOvercommitExcept(t *testing.T, skip ...string) {
	t.Helper()
	c.checkNoOvercommitFiltered(t, func(node string, _ v1.ResourceName) bool {
		for _, s := range skip {
			if s == node {
				return false
			}
		}
		return true
	})
}
