package e2eutil

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
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// OperatorCRDs are the prometheus-operator CRDs the kustomize output needs:
// its ServiceMonitor and PrometheusRule.
var OperatorCRDs = []struct{ File, Name string }{
	{"monitoring.coreos.com_servicemonitors.yaml", "servicemonitors.monitoring.coreos.com"},
	{"monitoring.coreos.com_prometheusrules.yaml", "prometheusrules.monitoring.coreos.com"},
}

// FieldManager is the server-side apply manager of everything the tests apply.
const FieldManager = "devicefit-e2e"

// InstallOperatorCRDs applies OperatorCRDs from crdDir (the operator's
// example/prometheus-operator-crd) and waits until they are Established.
func InstallOperatorCRDs(ctx context.Context, k Kubectl, crdDir string) error {
	args := []string{"apply", "--server-side", "--field-manager=" + FieldManager}
	wait := []string{"wait", "--for=condition=Established", "--timeout=60s"}
	for _, c := range OperatorCRDs {
		path := filepath.Join(crdDir, c.File)
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("prometheus-operator CRD: %w (%s should be the operator's example/prometheus-operator-crd)", err, CRDDirEnv)
		}
		args = append(args, "-f", path)
		wait = append(wait, "crd/"+c.Name)
	}
	if _, _, err := k.Run(ctx, nil, args...); err != nil {
		return err
	}
	_, _, err := k.Run(ctx, nil, wait...)
	return err
}

// ApplyServerSide applies the manifests in data. A kind whose CRD has just
// become Established can be missing from discovery for a moment, so "no
// matches for kind" is retried for a few seconds.
func ApplyServerSide(ctx context.Context, k Kubectl, data []byte) (string, error) {
	var err error
	for i := 0; i < 10; i++ {
		var out, warnings string
		out, warnings, err = k.Run(ctx, data, "apply", "--server-side", "--field-manager="+FieldManager, "-f", "-")
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

// DecodeObjects splits multi-document YAML into objects; empty documents are
// dropped.
func DecodeObjects(data []byte) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []*unstructured.Unstructured
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

// Kustomization writes dir/kustomization.yaml: the kustomize base
// manifests with the named components of manifests/components (e.g.
// "routing"), as a user's kustomization beside the base does, and `make
// deploy` with MANIFEST_COMPONENTS (an overlay cannot live inside its base's
// directory: kustomize refuses the cycle). The base installs on the oldest
// supported minor; a control plane that serves more gets the components for
// it. The paths are relative to dir: kustomize (v5.8) refuses an absolute
// one ("new root cannot be absolute"). They are computed between the real
// directories, symlinks resolved, as kustomize resolves them (a temporary
// directory under a symlink, as macOS's, would otherwise be miscounted). It
// returns dir.
func Kustomization(dir, manifests string, components []string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	rel := func(path string) (string, error) {
		target, err := filepath.EvalSymlinks(path)
		if err != nil {
			return "", err
		}
		return filepath.Rel(real, target)
	}
	base, err := rel(manifests)
	if err != nil {
		return "", err
	}
	k := map[string]interface{}{
		"apiVersion": "kustomize.config.k8s.io/v1beta1",
		"kind":       "Kustomization",
		"resources":  []string{base},
	}
	var paths []string
	for _, c := range components {
		path := filepath.Join(manifests, "components", c)
		if _, err := os.Stat(filepath.Join(path, "kustomization.yaml")); err != nil {
			return "", fmt.Errorf("component %q: %w", c, err)
		}
		r, err := rel(path)
		if err != nil {
			return "", err
		}
		paths = append(paths, r)
	}
	if len(paths) > 0 {
		k["components"] = paths
	}
	data, err := yaml.Marshal(k)
	if err != nil {
		return "", err
	}
	return dir, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), data, 0o600)
}

// InstallManifests installs the operator CRDs from crdDir, builds the
// kustomize directory manifests with `kubectl kustomize` and applies the
// output server-side: what `make deploy` does, on a test cluster. For the
// base with components, manifests is a directory Kustomization wrote. It
// returns the objects applied.
func InstallManifests(ctx context.Context, k Kubectl, crdDir, manifests string) ([]*unstructured.Unstructured, error) {
	if err := InstallOperatorCRDs(ctx, k, crdDir); err != nil {
		return nil, err
	}
	out, _, err := k.Run(ctx, nil, "kustomize", manifests)
	if err != nil {
		return nil, err
	}
	objects, err := DecodeObjects([]byte(out))
	if err != nil {
		return nil, fmt.Errorf("kubectl kustomize %s: %w", manifests, err)
	}
	if len(objects) == 0 {
		return nil, fmt.Errorf("kubectl kustomize %s: no objects", manifests)
	}
	if _, err := ApplyServerSide(ctx, k, []byte(out)); err != nil {
		return nil, err
	}
	return objects, nil
}
