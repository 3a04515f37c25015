package integration

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	testutil "k8s.io/kubernetes/test/integration/util"

	"github.com/devicefit/devicefit/internal/nvdra"
)

// testDRAShares: fractional GPUs through DRA consumable capacity
// (KEP-5075). Two nodes with two shared GPUs each; two claims for half a
// GPU, then one for two whole GPUs. devicefit puts the second half on the
// GPU the first one half used, so the other node keeps both GPUs whole for
// the two-GPU claim. The upstream default profile spreads the halves (its
// LeastAllocated sees the first pod's CPU), one per node, and no node has
// two untouched GPUs left: the two-GPU claim stays pending.
//
// Node a carries a PreferNoSchedule taint, so every upstream scorer
// (TaintToleration) prefers b for the second half: only DevicePack's
// packing can bring it to a. (Without it the two nodes would tie, and
// v1.37.2 breaks ties deterministically when no extender runs: Randomizer
// is set only for extenders, so a test of the choice would pass by the
// order of the nodes.)
func testDRAShares(t *testing.T, c *cluster) {
	run := func(t *testing.T, sched, prefix string) (halves []string, wholeNode string) {
		ns := testutil.WithNewNamespace(t, c.TestContext, prefix).NS.Name
		t.Cleanup(func() { c.deletePodsAndWait(t, ns); c.deleteClaims(t, ns) })
		pool := map[string]string{"pool": prefix}
		a, b := prefix+"-a", prefix+"-b"
		var sl []*resourceapi.ResourceSlice
		soft := []v1.Taint{{Key: "example.com/prefer-elsewhere", Effect: v1.TaintEffectPreferNoSchedule}}
		for _, n := range []string{a, b} {
			spec := nodeSpec{name: n, labels: pool}
			if n == a {
				spec.taints = soft
			}
			c.createNode(t, spec)
			sl = append(sl, nvdra.NodeSlice(n, nvdra.SharedGPUs(0, 2, "NVIDIA A100-SXM4-80GB", "Ampere", "8.0.0", "80Gi")...))
		}
		c.createDRA(t, sl, nil)
		c.waitForSlicesOn(t, a, b)
		// 16 cores each, so that LeastAllocated sees the difference; the
		// first pod is pinned to a, the second is the scheduler's choice.
		cpu := map[v1.ResourceName]int64{v1.ResourceCPU: 16}
		for i := range 2 {
			name := podName("half", i)
			c.createClaim(t, nvdra.ShareClaim(ns, name, gpuClassName, 500))
			sel := pool
			if i == 0 {
				sel = pinned(pool, a)
			}
			p := c.createPod(t, ns, podSpec{name: name, schedulerName: sched, devices: cpu, claims: []string{name}, nodeSelector: sel})
			halves = append(halves, c.waitForBound(t, p))
		}
		c.createClaim(t, nvdra.Claim(ns, "two", gpuClassName, 2))
		p := c.createPod(t, ns, podSpec{name: "two", schedulerName: sched, claims: []string{"two"}, nodeSelector: pool})
		wholeNode = c.waitForOutcomes(t, ns, []string{p.Name})[p.Name].node
		c.checkDRAAllocations(t)
		return halves, wholeNode
	}
	t.Run("devicefit", func(t *testing.T) {
		halves, whole := run(t, schedulerName, "dra-shares")
		if halves[0] != halves[1] || whole == "" || whole == halves[0] {
			t.Errorf("devicefit: half-GPU claim pods on %v (want one node), two-GPU claim pod on %q (want the other node)", halves, whole)
		}
		// Both halves on one GPU: the allocator's first fit on the node.
		if got := c.sharedDevicesInUse(t, "dra-shares-a"); got != 1 {
			t.Errorf("devicefit: %d shared GPUs in use on dra-shares-a, want 1 (two halves on one)", got)
		}
	})
	t.Run("upstream default spreads the halves and strands the two-GPU claim", func(t *testing.T) {
		halves, whole := run(t, spreadSchedulerName, "dra-shares-spread")
		if halves[0] == halves[1] || whole != "" {
			t.Errorf("upstream: half-GPU claim pods on %v (want two nodes), two-GPU claim pod on %q (want pending)", halves, whole)
		}
	})
}

// sharedDevicesInUse counts the devices of node that allocated claims hold
// a share of.
func (c *cluster) sharedDevicesInUse(t *testing.T, node string) int {
	t.Helper()
	inv, claims := c.draState(t)
	inUse := map[string]bool{}
	for _, claim := range claims {
		if claim.Status.Allocation == nil {
			continue
		}
		for _, r := range claim.Status.Allocation.Devices.Results {
			if d := findDevice(inv, r.Driver, r.Pool, r.Device); d != nil && d.Shared() && r.Pool == node {
				inUse[r.Device] = true
			}
		}
	}
	return len(inUse)
}
