package skew

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/devicefit/devicefit/internal/controlplane"
	"github.com/devicefit/devicefit/internal/e2eutil"
	"github.com/devicefit/devicefit/pkg/support"
)

// TestKustomize: on each supported minor, the kustomize base with the
// components that minor serves, applied as `make deploy` does; the
// scheduler as the Deployment runs it; a pod per feature.
func TestKustomize(t *testing.T) {
	for _, m := range supportedMinors() {
		t.Run(m.String(), func(t *testing.T) { kustomizeOn(t, m) })
	}
}

func kustomizeOn(t *testing.T, m minor) {
	cl := startCluster(t, m, "kustomize")
	features := checkFeatures(t, m, cl.cluster)
	row := reportRow(m)
	row.server = cl.cluster.GitVersion

	// The defragmenter (off in the base) on every minor: its objects apply
	// and it plans against that minor's API (defragmenter_test.go).
	components := []string{"defragmenter"}
	if features[routing].On {
		components = append(components, "routing")
	}
	row.kustomize = "failed"
	took := cl.installKustomize(t, components)
	row.kustomize = fmt.Sprintf("base%s, %.1fs", plusComponents(components), took.Seconds())

	sched, ready := cl.startScheduler(t)
	row.ready = fmt.Sprintf("%.1fs", ready.Seconds())
	checkStartupLog(t, m, cl.cluster, sched.Process, features)

	checkInventory(t, m, cl, features)
	fl := newFleet(t, cl, features)
	for _, p := range fl.pods(t) {
		row.pods = append(row.pods, p.String())
	}
	row.defragmenter = checkDefragmenter(t, m, cl, sched)
}

// installKustomize applies the base and the named components of
// manifests/components, as a user's kustomization beside the base and `make
// deploy` do, and returns how long the apply took.
func (c *cluster) installKustomize(t *testing.T, components []string) time.Duration {
	t.Helper()
	root, err := e2eutil.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := e2eutil.Kustomization(filepath.Join(c.dir, "kustomize"), filepath.Join(root, "manifests"), components)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := e2eutil.InstallManifests(e2eutil.TestContext(t, 2*time.Minute), c.kubectl(), env.crdDir, dir); err != nil {
		t.Fatalf("Kubernetes %s: installing the kustomize base with components %v: %v", c.minor, components, err)
	}
	return time.Since(start)
}

func plusComponents(components []string) string {
	if len(components) == 0 {
		return ""
	}
	return " + " + strings.Join(components, ", ")
}

// checkStartupLog: the scheduler said which minor it emulates, and one line
// for each feature the server does not serve.
func checkStartupLog(t *testing.T, m minor, cluster *support.Cluster, p *controlplane.Process, features map[string]support.Feature) {
	t.Helper()
	data, err := os.ReadFile(p.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	log := string(data)
	_, newest := support.Range()
	emulating := "emulating Kubernetes " + m.String()
	if m.version.LessThan(newest) != strings.Contains(log, emulating) {
		t.Errorf("Kubernetes %s: the scheduler's log (%s) says %q: %v; want %v", m, p.LogPath, emulating, strings.Contains(log, emulating), m.version.LessThan(newest))
	}
	for _, f := range features {
		if line := f.Line(cluster); !f.On && !strings.Contains(log, line) {
			t.Errorf("Kubernetes %s: the scheduler's log (%s) lacks the line %q", m, p.LogPath, line)
		}
	}
	if strings.Contains(log, "is forbidden") || strings.Contains(log, "the server could not find the requested resource") {
		t.Errorf("Kubernetes %s: the scheduler's log (%s) has a list it was refused: an informer of an API this server does not serve", m, p.LogPath)
	}
}

// leaseHeld waits until the deployed lease has a holder: the scheduler
// schedules only once it leads.
func leaseHeld(t *testing.T, cl *cluster, ns, name string) time.Duration {
	t.Helper()
	ctx := e2eutil.TestContext(t, 2*time.Minute)
	start := time.Now()
	err := controlplane.Poll(ctx, 200*time.Millisecond, 90*time.Second, cl.cp.APIServer, func(ctx context.Context) (bool, error) {
		l, err := cl.cp.Client.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "", nil
	})
	if err != nil {
		t.Fatalf("lease %s/%s never held: %v", ns, name, err)
	}
	return time.Since(start)
}

// checkInventory: kubectl devicefit inventory says, below its table, what
// the scheduler's log says of the features this server does not serve.
func checkInventory(t *testing.T, m minor, cl *cluster, features map[string]support.Feature) {
	t.Helper()
	k := e2eutil.Kubectl{Binary: filepath.Join(env.binDir, "kubectl-devicefit"), Kubeconfig: cl.cp.AdminKubeconfig}
	_, stderr, err := k.Run(e2eutil.TestContext(t, time.Minute), nil, "inventory")
	if err != nil {
		t.Fatal(err)
	}
	if want := "Control plane: Kubernetes " + cl.cluster.GitVersion; !strings.Contains(stderr, want) {
		t.Errorf("Kubernetes %s: kubectl devicefit inventory does not say %q:\n%s", m, want, stderr)
	}
	for _, f := range features {
		if line := f.Line(cl.cluster); !f.On && !strings.Contains(stderr, line) {
			t.Errorf("Kubernetes %s: kubectl devicefit inventory lacks the line %q:\n%s", m, line, stderr)
		}
	}
}
