package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/devicefit/devicefit/internal/e2eutil"
)

// object is one object of the kustomize output.
type object = *unstructured.Unstructured

// setupManifests installs the operator CRDs, builds manifests/ with
// components/routing (s.kustomization) with `kubectl kustomize` and applies
// the output server-side, recording each step's failure in s for the tests
// to report.
func setupManifests(ctx context.Context) {
	if s.crdsErr = e2eutil.InstallOperatorCRDs(ctx, adminKubectl(), s.crdDir); s.crdsErr != nil {
		return
	}
	out, _, err := kubectl(ctx, nil, "kustomize", s.kustomization)
	if err != nil {
		s.renderErr = err
		return
	}
	s.rendered = []byte(out)
	if s.objects, s.renderErr = e2eutil.DecodeObjects(s.rendered); s.renderErr != nil {
		return
	}
	if len(s.objects) == 0 {
		s.renderErr = fmt.Errorf("kubectl kustomize %s: no objects", s.kustomization)
		return
	}
	s.applyOut, s.applyErr = e2eutil.ApplyServerSide(ctx, adminKubectl(), s.rendered)
}

// renderedObjects returns the objects of the kustomize output of the given
// kind, failing the test when the build failed.
func renderedObjects(t *testing.T, kind string) []object {
	t.Helper()
	if s.crdsErr != nil {
		t.Fatalf("installing the prometheus-operator CRDs failed: %v", s.crdsErr)
	}
	if s.renderErr != nil {
		t.Fatalf("kustomize build of %s failed: %v", s.kustomization, s.renderErr)
	}
	var out []object
	for _, o := range s.objects {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// requireManifests fails the test unless the manifests were applied; the
// error itself is TestManifestsApply's to show.
func requireManifests(t *testing.T) {
	t.Helper()
	if s.crdsErr != nil || s.renderErr != nil || s.applyErr != nil {
		t.Fatal("the manifests were not applied (see TestManifestsApply)")
	}
}

// TestManifestsApply: `kubectl kustomize` of manifests/ with
// components/routing builds, and its output applies server-side on top of
// the real prometheus-operator CRDs, without PodSecurity warnings.
func TestManifestsApply(t *testing.T) {
	renderedObjects(t, "")
	if s.applyErr != nil {
		t.Fatalf("applying the kustomize output of %s: %v", s.kustomization, s.applyErr)
	}
	kinds := map[string]int{}
	for _, o := range s.objects {
		kinds[o.GetKind()]++
	}
	t.Logf("applied %d objects: %v", len(s.objects), kinds)
	if strings.Contains(s.applyOut, "would violate PodSecurity") {
		t.Errorf("applying the manifests warned about PodSecurity:\n%s", s.applyOut)
	}
	for _, kind := range []string{"Namespace", "ServiceAccount", "ConfigMap", "Deployment", "ServiceMonitor", "PrometheusRule"} {
		if kinds[kind] == 0 {
			t.Errorf("no %s in the kustomize output", kind)
		}
	}
}
