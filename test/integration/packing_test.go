package integration

import (
	"os"
	"testing"

	v1 "k8s.io/api/core/v1"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	testutil "k8s.io/kubernetes/test/integration/util"
	"k8s.io/utils/ptr"

	"github.com/devicefit/devicefit/pkg/apis/config/scheme"
	dfv1 "github.com/devicefit/devicefit/pkg/apis/config/v1"
)

// deployedConfig is the profile the local run and deployments use.
const deployedConfig = "../../manifests/scheduler-config.yaml"

// spreadSchedulerName is the upstream default profile plus DeviceFit: its
// NodeResourcesFit LeastAllocated scoring spreads pods.
const spreadSchedulerName = "upstream-spread"

// loadDeployedProfiles decodes manifests/scheduler-config.yaml as the
// scheduler binary does (scheme defaults included).
func loadDeployedProfiles(t *testing.T) []schedconfig.KubeSchedulerProfile {
	t.Helper()
	data, err := os.ReadFile(deployedConfig)
	if err != nil {
		t.Fatal(err)
	}
	obj, _, err := scheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		t.Fatalf("decoding %s: %v", deployedConfig, err)
	}
	return obj.(*schedconfig.KubeSchedulerConfiguration).Profiles
}

// testPacking runs the deployed devicefit profile beside the upstream
// default one, on two 8-GPU nodes and one CPU node. Four 1-GPU jobs then one
// 8-GPU job: spreading puts two 1-GPU jobs on each GPU node and strands the
// 8-GPU job; devicefit packs the four onto one node and the 8-GPU job fits.
func testPacking(t *testing.T, c *cluster) {
	const gpuA, gpuB, cpuNode = "pack-a", "pack-b", "pack-cpu"
	for _, n := range []nodeSpec{
		{name: gpuA, labels: gfdLabels(modelA100, 8), devices: devs(gpu, 8)},
		{name: gpuB, labels: gfdLabels(modelA100, 8), devices: devs(gpu, 8)},
		{name: cpuNode},
	} {
		c.createNode(t, n)
	}
	deployed := loadDeployedProfiles(t)
	spread := configtestingProfile(t, spreadSchedulerName)
	c.startSchedulerWithProfiles(t, append(deployed, spread)...)
	if err := testutil.WaitForNodesInCache(c.Ctx, c.Scheduler, 3); err != nil {
		t.Fatalf("scheduler cache: %v", err)
	}

	// run submits the jobs one by one to profile sched and returns where
	// each small job landed and whether the 8-GPU job was bound.
	run := func(t *testing.T, sched string) (map[string]int, bool) {
		ns := testutil.WithNewNamespace(t, c.TestContext, "pack").NS.Name
		t.Cleanup(func() { c.deletePodsAndWait(t, ns) })
		perNode := map[string]int{}
		// 16 of the nodes' 128 cores each: enough for LeastAllocated to see a
		// difference (tiny requests round to equal scores and tie).
		small := map[v1.ResourceName]int64{gpu: 1, v1.ResourceCPU: 16}
		for i := range 4 {
			p := c.createPod(t, ns, podSpec{name: podName("one", i), schedulerName: sched, devices: small})
			perNode[c.waitForBound(t, p)]++
		}
		big := c.createPod(t, ns, podSpec{name: "eight", schedulerName: sched, devices: devs(gpu, 8)})
		o := c.waitForOutcomes(t, ns, []string{big.Name})[big.Name]
		return perNode, o.node != ""
	}

	t.Run("devicefit packs and the 8-GPU job fits", func(t *testing.T) {
		perNode, bigBound := run(t, schedulerName)
		if len(perNode) != 1 || !bigBound {
			t.Errorf("devicefit: 1-GPU jobs per node %v (want all four on one node), 8-GPU job bound: %v (want true)", perNode, bigBound)
		}
	})
	t.Run("upstream default spreads and strands the 8-GPU job", func(t *testing.T) {
		perNode, bigBound := run(t, spreadSchedulerName)
		if perNode[gpuA] != 2 || perNode[gpuB] != 2 || bigBound {
			t.Errorf("upstream: 1-GPU jobs per node %v (want 2 and 2), 8-GPU job bound: %v (want false)", perNode, bigBound)
		}
	})
	t.Run("deviceNodePenalty keeps CPU pods off GPU nodes", func(t *testing.T) {
		ns := testutil.WithNewNamespace(t, c.TestContext, "prefer").NS.Name
		t.Cleanup(func() { c.deletePodsAndWait(t, ns) })
		for i := range 5 {
			p := c.createPod(t, ns, podSpec{name: podName("cpu", i), devices: devs(v1.ResourceCPU, 2)})
			if node := c.waitForBound(t, p); node != cpuNode {
				t.Errorf("CPU pod %s bound to %s, want %s", p.Name, node, cpuNode)
			}
		}
	})
}

// configtestingProfile is the upstream default profile plus DeviceFit, named
// name, converted like the other test profiles.
func configtestingProfile(t *testing.T, name string) schedconfig.KubeSchedulerProfile {
	t.Helper()
	return v1ToInternal(t, profile(name, &dfv1.DeviceFitArgs{DeviceNodePolicy: ptr.To(dfv1.DeviceNodePolicyNone)}))
}
