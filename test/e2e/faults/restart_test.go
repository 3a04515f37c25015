package faults

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Sizes of TestSchedulerRestart: per case, 400 pods of one or two
// time-sliced GPUs (600 replicas) on 8 nodes of 128; the scheduler stopped
// once 100 are bound.
const (
	restartPods   = 400
	restartNodes  = 8
	restartStopAt = 100
)

// TestSchedulerRestart: the only scheduler is stopped with pods in flight,
// some assumed in its cache and not yet bound, then a new process starts
// (fast leader election, 4s/3s/1s): SIGTERM (a rollout: it releases the
// lease) or SIGKILL (a crash: the lease has to expire). Nothing is lost,
// nothing is bound twice.
func TestSchedulerRestart(t *testing.T) {
	const group = "restart"
	var nodes []node
	for i := 0; i < restartNodes; i++ {
		nodes = append(nodes, timeSliced(fmt.Sprintf("restart-l40s-%d", i), "NVIDIA-L40S", 46068, 8, 9, 8, 16, "ada-lovelace"))
	}
	registerNodes(t, group, nodes...)
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
			ns := newNamespace(t)
			w := watchPods(t)
			var pods []*v1.Pod
			for i := 0; i < restartPods; i++ {
				pods = append(pods, smallPod(ns, group, fmt.Sprintf("pod-%04d", i), resourceGPU, int64(1+i%2)))
			}
			createClaimTemplate(t, ns)
			pods = interleave(pods, draPods(ns, group, 4, 4))
			created := createPodsInBackground(t, testContext(t, 5*time.Minute), pods)
			w.waitBoundIn(t, ns, restartStopAt, 3*time.Minute, first)

			stopped, boundBefore := time.Now(), w.boundIn(ns)
			tc.stop(first)
			boundAtStop := w.boundIn(ns)
			second := startScheduler(t, cfg, "scheduler-restart-"+tc.name+"-2")
			waitLeader(t, second)
			t.Logf("%s: stopped with %d of %d pods bound (%d when it had exited); the new process leads %.1fs after the stop",
				tc.name, boundBefore, restartPods, boundAtStop, time.Since(stopped).Seconds())

			created()
			checkInvariants(t, w, expect{namespace: ns, alive: []*scheduler{second}, wait: draOrphanWait})
		})
	}
}
