package faults

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/devicefit/devicefit/pkg/devices"
)

// TestLeaderFailover: two scheduler replicas, as the manifests' Deployment
// runs them, with leader election shortened to 4s/3s/1s; 2000 device pods
// stream in; the leader is killed with SIGKILL (no lease release, bindings
// in flight lost) once some hundreds are bound. The standby takes the lease
// and binds the rest; every pod ends bound exactly once. The takeover time
// is logged: kill → new holder in the lease (its acquireTime) → first
// binding seen after that.
func TestLeaderFailover(t *testing.T) {
	// 2000 pods of one time-sliced GPU on 24 nodes of 128 replicas, 12 L4
	// and 12 A10G. A third of the pods want L4, a third A10G, a third
	// either: however the scheduler spreads the last third, each product
	// can hold all that may come to it (667 + 666 <= 1536), so every pod is
	// schedulable by construction. The leader is killed once 500 are bound.
	stream := streamSpec{
		group: "failover", pods: 2000, timeout: 10 * time.Minute,
		annotations: func(i int) []string {
			switch i % 3 {
			case 0:
				return []string{devices.AnnotationProducts, "NVIDIA-L4"}
			case 1:
				return []string{devices.AnnotationProducts, "NVIDIA-A10G-SHARED"}
			}
			return nil
		},
		// 24 pods of the stream go to the DRA nodes (32 GPUs): half asking
		// nvidia.com/gpu, half with a claim.
		draExtended: 12, draClaims: 12,
		boundBeforeFault: 500, boundWithin: 4 * time.Minute,
	}
	const nodesPerProduct = 12
	group := stream.group
	registerNodes(t, group, append(
		timeSlicedNodes("failover-l4", nodesPerProduct, "NVIDIA-L4", 23034, 8, 9, 8, 16, "ada-lovelace"),
		timeSlicedNodes("failover-a10g", nodesPerProduct, "NVIDIA-A10G", 23028, 8, 6, 8, 16, "ampere")...)...)
	// DRA nodes (4 x 8 H100 in slices) and, among the stream, pods that
	// only they can serve: DRA-backed nvidia.com/gpu and claims.
	registerDRANodes(t, group, "failover-dra", 4)
	cfg := schedulerConfig(t, "failover", fastLease)
	r := startReplicas(t, cfg, "scheduler-failover", orphanFlush)
	leader, standby, oldHolder := r.leader, r.standby, r.holder
	t.Logf("%s leads (lease holder %s, %d transitions so far); %s stands by", leader.Name, oldHolder, r.transitions, standby.Name)

	st := startStream(t, stream, leader, standby)
	ns, w, ctx := st.ns, st.w, st.ctx
	killed := time.Now()
	leader.Process.Kill()
	boundAtKill := w.boundIn(ns)

	// The new holder, as soon as the lease says so.
	var newHolder string
	var acquired time.Time
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := standby.Process.Exited(); err != nil {
			return false, err
		}
		h, at, _, err := lease(ctx, cfg.Lease)
		if err != nil {
			return false, nil
		}
		newHolder, acquired = h, at
		return h != "" && h != oldHolder, nil
	})
	if err != nil {
		t.Fatalf("after killing %s, the lease still names %s: %v", leader.Name, oldHolder, err)
	}
	leaseSeen := time.Now()
	// The first binding after the new holder acquired the lease.
	var firstNew binding
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		for _, b := range w.bindings() {
			if b.seen.After(acquired) {
				firstNew = b
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no binding within a minute of %s taking the lease: %v", newHolder, err)
	}
	late := 0 // bindings of the killed leader that completed after the kill
	for _, b := range w.bindings() {
		if b.seen.After(killed) && !b.seen.After(acquired) {
			late++
		}
	}
	t.Logf("takeover: %s killed with %d of %d pods bound; lease taken by %s %.2fs after the kill (seen %.2fs after); "+
		"first binding by the new leader (%s on %s) %.2fs after the kill; %d bindings in flight completed between kill and takeover",
		leader.Name, boundAtKill, stream.pods, newHolder, acquired.Sub(killed).Seconds(), leaseSeen.Sub(killed).Seconds(),
		firstNew.pod, firstNew.node, firstNew.seen.Sub(killed).Seconds(), late)
	if ok, err := standby.isLeader(ctx); err != nil || !ok {
		t.Errorf("%s does not say it leads (leader_election_master_status): %v, %v", standby.Name, ok, err)
	}

	st.created()
	checkInvariants(t, w, expect{namespace: ns, alive: []*scheduler{standby}, wait: draOrphanWait})
	t.Logf("all %d pods bound %.1fs after the kill", len(st.pods), time.Since(killed).Seconds())

	// The DRA pods leave; kube-controller-manager deletes their claims, so
	// no device stays held for a pod that is gone.
	var draNames []string
	for _, p := range st.dra {
		draNames = append(draNames, p.Name)
	}
	deletePods(t, ns, draNames...)
	waitClaimsGone(t, ns)

	// The new leader's device gauges, from its own caches, count every
	// device bound, by either leader (one per pod).
	for _, product := range []struct{ name, nodes string }{
		{"NVIDIA-L4-SHARED", "failover-l4-"}, {"NVIDIA-A10G-SHARED", "failover-a10g-"},
	} {
		bound := 0
		for _, b := range w.bindings() {
			if strings.HasPrefix(b.pod, ns+"/") && strings.HasPrefix(b.node, product.nodes) {
				bound++
			}
		}
		waitSeesDevices(t, standby, resourceGPU, product.name, "allocated", float64(bound))
	}
}
