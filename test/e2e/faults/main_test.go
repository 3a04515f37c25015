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
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/devicefit/devicefit/internal/controlplane"
	"github.com/devicefit/devicefit/internal/e2eutil"
)

// suite is the state the whole package shares.
type suite struct {
	binDir string
	dir    string // the control plane's directory: logs, kubeconfigs, certificates
	cp     *controlplane.ControlPlane
}

var s suite

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	for _, env := range []string{e2eutil.BinDirEnv, e2eutil.CRDDirEnv} {
		if os.Getenv(env) == "" {
			fmt.Fprintf(os.Stderr, "test/e2e/faults: %s is not set. These tests run the built binaries (bin/)\n"+
				"test/e2e/faults: with the manifests applied on the prometheus-operator CRDs: run\n"+
				"test/e2e/faults: `make test-faults`, which builds and provides all of them.\n", env)
			return 1
		}
	}
	s.binDir = os.Getenv(e2eutil.BinDirEnv)
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		fmt.Fprintln(os.Stderr, "test/e2e/faults:", err)
		return 1
	}
	manifests := filepath.Join(root, "manifests")
	if m := os.Getenv(e2eutil.ManifestsEnv); m != "" {
		manifests = m
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp, dir, err := e2eutil.StartControlPlane(ctx, "e2e-faults", s.binDir)
	s.dir = dir
	if err != nil {
		fmt.Fprintln(os.Stderr, "test/e2e/faults:", err)
		return 1
	}
	s.cp = cp
	kubectl := e2eutil.Kubectl{Binary: filepath.Join(s.binDir, "kubectl"), Kubeconfig: cp.AdminKubeconfig}
	objects, err := e2eutil.InstallManifests(ctx, kubectl, os.Getenv(e2eutil.CRDDirEnv), manifests)
	if err != nil {
		cp.Stop()
		fmt.Fprintf(os.Stderr, "test/e2e/faults: installing %s: %v\ntest/e2e/faults: logs kept in %s\n", manifests, err, dir)
		return 1
	}
	fmt.Printf("test/e2e/faults: %d objects of %s applied\n", len(objects), manifests)
	// DRA needs the resourceclaim controller (claims from templates, claims
	// of pods that are gone released) and the garbage collector (the
	// scheduler's claims for DRA-backed extended resources deleted with
	// their pods); the DeviceClass serves nvidia.com/gpu from the DRA nodes'
	// slices (fleet_test.go, registerDRANodes).
	if err := setUpDRA(ctx, cp); err != nil {
		cp.Stop()
		fmt.Fprintf(os.Stderr, "test/e2e/faults: %v\ntest/e2e/faults: logs kept in %s\n", err, dir)
		return 1
	}

	code := m.Run()

	cp.Stop()
	if code == 0 {
		os.RemoveAll(dir)
	} else {
		fmt.Fprintf(os.Stderr, "test/e2e/faults: FAILED; logs of every process kept in %s\n", dir)
	}
	return code
}
