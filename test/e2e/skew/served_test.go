package skew

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/devicefit/devicefit/internal/e2eutil"
)

// TestServedAPICheck: on the oldest supported minor, the scheduler started
// with a gate turned on whose API that server does not serve
// (DRADeviceTaintRules, and DRADeviceTaints which it needs: the scheduler
// would list resource.k8s.io/v1 DeviceTaintRules, GA only from 1.37), as a
// user may after reading newer docs. Emulation alone does not help here (the gate is
// set by hand); the served-API check turns the gate off with a log line and
// the scheduler becomes ready and leads. Without the check its informer
// never syncs.
func TestServedAPICheck(t *testing.T) {
	m := supportedMinors()[0]
	cl := startCluster(t, m, "served-api")
	ctx := e2eutil.TestContext(t, 3*time.Minute)
	cl.installKustomize(t, nil)
	cfg, err := cl.env.SchedulerConfig(ctx, "devicefit-scheduler-config.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	sched := cl.env.RunScheduler(t, e2eutil.SchedulerOptions{Config: cfg, Args: []string{"--feature-gates=DRADeviceTaints=true,DRADeviceTaintRules=true"}})
	leaseHeld(t, cl, cfg.Lease.ResourceNamespace, cfg.Lease.ResourceName)
	data, err := os.ReadFile(sched.Process.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	want := "Feature gate DRADeviceTaintRules off: this API server (v" + m.String() + ") does not serve devicetaintrules.resource.k8s.io/v1"
	if !strings.Contains(string(data), want) {
		t.Errorf("Kubernetes %s: the scheduler's log (%s) lacks %q", m, sched.Process.LogPath, want)
	}
}
