package integration

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testutil "k8s.io/kubernetes/test/integration/util"
)

// testRequeueAfterDelete: DeviceFit's PreFilter leaves out a node whose
// devices are all taken, so when the only other node turns the pod away for
// a reason of its own (an untolerated taint), the pod is unschedulable by
// DeviceFit and TaintToleration only. NodeResourcesFit never saw the full
// node, so its hint for a departing pod does not apply: DeviceFit's
// AssignedPod/Delete hint must requeue the pod when the pod holding the
// device goes, or it waits for the 5-minute flush (longer than this test
// waits).
func testRequeueAfterDelete(t *testing.T, c *cluster) {
	const full, tainted = "requeue-full", "requeue-tainted"
	c.createNode(t, nodeSpec{name: full, labels: gfdLabels(modelA100, 1), devices: devs(gpu, 1)})
	c.createNode(t, nodeSpec{name: tainted, labels: gfdLabels(modelA100, 1), devices: devs(gpu, 1),
		taints: []v1.Taint{{Key: "devicefit.io/test", Value: "keep-off", Effect: v1.TaintEffectNoSchedule}}})
	c.startSchedulerWithProfiles(t, loadDeployedProfiles(t)...)
	if err := testutil.WaitForNodesInCache(c.Ctx, c.Scheduler, 2); err != nil {
		t.Fatalf("scheduler cache: %v", err)
	}

	holder := c.createPod(t, c.NS.Name, podSpec{name: "holder", devices: devs(gpu, 1)})
	if node := c.waitForBound(t, holder); node != full {
		t.Fatalf("holder bound to %s, want %s (the other node is tainted)", node, full)
	}
	waiter := c.createPod(t, c.NS.Name, podSpec{name: "waiter", devices: devs(gpu, 1)})
	msg := c.waitForUnschedulable(t, waiter)
	// The full node was left out by DeviceFit's list, the other rejected for
	// its taint: the message shows both, and no Insufficient.
	for _, want := range []string{"didn't satisfy plugin(s) [DeviceFit]", "untolerated taint"} {
		if !strings.Contains(msg, want) {
			t.Errorf("waiter's message %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "Insufficient") {
		t.Errorf("waiter's message %q: NodeResourcesFit should not have seen the full node", msg)
	}

	if err := c.ClientSet.CoreV1().Pods(c.NS.Name).Delete(c.Ctx, holder.Name, *metav1.NewDeleteOptions(0)); err != nil {
		t.Fatalf("deleting the holder: %v", err)
	}
	if node := c.waitForNode(t, waiter); node != full {
		t.Errorf("waiter bound to %s, want %s", node, full)
	}
}
