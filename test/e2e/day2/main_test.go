// Package day2 runs `kubectl devicefit defrag --apply` and
// devicefit-defragmenter end to end: the
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
	"testing"

	"github.com/devicefit/devicefit/internal/e2eutil"
)

// env is what TestMain started; sched is the package's one scheduler.
var (
	env   e2eutil.Env
	sched *e2eutil.Scheduler
)

// TestMain starts the control plane with the manifests applied, the two
// controllers an eviction needs, and the scheduler.
func TestMain(m *testing.M) {
	env.Main(m, e2eutil.Options{
		Name:             "test/e2e/day2",
		Target:           "make test-e2e",
		InstallManifests: true,
		// The defragmenter's objects (off in the base): TestDefragmenter
		// runs it with their configuration and identity.
		Components:  []string{"defragmenter"},
		Controllers: []string{"replicaset-controller", "disruption-controller"},
		Setup: func(ctx context.Context) (err error) {
			sched, err = env.StartScheduler(ctx, e2eutil.SchedulerOptions{})
			return err
		},
	})
}
