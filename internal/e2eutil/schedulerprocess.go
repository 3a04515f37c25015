package e2eutil

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/klog/v2"

	"github.com/devicefit/devicefit/internal/controlplane"
)

// Scheduler is one bin/devicefit-scheduler process, run as a replica of the
// manifests' Deployment runs: the applied ConfigMap's configuration and the
// applied ServiceAccount's identity.
type Scheduler struct {
	*controlplane.Scheduler
	// Name names the process; its log is <Env.Dir>/<Name>.log.
	Name string
	// Config is what it runs with; Config.Lease the lease it competes for.
	Config *SchedulerConfig
}

// defaultReadyTimeout is SchedulerOptions.ReadyTimeout's default.
const defaultReadyTimeout = 90 * time.Second

// SchedulerOptions configure Env.StartScheduler.
type SchedulerOptions struct {
	// Name of the process; "devicefit-scheduler" if empty.
	Name string
	// Config is a configuration rendered by Env.SchedulerConfig, which
	// replicas share; nil renders the deployed one as <Name>-config.yaml.
	Config *SchedulerConfig
	// Token is the bearer token Get sends ("": none).
	Token string
	// ReadyTimeout bounds the wait for /readyz; 90s if zero.
	ReadyTimeout time.Duration
	// Args are flags passed after --v=2.
	Args []string
}

// SchedulerConfig renders the deployed KubeSchedulerConfiguration into
// Dir/file (RenderDeployedSchedulerConfig), changed by edit when not nil.
func (e *Env) SchedulerConfig(ctx context.Context, file string, edit func(map[string]interface{}) error) (*SchedulerConfig, error) {
	return RenderDeployedSchedulerConfig(ctx, e.CP, e.Dir, file, edit)
}

// StartScheduler starts BinDir/devicefit-scheduler (--v=2) and waits for
// its /readyz, which passes once its informers have synced, leader or not.
// When that fails it stops the process, and the error carries the end of
// its log. Otherwise the process is stopped (SIGTERM, 10s grace) when the
// package's tests are over (Cleanup), if nothing stopped it before.
func (e *Env) StartScheduler(ctx context.Context, o SchedulerOptions) (*Scheduler, error) {
	if o.Name == "" {
		o.Name = "devicefit-scheduler"
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = defaultReadyTimeout
	}
	if o.Config == nil {
		cfg, err := e.SchedulerConfig(ctx, o.Name+"-config.yaml", nil)
		if err != nil {
			return nil, err
		}
		o.Config = cfg
	}
	sc, err := controlplane.StartScheduler(controlplane.SchedulerOptions{
		Binary:     filepath.Join(e.BinDir, "devicefit-scheduler"),
		Config:     o.Config.Path,
		Kubeconfig: o.Config.Kubeconfig,
		Dir:        e.Dir,
		Name:       o.Name,
		Token:      o.Token,
		ExtraArgs:  append([]string{"--v=2"}, o.Args...),
	})
	if err != nil {
		return nil, err
	}
	if err := sc.WaitReady(ctx, o.ReadyTimeout); err != nil {
		sc.Process.Stop(5 * time.Second)
		return nil, WithLog(sc.Process, err)
	}
	e.Cleanup(func() { sc.Process.Stop(10 * time.Second) })
	klog.FromContext(ctx).V(2).Info("Scheduler started", "name", o.Name, "url", sc.URL, "lease", o.Config.Lease)
	return &Scheduler{Scheduler: sc, Name: o.Name, Config: o.Config}, nil
}

// RunScheduler is StartScheduler for one test: a failure fails t, and the
// process is stopped when the test ends (SIGTERM, so that it releases its
// lease), its log named if the test failed.
func (e *Env) RunScheduler(t testing.TB, o SchedulerOptions) *Scheduler {
	t.Helper()
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = defaultReadyTimeout
	}
	// A minute beyond the wait for /readyz: the configuration is rendered
	// first.
	sc, err := e.StartScheduler(TestContext(t, o.ReadyTimeout+time.Minute), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sc.Process.Stop(15 * time.Second)
		if t.Failed() {
			t.Logf("log of %s: %s", sc.Name, sc.Process.LogPath)
		}
	})
	return sc
}
