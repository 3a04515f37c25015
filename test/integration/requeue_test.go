package integration

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testutil "k8s.io/kubernetes/test/integration/util"
)

// testRequeueAfterDelete: DeviceFit's PreFilter leaves out a node whose
// devices are all taken, so when the only other node turns the pod away for
// a reason of its own (a host port another pod holds), the pod is
// unschedulable by the list and NodePorts only. The host port keeps
// DevicePack from naming a shortlist, so DevicePack returns DeviceFit's
// list whole (shared.ListCarrier), and the framework names DevicePack, not
// DeviceFit, among the plugins that rejected the pod. NodeResourcesFit's
// Filter did not run in the cycle on the full node (DeviceFit's PostFilter
// ran it afterwards only to give the node its reason), so its hint for a
// departing pod does not apply: the carrier's AssignedPod/Delete event must
// requeue the pod when the pod holding the device goes, or it waits for the
// 5-minute flush (longer than this test waits).
func testRequeueAfterDelete(t *testing.T, c *cluster) {
	const full, ports, port = "requeue-full", "requeue-ports", 9100
	c.createNode(t, nodeSpec{name: full, labels: gfdLabels(modelA100, 1), devices: devs(gpu, 1)})
	c.createNode(t, nodeSpec{name: ports, labels: gfdLabels(modelA100, 1), devices: devs(gpu, 1)})
	c.createPod(t, c.NS.Name, podSpec{name: "port-holder", schedulerName: "none", nodeName: ports, hostPort: port})
	c.startSchedulerWithProfiles(t, loadDeployedProfiles(t)...)
	if err := testutil.WaitForNodesInCache(c.Ctx, c.Scheduler, 2); err != nil {
		t.Fatalf("scheduler cache: %v", err)
	}

	holder := c.createPod(t, c.NS.Name, podSpec{name: "holder", devices: devs(gpu, 1), onlyNode: full})
	if node := c.waitForBound(t, holder); node != full {
		t.Fatalf("holder bound to %s, want %s", node, full)
	}
	waiter := c.createPod(t, c.NS.Name, podSpec{name: "waiter", devices: devs(gpu, 1), hostPort: port})
	msg := c.waitForUnschedulable(t, waiter)
	// The full node was left out by DeviceFit's list, the other rejected for
	// the port; PostFilter gave the full node its reason.
	const want = "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) didn't have free ports for the requested pod ports. "
	if !strings.HasPrefix(msg, want) {
		t.Errorf("waiter's message:\n got %q\nwant %q followed by the preemption part", msg, want)
	}

	if err := c.ClientSet.CoreV1().Pods(c.NS.Name).Delete(c.Ctx, holder.Name, *metav1.NewDeleteOptions(0)); err != nil {
		t.Fatalf("deleting the holder: %v", err)
	}
	if node := c.waitForNode(t, waiter); node != full {
		t.Errorf("waiter bound to %s, want %s", node, full)
	}
}
