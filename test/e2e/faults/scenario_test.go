package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/devicefit/devicefit/internal/e2eutil"
)

// What the stream tests (TestAPIServerRestart, TestLeaderFailover,
// TestSchedulerRestart) share: a group of time-sliced nodes, scheduler
// replicas with one leader, and pods streaming in while the fault strikes.

// timeSlicedNodes are n nodes <prefix>-0, … of gpus GPUs of product,
// each time-sliced into replicas (timeSliced).
func timeSlicedNodes(prefix string, n int, product string, memoryMiB, major, minor, gpus, replicas int, family string) []node {
	out := make([]node, 0, n)
	for i := range n {
		out = append(out, timeSliced(fmt.Sprintf("%s-%d", prefix, i), product, memoryMiB, major, minor, gpus, replicas, family))
	}
	return out
}

// replicas are two schedulers with the same configuration, as the
// manifests' Deployment runs them, once one of them leads.
type replicas struct {
	a, b            *scheduler
	leader, standby *scheduler
	// holder and transitions are the lease's once the leader leads.
	holder      string
	transitions int32
}

// startReplicas starts <prefix>-a and <prefix>-b with cfg and args,
// waits until one of them leads and reads the lease.
func startReplicas(t *testing.T, cfg *e2eutil.SchedulerConfig, prefix string, args ...string) replicas {
	t.Helper()
	r := replicas{a: startScheduler(t, cfg, prefix+"-a", args...), b: startScheduler(t, cfg, prefix+"-b", args...)}
	r.leader, r.standby = waitLeader(t, r.a, r.b), r.a
	if r.leader == r.a {
		r.standby = r.b
	}
	var err error
	r.holder, _, r.transitions, err = lease(testContext(t, 10*time.Second), cfg.Lease)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// streamSpec is a stream of pods for one test case.
type streamSpec struct {
	group string
	// pods small pods (smallPod) of group, pod-0000, …; pod i asks
	// gpus(i) GPUs (nil: 1) with the annotations annotations(i) (nil:
	// none).
	pods        int
	gpus        func(i int) int64
	annotations func(i int) []string
	// draExtended and draClaims DRA pods (draPods), spread among the
	// others; with either, the claim template is created first.
	draExtended, draClaims int
	// timeout bounds the creations (each retried through API outages).
	timeout time.Duration
	// The fault strikes once boundBeforeFault pods are bound, which must
	// take no longer than boundWithin.
	boundBeforeFault int
	boundWithin      time.Duration
}

// stream is a test's namespace with its pods being created, and the watch
// checkInvariants reads.
type stream struct {
	ns string
	w  *podWatch
	// pods are all the stream's pods; dra those of them draPods made.
	pods, dra []*v1.Pod
	// ctx is the creations' context, still usable for the fault.
	ctx context.Context
	// created waits for every creation and fails the test if one failed.
	created func()
}

// startStream creates a namespace and the pod watch, starts creating the
// pods in the background and returns once spec.boundBeforeFault of them
// are bound, by the schedulers alive, which must not exit meanwhile.
func startStream(t *testing.T, spec streamSpec, alive ...*scheduler) stream {
	t.Helper()
	st := stream{ns: newNamespace(t), w: watchPods(t)}
	for i := 0; i < spec.pods; i++ {
		gpus, annotations := int64(1), []string(nil)
		if spec.gpus != nil {
			gpus = spec.gpus(i)
		}
		if spec.annotations != nil {
			annotations = spec.annotations(i)
		}
		st.pods = append(st.pods, smallPod(st.ns, spec.group, fmt.Sprintf("pod-%04d", i), resourceGPU, gpus, annotations...))
	}
	if spec.draExtended+spec.draClaims > 0 {
		createClaimTemplate(t, st.ns)
		st.dra = draPods(st.ns, spec.group, spec.draExtended, spec.draClaims)
		st.pods = interleave(st.pods, st.dra)
	}
	st.ctx = testContext(t, spec.timeout)
	st.created = createPodsInBackground(t, st.ctx, st.pods)
	st.w.waitBoundIn(t, st.ns, spec.boundBeforeFault, spec.boundWithin, alive...)
	return st
}
