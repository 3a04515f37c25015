package skew

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/devicefit/devicefit/internal/controlplane"
	"github.com/devicefit/devicefit/internal/e2eutil"
	"github.com/devicefit/devicefit/pkg/support"
)

// cluster is one control plane of one minor, for one test.
type cluster struct {
	minor   minor
	cp      *controlplane.ControlPlane
	dir     string
	cluster *support.Cluster
	// env runs bin/'s devicefit-scheduler against cp.
	env *e2eutil.Env
}

// startCluster starts etcd, kube-apiserver (default gates and
// --runtime-config: controlplane adds none) and kube-controller-manager
// with the resourceclaim controller (ResourceClaimTemplates) of minor m,
// and checks that the server is the release it claims to be. It stops when
// the test ends; its directory stays when the test failed.
func startCluster(t *testing.T, m minor, purpose string) *cluster {
	t.Helper()
	m.require(t)
	ctx := e2eutil.TestContext(t, 3*time.Minute)
	dir, err := os.MkdirTemp("", "devicefit-skew-"+m.String()+"-"+purpose+"-")
	if err != nil {
		t.Fatal(err)
	}
	cp, err := controlplane.Start(ctx, controlplane.Options{BinDir: m.binDir, Dir: dir, UserAgent: "devicefit-skew"})
	if err != nil {
		var pe *controlplane.ProcessError
		if errors.As(err, &pe) {
			t.Logf("last lines of %s:\n%s", pe.Process.LogPath, controlplane.Tail(pe.Process.LogPath, 40))
		}
		t.Fatalf("Kubernetes %s: starting the control plane of %s (logs kept in %s): %v", m, m.binDir, dir, err)
	}
	t.Cleanup(func() {
		cp.Stop()
		if t.Failed() {
			t.Logf("Kubernetes %s: logs of the control plane and the scheduler kept in %s", m, dir)
		} else {
			os.RemoveAll(dir)
		}
	})
	c, err := support.Discover(cp.Client.Discovery())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.GitVersion, "v"+m.String()+".") {
		t.Fatalf("%s/kube-apiserver reports %s, not a %s release: is it built with hack/version.sh kube-ldflags?", m.binDir, c.GitVersion, m)
	}
	if err := cp.StartControllerManager(ctx, "resourceclaim-controller"); err != nil {
		t.Fatal(err)
	}
	return &cluster{minor: m, cp: cp, dir: dir, cluster: c,
		env: &e2eutil.Env{BinDir: env.binDir, CRDDir: env.crdDir, Dir: dir, CP: cp}}
}

func (c *cluster) kubectl() e2eutil.Kubectl {
	return e2eutil.Kubectl{Binary: filepath.Join(env.binDir, "kubectl"), Kubeconfig: c.cp.AdminKubeconfig}
}

// startScheduler starts bin/devicefit-scheduler as the installed
// Deployment runs it (its ConfigMap, its ServiceAccount) and returns it
// with its time to ready: from the start of the process to /readyz, which
// passes once every informer has synced, then to holding the lease.
func (c *cluster) startScheduler(t *testing.T) (*e2eutil.Scheduler, time.Duration) {
	t.Helper()
	ctx := e2eutil.TestContext(t, time.Minute)
	cfg, err := c.env.SchedulerConfig(ctx, "devicefit-scheduler-config.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	sched := c.env.RunScheduler(t, e2eutil.SchedulerOptions{Config: cfg})
	leaseHeld(t, c, cfg.Lease.ResourceNamespace, cfg.Lease.ResourceName)
	return sched, time.Since(start)
}
