package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// The prometheus-operator CRDs the kustomize output needs: its
// ServiceMonitor and PrometheusRule.
var operatorCRDs = []struct{ file, name string }{
	{"monitoring.coreos.com_servicemonitors.yaml", "servicemonitors.monitoring.coreos.com"},
	{"monitoring.coreos.com_prometheusrules.yaml", "prometheusrules.monitoring.coreos.com"},
}

// fieldManager is the server-side apply manager of everything the suite applies.
const fieldManager = "devicefit-e2e"

// object is one object of the kustomize output.
type object = *unstructured.Unstructured

// setupManifests installs the operator CRDs, builds manifests/ with
// `kubectl kustomize` and applies the output server-side, recording each
// step's failure in s for the tests to report.
func setupManifests(ctx context.Context) {
	if s.crdsErr = installOperatorCRDs(ctx); s.crdsErr != nil {
		return
	}
	out, _, err := kubectl(ctx, nil, "kustomize", s.manifests)
	if err != nil {
		s.renderErr = err
		return
	}
	s.rendered = []byte(out)
	if s.objects, s.renderErr = decodeObjects(s.rendered); s.renderErr != nil {
		return
	}
	if len(s.objects) == 0 {
		s.renderErr = fmt.Errorf("kubectl kustomize %s: no objects", s.manifests)
		return
	}
	s.applyOut, s.applyErr = applyServerSide(ctx, s.rendered)
}

func installOperatorCRDs(ctx context.Context) error {
	args := []string{"apply", "--server-side", "--field-manager=" + fieldManager}
	wait := []string{"wait", "--for=condition=Established", "--timeout=60s"}
	for _, c := range operatorCRDs {
		path := filepath.Join(s.crdDir, c.file)
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("prometheus-operator CRD: %w (%s should be the operator's example/prometheus-operator-crd)", err, crdDirEnv)
		}
		args = append(args, "-f", path)
		wait = append(wait, "crd/"+c.name)
	}
	if _, _, err := kubectl(ctx, nil, args...); err != nil {
		return err
	}
	_, _, err := kubectl(ctx, nil, wait...)
	return err
}

// applyServerSide applies the manifests in data. A kind whose CRD has just
// become Established can be missing from discovery for a moment, so "no
// matches for kind" is retried for a few seconds.
func applyServerSide(ctx context.Context, data []byte) (string, error) {
	var err error
	for i := 0; i < 10; i++ {
		var out, warnings string
		out, warnings, err = kubectl(ctx, data, "apply", "--server-side", "--field-manager="+fieldManager, "-f", "-")
		if err == nil {
			return out + warnings, nil
		}
		if !strings.Contains(err.Error(), "no matches for kind") {
			break
		}
		time.Sleep(time.Second)
	}
	return "", err
}

// decodeObjects splits multi-document YAML into objects.
func decodeObjects(data []byte) ([]object, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		var m map[string]interface{}
		if err := yaml.Unmarshal(doc, &m); err != nil {
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
}

// renderedObjects returns the objects of the kustomize output of the given
// kind, failing the test when the build failed.
func renderedObjects(t *testing.T, kind string) []object {
	t.Helper()
	if s.crdsErr != nil {
		t.Fatalf("installing the prometheus-operator CRDs failed: %v", s.crdsErr)
	}
	if s.renderErr != nil {
		t.Fatalf("kustomize build of %s failed: %v", s.manifests, s.renderErr)
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

// TestManifestsApply: `kubectl kustomize manifests` builds, and its output
// applies server-side on top of the real prometheus-operator CRDs, without
// PodSecurity warnings.
func TestManifestsApply(t *testing.T) {
	renderedObjects(t, "")
	if s.applyErr != nil {
		t.Fatalf("applying the kustomize output of %s: %v", s.manifests, s.applyErr)
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
