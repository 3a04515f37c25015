package main

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"text/template"

	"sigs.k8s.io/yaml"
)

// krewManifest is the part of krew's Plugin (v1alpha2) the index checks.
type krewManifest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		Homepage         string `json:"homepage"`
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			SHA256 string `json:"sha256"`
			Bin    string `json:"bin"`
		} `json:"platforms"`
	} `json:"spec"`
}

// TestKrewManifest renders .krew.yaml as krew-release-bot does (TagName,
// addURIAndSha) and checks what krew-index requires: the plugin's name is
// the binary's without kubectl-, a semver version, one platform per
// os/arch with an archive named for it and its sha256, and the binary.
func TestKrewManifest(t *testing.T) {
	text, err := os.ReadFile("../../.krew.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const tag = "v0.2.0"
	// The bot's addURIAndSha expands the URI's own {{ .TagName }}, fetches
	// the archive and writes its uri and sha256.
	funcs := template.FuncMap{"addURIAndSha": func(uri, tag string) string {
		uri = strings.ReplaceAll(uri, "{{ .TagName }}", tag)
		return fmt.Sprintf("uri: %s\n      sha256: %064x", uri, len(uri))
	}}
	tmpl, err := template.New("krew").Funcs(funcs).Parse(string(text))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, map[string]string{"TagName": tag}); err != nil {
		t.Fatal(err)
	}
	var m krewManifest
	if err := yaml.UnmarshalStrict(out.Bytes(), &m); err != nil {
		t.Fatalf("rendered manifest: %v\n%s", err, out.String())
	}
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" {
		t.Errorf("apiVersion/kind %s/%s", m.APIVersion, m.Kind)
	}
	if m.Metadata.Name != "devicefit" || m.Spec.Version != tag || m.Spec.ShortDescription == "" {
		t.Errorf("name %q, version %q, shortDescription %q", m.Metadata.Name, m.Spec.Version, m.Spec.ShortDescription)
	}
	seen := map[string]bool{}
	sha := regexp.MustCompile(`^[0-9a-f]{64}$`)
	for _, p := range m.Spec.Platforms {
		os, arch := p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"]
		key := os + "/" + arch
		if seen[key] {
			t.Errorf("platform %s twice", key)
		}
		seen[key] = true
		if want := fmt.Sprintf("/kubectl-devicefit_%s_%s_%s.tar.gz", tag, os, arch); !strings.HasSuffix(p.URI, want) {
			t.Errorf("%s: uri %q, want it to end %q", key, p.URI, want)
		}
		if !sha.MatchString(p.SHA256) || p.Bin != "kubectl-devicefit" {
			t.Errorf("%s: sha256 %q, bin %q", key, p.SHA256, p.Bin)
		}
	}
	for _, want := range []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64"} {
		if !seen[want] {
			t.Errorf("no platform %s", want)
		}
	}
}
