// Package faults injects faults into devicefit running end to end, and
// checks after each that the scheduler kept its promises: it never binds
// more devices (or CPU, memory, pods) than a node has, never binds a pod
// twice, loses no pod, and places nothing on devices that the node's new
// state rules out.
//
// As test/e2e, it runs the built binaries of bin/: etcd and kube-apiserver
// on 127.0.0.1 (internal/controlplane), manifests/ applied with bin/kubectl
// on the prometheus-operator CRDs, bin/devicefit-scheduler with the
// KubeSchedulerConfiguration of the applied ConfigMap and the identity of the
// applied ServiceAccount, and simulated GPU nodes (no kubelet: pods are
// bound, never run). It has a control plane of its own, not test/e2e's,
// because it stops and kills processes (the apiserver among them) and
// several schedulers compete for its lease.
//
// Run it with `make test-faults`, which builds the binaries and passes
// DEVICEFIT_BIN_DIR and PROMETHEUS_OPERATOR_CRDS (see test/e2e). It takes a
// few minutes on 2 cores; no assertion is on timing, every wait is bounded.
//
// The tests, in file order:
//   - apiserver_test.go  TestAPIServerRestart: kube-apiserver stopped and started again on the same etcd mid-stream
//   - checker_test.go    TestInvariantCheckerCatchesViolations: the checker names every kind of violation
//   - churn_test.go      TestDeviceChurn: unhealthy GPU, deleted node, relabelled product, MIG switch, repairs
//   - failover_test.go   TestLeaderFailover: two schedulers, the leader killed with SIGKILL mid-stream; the takeover time
//   - restart_test.go    TestSchedulerRestart: the only scheduler stopped (SIGTERM) or killed (SIGKILL) with pods in flight
//
// and what they share:
//   - invariants_test.go checkInvariants, the one checker every test ends with, and the pod watch it reads
//   - scenario_test.go   the stream tests' setup: time-sliced node groups, two replicas and their leader, pods streaming in
//   - scheduler_test.go  scheduler processes, the lease, the scheduler's own /metrics (leader, queue, device gauges)
//   - fleet_test.go      node groups, pods, namespaces
//   - dra_test.go        DRA nodes (ResourceSlices), DRA-backed and claim pods, kube-controller-manager
//
// Each test registers nodes of its own group (label faults.devicefit.io/group)
// and its pods select that group, so that the tests' pods never compete for
// nodes; each starts and stops its own scheduler processes; each deletes its
// pods and nodes when it ends. The invariants are checked over the whole
// cluster.
package faults

import (
	"testing"

	"github.com/devicefit/devicefit/internal/e2eutil"
)

// env is what TestMain started.
var env e2eutil.Env

// TestMain starts the package's control plane with the manifests applied.
// DRA needs the resourceclaim controller (claims from templates, claims of
// pods that are gone released) and the garbage collector (the scheduler's
// claims for DRA-backed extended resources deleted with their pods); the
// DeviceClass serves nvidia.com/gpu from the DRA nodes' slices
// (dra_test.go, registerDRANodes).
func TestMain(m *testing.M) {
	env.Main(m, e2eutil.Options{
		Name:             "test/e2e/faults",
		Target:           "make test-faults",
		InstallManifests: true,
		Controllers:      draControllers,
		Setup:            createDeviceClass,
	})
}
