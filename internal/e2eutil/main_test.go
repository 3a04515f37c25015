package e2eutil

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func TestFromVariables(t *testing.T) {
	o := Options{Name: "test/e2e/x", Target: "make test-x"}
	t.Setenv(ManifestsEnv, "")

	t.Setenv(BinDirEnv, "")
	t.Setenv(CRDDirEnv, "/crds")
	if err := new(Env).fromVariables(o); !errors.Is(err, errSkip) {
		t.Errorf("without %s: %v, want the package skipped", BinDirEnv, err)
	}

	t.Setenv(BinDirEnv, "/bin-dir")
	t.Setenv(CRDDirEnv, "")
	if err := new(Env).fromVariables(o); err == nil || errors.Is(err, errSkip) || !strings.Contains(err.Error(), "make test-x") {
		t.Errorf("without %s: %v, want a failure naming the make target", CRDDirEnv, err)
	}

	t.Setenv(CRDDirEnv, "/crds")
	var e Env
	if err := e.fromVariables(o); err != nil {
		t.Fatal(err)
	}
	// This package's directory is internal/e2eutil of the module.
	wd, _ := os.Getwd()
	if want := filepath.Join(filepath.Dir(filepath.Dir(wd)), "manifests"); e.BinDir != "/bin-dir" || e.CRDDir != "/crds" || e.Manifests != want {
		t.Errorf("BinDir %s, CRDDir %s, Manifests %s; want manifests %s", e.BinDir, e.CRDDir, e.Manifests, want)
	}
	t.Setenv(ManifestsEnv, "/other")
	if err := e.fromVariables(o); err != nil || e.Manifests != "/other" {
		t.Errorf("with %s: manifests %s, %v", ManifestsEnv, e.Manifests, err)
	}
}

func TestCleanupOrder(t *testing.T) {
	var e Env
	var got []int
	for i := range 3 {
		e.Cleanup(func() { got = append(got, i) })
	}
	e.runCleanups()
	e.runCleanups() // each runs once
	if len(got) != 3 || got[0] != 2 || got[2] != 0 {
		t.Errorf("cleanups ran %v, want [2 1 0]", got)
	}
}

func TestNodeCapacity(t *testing.T) {
	n := Node{Name: "n", Devices: map[v1.ResourceName]int64{ResourceGPU: 8, "amd.com/gpu": 0}}
	c := n.Capacity(110)
	for r, want := range map[v1.ResourceName]int64{v1.ResourceCPU: 64, v1.ResourcePods: 110, ResourceGPU: 8, "amd.com/gpu": 0} {
		q, ok := c[r]
		if !ok || q.Value() != want {
			t.Errorf("capacity of %s = %v (listed %v), want %d", r, q.String(), ok, want)
		}
	}
	if m := c[v1.ResourceMemory]; m.String() != "512Gi" {
		t.Errorf("memory %s, want 512Gi", m.String())
	}
}

// TestKustomization: the base and its components, by paths relative to a
// directory outside manifests/ (kustomize refuses absolute ones), in order;
// an unknown component is refused.
func TestKustomization(t *testing.T) {
	wd, _ := os.Getwd()
	manifests := filepath.Join(filepath.Dir(filepath.Dir(wd)), "manifests")
	dir, err := Kustomization(filepath.Join(t.TempDir(), "kustomize"), manifests, []string{"routing", "node-ownership"})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Resources  []string `json:"resources"`
		Components []string `json:"components"`
	}
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		t.Fatalf("%v:\n%s", err, data)
	}
	// What kustomize reaches from dir: symlinks resolved, as it does.
	real := func(path string) string {
		r, err := filepath.EvalSymlinks(path)
		if err != nil {
			t.Error(err)
		}
		return r
	}
	resolve := func(paths []string) string {
		var out []string
		for _, p := range paths {
			if filepath.IsAbs(p) {
				t.Errorf("absolute path %s", p)
			}
			out = append(out, real(filepath.Join(real(dir), p)))
		}
		return strings.Join(out, " ")
	}
	want := real(filepath.Join(manifests, "components", "routing")) + " " + real(filepath.Join(manifests, "components", "node-ownership"))
	if k.Kind != "Kustomization" || resolve(k.Resources) != real(manifests) || resolve(k.Components) != want {
		t.Errorf("kustomization.yaml in %s:\n%s\nwant resources [%s], components [%s] (in order)", dir, data, manifests, want)
	}
	if _, err := Kustomization(t.TempDir(), manifests, []string{"nonesuch"}); err == nil || !strings.Contains(err.Error(), "nonesuch") {
		t.Errorf("unknown component: %v, want an error naming it", err)
	}
}
