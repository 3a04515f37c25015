package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/devicefit/devicefit/internal/e2eutil"
)

const (
	// What manifests/ deploys (and the tests rely on).
	systemNamespace    = e2eutil.SystemNamespace
	schedulerSA        = e2eutil.SchedulerSA
	schedulerConfigMap = e2eutil.SchedulerConfigMap
	schedulerConfigKey = e2eutil.SchedulerConfigKey
	schedulerDeploy    = e2eutil.SchedulerDeploy
	metricsReaderRole  = "devicefit:metrics-reader"
	schedulerName      = e2eutil.SchedulerName

	resourceGPU = e2eutil.ResourceGPU
)

// testContext is a context for one test's API calls (e2eutil.TestContext).
func testContext(t *testing.T, timeout time.Duration) context.Context {
	return e2eutil.TestContext(t, timeout)
}

// newNamespace creates a namespace of its own for the test. It is not
// deleted: without a controller-manager nothing would finalize it, and the
// control plane is thrown away with the package.
func newNamespace(t *testing.T) string {
	t.Helper()
	return e2eutil.CreateNamespace(t, s.cp.Client, "e2e")
}

// serviceAccountToken returns a token of the service account ns/name from the
// TokenRequest API (e2eutil.ServiceAccountToken).
func serviceAccountToken(ctx context.Context, ns, name string) (string, error) {
	return e2eutil.ServiceAccountToken(ctx, s.cp.Client, ns, name)
}

// serviceAccountKubeconfig writes a kubeconfig that authenticates as the
// service account ns/name to dir and returns its path.
func serviceAccountKubeconfig(ctx context.Context, dir, ns, name string) (string, error) {
	return e2eutil.ServiceAccountKubeconfig(ctx, s.cp, dir, ns, name)
}

// devicePod is a pod for the devicefit scheduler that requests n of the
// device resource (requests == limits), with the devicefit.io/ selector
// annotations given as key, value pairs. n == 0 requests no device.
func devicePod(ns, name string, resourceName v1.ResourceName, n int64, annotations ...string) *v1.Pod {
	return e2eutil.DevicePod(ns, name, resourceName, n, annotations...)
}

// createPods creates pods; pass metav1.DryRunAll in dryRun to only have them
// admitted. Pods that the devicefit scheduler really binds count in the
// scheduler's metrics, which TestPrometheusScrapesScheduler compares with the
// scenario: tests other than the scenario should use dry-run or another
// schedulerName.
func createPods(ctx context.Context, pods []*v1.Pod, dryRun ...string) error {
	return e2eutil.CreatePods(ctx, s.cp.Client, pods, dryRun...)
}

// writeFile writes data to dir/name and returns the path.
func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
