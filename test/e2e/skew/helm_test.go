package skew

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/devicefit/devicefit/internal/e2eutil"
	"github.com/devicefit/devicefit/pkg/devices"
)

// routingPolicyName is the chart's MutatingAdmissionPolicy for release
// "devicefit".
const routingPolicyName = "devicefit-route-device-pods"

// TestHelm: on each supported minor, `helm install` of charts/devicefit
// against the live server, so that the chart sees that server's
// .Capabilities: it renders only what the server serves and says in NOTES
// what it left out. Then the scheduler as the release runs it, and a GPU
// pod bound.
func TestHelm(t *testing.T) {
	for _, m := range supportedMinors() {
		t.Run(m.String(), func(t *testing.T) { helmOn(t, m) })
	}
}

func helmOn(t *testing.T, m minor) {
	ctx := e2eutil.TestContext(t, 5*time.Minute)
	cl := startCluster(t, m, "helm")
	features := checkFeatures(t, m, cl.cluster)
	row := reportRow(m)

	start := time.Now()
	notes, err := helm(t, "install", "devicefit", "charts/devicefit", "-n", e2eutil.SystemNamespace, "--create-namespace",
		"--kubeconfig", cl.cp.AdminKubeconfig)
	if err != nil {
		row.helm = "failed"
		t.Fatalf("Kubernetes %s: %v", m, err)
	}
	installed := time.Since(start)

	_, err = cl.cp.Client.AdmissionregistrationV1().MutatingAdmissionPolicies().Get(ctx, routingPolicyName, metav1.GetOptions{})
	switch routed := features[routing].On; {
	case routed && err != nil:
		t.Errorf("Kubernetes %s serves MutatingAdmissionPolicy v1, but the release's routing policy: %v", m, err)
	case !routed && !apierrors.IsNotFound(err):
		t.Errorf("Kubernetes %s does not serve MutatingAdmissionPolicy v1, yet getting the routing policy gave %v", m, err)
	case !routed && !strings.Contains(notes, "schedulerName: devicefit") || !routed && !strings.Contains(notes, "MutatingAdmissionPolicy"):
		t.Errorf("Kubernetes %s: the chart left the routing policy out and its NOTES do not say why and what to do:\n%s", m, notes)
	}
	leftOut := ""
	if !features[routing].On {
		leftOut = "; routing policy left out (NOTES says so)"
	}

	_, ready := cl.startScheduler(t)
	fl := &fleet{cl: cl, features: features, ns: e2eutil.CreateNamespace(t, cl.cp.Client, "skew-helm")}
	node := "skew-helm-h100-0"
	if err := (e2eutil.Node{Name: node, Labels: labels(productH100, 81559, 9, 0, 8, "hopper", devices.MIGStrategySingle),
		Devices: map[v1.ResourceName]int64{e2eutil.ResourceGPU: 8}}).Register(ctx, cl.cp.Client, 110, nil); err != nil {
		t.Fatal(err)
	}
	pod := e2eutil.DevicePod(fl.ns, "h100", e2eutil.ResourceGPU, 2, devices.AnnotationProducts, productH100)
	if err := e2eutil.CreatePods(ctx, cl.cp.Client, []*v1.Pod{pod}); err != nil {
		t.Fatal(err)
	}
	if got := fl.wait(t, ctx, pod, true); got != node {
		t.Errorf("Kubernetes %s: the release's scheduler: pod %s: %s, want bound to %s", m, pod.Name, got, node)
	}
	row.helm = fmt.Sprintf("installed in %.1fs%s; ready in %.1fs; 2-GPU H100 pod bound", installed.Seconds(), leftOut, ready.Seconds())
}

// helm runs bin/helm in the repository with homes of its own and returns
// its output.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin := filepath.Join(env.binDir, "helm")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%v: build it with `make bin/helm` (make test-e2e does)", err)
	}
	root, err := e2eutil.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	cmd := exec.Command(bin, args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), nil
}
