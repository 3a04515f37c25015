package integration

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	testutil "k8s.io/kubernetes/test/integration/util"
)

// The fleet of the PendingReasons suite. The H100 nodes are the only ones
// with the product the pods ask for, and they are tainted, so that the
// pods' own node rules decide whether DeviceFit's candidate list (the H100
// nodes with room) meets the nodes a pod may use.
const (
	rTeamX    = "reasons-team-x"    // 8 x A100, team=x
	rNoPlugin = "reasons-no-plugin" // GFD labels of 8 A100s, no nvidia.com/gpu advertised yet, team=y
	rCPU1     = "reasons-cpu-1"
	rCPU2     = "reasons-cpu-2"
	rBig      = "reasons-big" // 16 x A100, team=z: the only node above 8 GPUs
	rPort     = 9000          // the host port a bound pod holds on every H100 node
)

var rH100 = []string{"reasons-h100-1", "reasons-h100-2", "reasons-h100-3"}

// reservedTaint keeps pods off the H100 nodes unless they tolerate it.
var reservedTaint = v1.Taint{Key: "devicefit.io/reserved", Value: "training", Effect: v1.TaintEffectNoSchedule}

var toleratesReserved = []v1.Toleration{{Key: reservedTaint.Key, Operator: v1.TolerationOpEqual, Value: reservedTaint.Value, Effect: reservedTaint.Effect}}

// testPendingReasons: a pending pod's PodScheduled message gives the real
// reason on every node the pod's own node selector, required affinity and
// tolerations admit, under the deployed profile, although DeviceFit's
// PreFilter names only the H100 nodes with room. Each message is asserted
// whole up to the preemption part; the framework writes "didn't satisfy
// plugin(s) [DeviceFit]" only for nodes the pod rules out itself.
func testPendingReasons(t *testing.T, c *cluster) {
	c.createNode(t, nodeSpec{name: rTeamX, labels: withLabel(gfdLabels(modelA100, 8), "team", "x"), devices: devs(gpu, 8)})
	c.createNode(t, nodeSpec{name: rNoPlugin, labels: withLabel(gfdLabels(modelA100, 8), "team", "y")})
	for _, n := range rH100 {
		c.createNode(t, nodeSpec{name: n, labels: gfdLabels(modelH100, 8), devices: devs(gpu, 8), taints: []v1.Taint{reservedTaint}})
	}
	c.createNode(t, nodeSpec{name: rCPU1})
	c.createNode(t, nodeSpec{name: rCPU2})
	c.createNode(t, nodeSpec{name: rBig, labels: withLabel(gfdLabels(modelA100, 16), "team", "z"), devices: devs(gpu, 16)})
	ns := c.NS.Name
	// A device-free pod on each H100 node holds the host port, bound
	// directly (no scheduler decides it).
	for i, n := range rH100 {
		c.createPod(t, ns, podSpec{name: podName("port-holder", i), schedulerName: "none", nodeName: n, hostPort: rPort, tolerations: toleratesReserved})
	}
	c.startSchedulerWithProfiles(t, loadDeployedProfiles(t)...)
	if err := testutil.WaitForNodesInCache(c.Ctx, c.Scheduler, 8); err != nil {
		t.Fatalf("scheduler cache: %v", err)
	}

	h100 := map[string]string{annProducts: modelH100.product}
	teamX := &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
		NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{
			{Key: "team", Operator: v1.NodeSelectorOpIn, Values: []string{"x"}},
		}}},
	}}
	tests := []struct {
		name string
		pod  podSpec
		// want is the message up to the preemption part; preemption, when
		// set, is that part, asserted too.
		want, preemption string
	}{{
		// The case: team=x has A100s only; the H100s are elsewhere.
		name: "node selector",
		pod:  podSpec{devices: devs(gpu, 1), annotations: h100, nodeSelector: map[string]string{"team": "x"}, tolerations: toleratesReserved},
		want: "0/8 nodes are available: 1 node(s) didn't match devicefit.io/products, 7 node(s) didn't match Pod's node affinity/selector.",
	}, {
		name: "required node affinity on labels",
		pod:  podSpec{devices: devs(gpu, 1), annotations: h100, affinity: teamX, tolerations: toleratesReserved},
		want: "0/8 nodes are available: 1 node(s) didn't match devicefit.io/products, 7 node(s) didn't match Pod's node affinity/selector.",
	}, {
		// The pod's tolerations admit every node but the H100s.
		name: "tolerations",
		pod:  podSpec{devices: devs(gpu, 1), annotations: h100},
		want: "0/8 nodes are available: 2 node(s) didn't match devicefit.io/products, 3 Insufficient nvidia.com/gpu, 3 node(s) had untolerated taint(s).",
	}, {
		// team=y's device plugin has not advertised nvidia.com/gpu yet.
		name: "device plugin not advertised",
		pod:  podSpec{devices: devs(gpu, 1), nodeSelector: map[string]string{"team": "y"}},
		want: "0/8 nodes are available: 1 Insufficient nvidia.com/gpu, 3 node(s) had untolerated taint(s), 4 node(s) didn't match Pod's node affinity/selector.",
	}, {
		// NodeAffinity's own PreFilterResult names the node.
		name: "metadata.name",
		pod:  podSpec{devices: devs(gpu, 1), annotations: h100, onlyNode: rTeamX},
		want: "0/8 nodes are available: 1 node(s) didn't match devicefit.io/products, 7 node(s) didn't satisfy plugin(s) [NodeAffinity].",
	}, {
		// The pod may use every node and the list meets them (the H100s),
		// but fails there on the host port: PostFilter gives the nodes the
		// list left out their reasons.
		name: "list met, pod fails on the nodes named",
		pod:  podSpec{devices: devs(gpu, 1), annotations: h100, tolerations: toleratesReserved, hostPort: rPort},
		want: "0/8 nodes are available: 2 node(s) didn't match devicefit.io/products, 3 Insufficient nvidia.com/gpu, 3 node(s) didn't have free ports for the requested pod ports.",
	}, {
		// Too big for every node the pod may use, though the cluster has a
		// bigger one it rules out itself: no node, no preemption can help,
		// and the scheduler must not look for victims on team=x (before,
		// "1 Insufficient nvidia.com/gpu" and "No preemption victims found").
		name:       "too big for the nodes its own rules admit",
		pod:        podSpec{devices: devs(gpu, 1), initDevices: devs(gpu, 9), nodeSelector: map[string]string{"team": "x"}},
		want:       "0/8 nodes are available: requests 9 nvidia.com/gpu; the largest node the pod's node selector, affinity and tolerations admit offers 8.",
		preemption: "preemption: 0/8 nodes are available: 8 Preemption is not helpful for scheduling.",
	}}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.pod.name = podName("pending", i)
			msg := c.waitForUnschedulable(t, c.createPod(t, ns, tt.pod))
			if !strings.HasPrefix(msg, tt.want+" ") {
				t.Errorf("PodScheduled message:\n got %q\nwant %q followed by the preemption part", msg, tt.want)
			}
			if tt.preemption != "" && msg != tt.want+" "+tt.preemption {
				t.Errorf("PodScheduled message:\n got %q\nwant %q", msg, tt.want+" "+tt.preemption)
			}
		})
	}
}

func withLabel(labels map[string]string, key, value string) map[string]string {
	labels[key] = value
	return labels
}
