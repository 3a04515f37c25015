package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
)

const (
	// What manifests/ deploys (and the tests rely on).
	systemNamespace    = "devicefit-system"
	schedulerSA        = "devicefit-scheduler"
	schedulerConfigMap = "devicefit-scheduler-config"
	schedulerConfigKey = "scheduler-config.yaml"
	schedulerDeploy    = "devicefit-scheduler"
	metricsReaderRole  = "devicefit:metrics-reader"
	schedulerName      = "devicefit"

	resourceGPU = v1.ResourceName("nvidia.com/gpu")
)

// testContext is a context for one test's API calls.
func testContext(t *testing.T, timeout time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}

var nonName = regexp.MustCompile(`[^a-z0-9]+`)

// newNamespace creates a namespace of its own for the test. It is not
// deleted: without a controller-manager nothing would finalize it, and the
// control plane is thrown away with the package.
func newNamespace(t *testing.T) string {
	t.Helper()
	base := strings.Trim(nonName.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(base) > 40 {
		base = base[:40]
	}
	name := "e2e-" + base + "-" + utilrand.String(5)
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := s.cp.Client.CoreV1().Namespaces().Create(testContext(t, 30*time.Second), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	return name
}

// serviceAccountToken returns a token of the service account ns/name from the
// TokenRequest API. (Tokens are signed by the apiserver's
// --service-account-signing-key-file; no controller is involved. The
// service account has to exist for the token to authenticate.)
func serviceAccountToken(ctx context.Context, ns, name string) (string, error) {
	tr, err := s.cp.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("TokenRequest for %s/%s: %w", ns, name, err)
	}
	return tr.Status.Token, nil
}

// serviceAccountKubeconfig writes a kubeconfig that authenticates as the
// service account ns/name to dir and returns its path.
func serviceAccountKubeconfig(ctx context.Context, dir, ns, name string) (string, error) {
	token, err := serviceAccountToken(ctx, ns, name)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, ns+"-"+name+".kubeconfig")
	return path, s.cp.WriteKubeconfig(path, "system:serviceaccount:"+ns+":"+name, token)
}

// devicePod is a pod for the devicefit scheduler that requests n of the
// device resource (requests == limits), with the devicefit.io/ selector
// annotations given as key, value pairs. n == 0 requests no device.
func devicePod(ns, name string, resourceName v1.ResourceName, n int64, annotations ...string) *v1.Pod {
	requests := v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse("1"),
		v1.ResourceMemory: resource.MustParse("1Gi"),
	}
	limits := v1.ResourceList{}
	if n > 0 {
		q := *resource.NewQuantity(n, resource.DecimalSI)
		requests[resourceName] = q
		limits[resourceName] = q
	}
	ann := map[string]string{}
	for i := 0; i+1 < len(annotations); i += 2 {
		ann[annotations[i]] = annotations[i+1]
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: ann},
		Spec: v1.PodSpec{
			SchedulerName: schedulerName,
			Containers: []v1.Container{{
				Name:      "main",
				Image:     "registry.k8s.io/pause:3.10.1",
				Resources: v1.ResourceRequirements{Requests: requests, Limits: limits},
			}},
		},
	}
}

// createPods creates pods; pass metav1.DryRunAll in dryRun to only have them
// admitted. Pods that the devicefit scheduler really binds count in the
// scheduler's metrics, which TestPrometheusScrapesScheduler compares with the
// scenario: tests other than the scenario should use dry-run or another
// schedulerName.
func createPods(ctx context.Context, pods []*v1.Pod, dryRun ...string) error {
	for _, p := range pods {
		if _, err := s.cp.Client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{DryRun: dryRun}); err != nil {
			return fmt.Errorf("creating pod %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	return nil
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
