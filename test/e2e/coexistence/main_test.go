// Package coexistence runs devicefit beside the upstream kube-scheduler, as
// every cluster it joins does (docs/coexistence.md): the built binaries of
// bin/ (etcd, kube-apiserver, the manifests applied with the routing policy,
// kube-controller-manager's resourceclaim and garbage-collector controllers,
// bin/kube-scheduler with its default profile and bin/devicefit-scheduler
// with the deployed one), both schedulers running at once, and bursts of
// device and CPU pods onto one fleet that they fill.
//
// Run it with `make test-e2e`, which builds what it needs and passes the
// variables it reads (DEVICEFIT_BIN_DIR, PROMETHEUS_OPERATOR_CRDS).
package coexistence

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/devicefit/devicefit/internal/controlplane"
	"github.com/devicefit/devicefit/internal/e2eutil"
)

var env e2eutil.Env

func TestMain(m *testing.M) {
	env.Main(m, e2eutil.Options{
		Name:             "test/e2e/coexistence",
		Target:           "make test-e2e",
		InstallManifests: true,
		// The routing policy is a component: the base installs on the
		// oldest supported minor, which does not serve it.
		Components:  []string{"routing"},
		Controllers: []string{"resourceclaim-controller", "garbage-collector-controller"},
		Setup: func(ctx context.Context) error {
			if err := registerFleet(ctx); err != nil {
				return err
			}
			if _, err := env.StartScheduler(ctx, e2eutil.SchedulerOptions{}); err != nil {
				return err
			}
			return startDefaultScheduler(ctx)
		},
	})
}

// startDefaultScheduler starts bin/kube-scheduler with its default profile
// and waits for /readyz.
func startDefaultScheduler(ctx context.Context) error {
	sc, err := controlplane.StartDefaultScheduler(env.BinDir, env.Dir, env.CP.SchedulerKubeconfig)
	if err != nil {
		return err
	}
	if err := sc.WaitReady(ctx, 90*time.Second); err != nil {
		sc.Process.Stop(5 * time.Second)
		return fmt.Errorf("kube-scheduler: %w", e2eutil.WithLog(sc.Process, err))
	}
	env.Cleanup(func() { sc.Process.Stop(10 * time.Second) })
	return nil
}
