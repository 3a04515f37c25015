// Package day2 runs `kubectl devicefit defrag --apply` end to end: the
// built binaries of bin/ (etcd, kube-apiserver, devicefit-scheduler with the
// manifests' configuration and identity, kubectl-devicefit) and the real
// kube-controller-manager with the two controllers an eviction needs (the
// ReplicaSet controller recreates an evicted pod, the disruption controller
// keeps PodDisruptionBudget status). A package of its own: the pods it binds
// would change the figures test/e2e asserts on its shared scenario.
//
// Run it with `make test-e2e`, which builds what it needs and passes the
// variables test/e2e reads (DEVICEFIT_BIN_DIR, PROMETHEUS_OPERATOR_CRDS).
package day2

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

type suite struct {
	binDir string
	dir    string
	cp     *controlplane.ControlPlane
	sched  *controlplane.Scheduler
}

var s suite

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	for _, env := range []string{e2eutil.BinDirEnv, e2eutil.CRDDirEnv} {
		if os.Getenv(env) == "" {
			fmt.Fprintf(os.Stderr, "test/e2e/day2: %s is not set: run `make test-e2e`, which builds and provides what these tests need.\n", env)
			return 1
		}
	}
	s.binDir = os.Getenv(e2eutil.BinDirEnv)
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		fmt.Fprintln(os.Stderr, "test/e2e/day2:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp, dir, err := e2eutil.StartControlPlane(ctx, "e2e-day2", s.binDir)
	s.dir = dir
	if err != nil {
		fmt.Fprintln(os.Stderr, "test/e2e/day2:", err)
		return 1
	}
	s.cp = cp
	fail := func(err error) int {
		cp.Stop()
		fmt.Fprintf(os.Stderr, "test/e2e/day2: %v\ntest/e2e/day2: logs kept in %s\n", err, dir)
		return 1
	}
	kubectl := e2eutil.Kubectl{Binary: filepath.Join(s.binDir, "kubectl"), Kubeconfig: cp.AdminKubeconfig}
	if _, err := e2eutil.InstallManifests(ctx, kubectl, os.Getenv(e2eutil.CRDDirEnv), filepath.Join(root, "manifests")); err != nil {
		return fail(fmt.Errorf("installing the manifests: %w", err))
	}
	if err := cp.StartControllerManager(ctx, "replicaset-controller", "disruption-controller"); err != nil {
		return fail(err)
	}
	cfg, err := e2eutil.RenderDeployedSchedulerConfig(ctx, cp, dir, "scheduler-config.yaml", nil)
	if err != nil {
		return fail(err)
	}
	sched, err := controlplane.StartScheduler(controlplane.SchedulerOptions{
		Binary: filepath.Join(s.binDir, "devicefit-scheduler"), Config: cfg.Path, Kubeconfig: cfg.Kubeconfig,
		Dir: dir, ExtraArgs: []string{"--v=2"},
	})
	if err != nil {
		return fail(err)
	}
	s.sched = sched
	if err := sched.WaitReady(ctx, 90*time.Second); err != nil {
		sched.Process.Stop(5 * time.Second)
		return fail(e2eutil.WithLog(sched.Process, err))
	}

	code := m.Run()

	sched.Process.Stop(10 * time.Second)
	cp.Stop()
	if code == 0 {
		os.RemoveAll(dir)
	} else {
		fmt.Fprintf(os.Stderr, "test/e2e/day2: FAILED; logs of every process kept in %s\n", dir)
	}
	return code
}
