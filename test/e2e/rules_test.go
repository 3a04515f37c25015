package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/devicefit/devicefit/internal/e2eutil"
)

// TestPrometheusRulesPromtool: the rules of every PrometheusRule of the
// kustomize output and of the components pass `promtool check rules` (the PrometheusRule spec is a
// Prometheus rule file: a groups list).
func TestPrometheusRulesPromtool(t *testing.T) {
	rules := renderedObjects(t, "PrometheusRule")
	if len(rules) == 0 {
		t.Fatal("no PrometheusRule in kustomize output")
	}
	// And those of the components the base leaves out (the defragmenter's).
	files, err := filepath.Glob(filepath.Join(repoRoot(t), "manifests", "components", "*", "prometheusrule.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no component PrometheusRule: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := e2eutil.DecodeObjects(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		rules = append(rules, objs...)
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool is not on PATH: %v (`make test-e2e` installs it, hack/install-prometheus.sh)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	for _, r := range rules {
		spec, ok := r.Object["spec"].(map[string]interface{})
		if !ok || spec["groups"] == nil {
			t.Errorf("PrometheusRule %s/%s: no spec.groups", r.GetNamespace(), r.GetName())
			continue
		}
		data, err := yaml.Marshal(map[string]interface{}{"groups": spec["groups"]})
		if err != nil {
			t.Fatal(err)
		}
		file := writeFile(t, dir, r.GetName()+".rules.yaml", data)
		out, err := exec.CommandContext(ctx, promtool, "check", "rules", file).CombinedOutput()
		if err != nil {
			t.Errorf("promtool check rules (PrometheusRule %s/%s): %v\n%s\nrules:\n%s", r.GetNamespace(), r.GetName(), err, out, data)
			continue
		}
		t.Logf("PrometheusRule %s/%s: %s", r.GetNamespace(), r.GetName(), out)
	}
}
