package faults

import (
	"testing"
	"time"
)

// TestSchedulerRestart: the only scheduler is stopped with pods in flight,
// some assumed in its cache and not yet bound, then a new process starts
// (fast leader election, 4s/3s/1s): SIGTERM (a rollout: it releases the
// lease) or SIGKILL (a crash: the lease has to expire). Nothing is lost,
// nothing is bound twice.
func TestSchedulerRestart(t *testing.T) {
	// Per case, 400 pods of one or two time-sliced GPUs (600 replicas) on
	// 8 nodes of 128, and 8 DRA pods; the scheduler stopped once 100 are
	// bound.
	stream := streamSpec{
		group: "restart", pods: 400, timeout: 5 * time.Minute,
		gpus:        func(i int) int64 { return int64(1 + i%2) },
		draExtended: 4, draClaims: 4,
		boundBeforeFault: 100, boundWithin: 3 * time.Minute,
	}
	group := stream.group
	registerNodes(t, group, timeSlicedNodes("restart-l40s", 8, "NVIDIA-L40S", 46068, 8, 9, 8, 16, "ada-lovelace")...)
	// 16 H100 in slices for the DRA pods of each case.
	registerDRANodes(t, group, "restart-dra", 2)
	cfg := schedulerConfig(t, "restart", fastLease)

	for _, tc := range []struct {
		name string
		stop func(*scheduler)
	}{
		{"SIGTERM", func(sc *scheduler) { sc.Process.Stop(30 * time.Second) }},
		{"SIGKILL", func(sc *scheduler) { sc.Process.Kill() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first := startScheduler(t, cfg, "scheduler-restart-"+tc.name+"-1")
			st := startStream(t, stream, first)

			stopped, boundBefore := time.Now(), st.w.boundIn(st.ns)
			tc.stop(first)
			boundAtStop := st.w.boundIn(st.ns)
			second := startScheduler(t, cfg, "scheduler-restart-"+tc.name+"-2", orphanFlush)
			waitLeader(t, second)
			t.Logf("%s: stopped with %d of %d pods bound (%d when it had exited); the new process leads %.1fs after the stop",
				tc.name, boundBefore, stream.pods, boundAtStop, time.Since(stopped).Seconds())

			st.created()
			checkInvariants(t, st.w, expect{namespace: st.ns, alive: []*scheduler{second}, wait: draOrphanWait})
		})
	}
}
