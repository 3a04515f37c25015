package e2eutil

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"
)

// TestContext is a context for one test's API calls, ended with the test
// or after timeout. Its logger (klog.FromContext) writes to t.Log, so
// that what a helper logs stands with the test it served.
func TestContext(t testing.TB, timeout time.Duration) context.Context {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	t.Cleanup(cancel)
	return ctx
}

// CreateNamespace creates a namespace for the test, named prefix, the
// test's name and a random suffix (NamespaceName). It is not deleted:
// without the namespace controller nothing would finalize it.
func CreateNamespace(t testing.TB, cs kubernetes.Interface, prefix string) string {
	t.Helper()
	name := NamespaceName(prefix, t.Name())
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cs.CoreV1().Namespaces().Create(TestContext(t, 30*time.Second), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	return name
}
