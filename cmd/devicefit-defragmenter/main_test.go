package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStartupErrors: bad input stops the defragmenter before it touches a
// cluster, with the field path of each error.
func TestStartupErrors(t *testing.T) {
	dir := t.TempDir()
	sched := filepath.Join(dir, "scheduler-config.yaml")
	data, err := os.ReadFile(filepath.Join("..", "..", "manifests", "scheduler-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sched, data, 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		head := "apiVersion: devicefit.io/v1alpha1\nkind: DefragmenterConfiguration\nschedulerConfigFile: " + sched + "\n"
		if err := os.WriteFile(path, []byte(head+body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{name: "no config", args: nil, code: 2, want: []string{"--config is required"}},
		{name: "unknown flag", args: []string{"--budget", "3"}, code: 2, want: []string{"unknown flag: --budget"}},
		{name: "missing file", args: []string{"--config", filepath.Join(dir, "none.yaml")}, code: 1, want: []string{"none.yaml: no such file"}},
		{name: "negative budget and unknown resource", code: 1,
			args: []string{"--config", write("bad.yaml", "optIn: {namespaces: [batch]}\nbudget: {movesPerHour: -1}\nfreeNodes: {count: 1, resource: example.com/fpga}\n")},
			want: []string{"invalid DefragmenterConfiguration in", "budget.movesPerHour: Invalid value: -1", `freeNodes.resource: Unsupported value: "example.com/fpga"`}},
		{name: "malformed budget", code: 1,
			args: []string{"--config", write("malformed.yaml", "optIn: {namespaces: [batch]}\nbudget: {concurrentMoves: \"1%\"}\n")},
			want: []string{"concurrentMoves"}},
		{name: "help", args: []string{"--help"}, code: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tc.args, &stdout, &stderr); code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout.String(), stderr.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr %q lacks %q", stderr.String(), w)
				}
			}
		})
	}
}

// TestComponentConfig: the configuration manifests/components/defragmenter
// ships loads and validates against the manifests' scheduler configuration.
func TestComponentConfig(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join("..", "..", "manifests", "components", "defragmenter", "defragmenter-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sched, err := filepath.Abs(filepath.Join("..", "..", "manifests", "scheduler-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "defragmenter-config.yaml")
	body := strings.Replace(string(data), "schedulerConfigFile: /etc/devicefit/scheduler-config.yaml", "schedulerConfigFile: "+sched, 1)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	// An unreachable API server: the configuration passed, the client
	// cannot be built or reach it.
	code := run([]string{"--config", path, "--kubeconfig", filepath.Join(dir, "none.kubeconfig"), "--health-metrics-bind-address", "0"}, &stdout, &stderr)
	if code != 1 || strings.Contains(stderr.String(), "invalid DefragmenterConfiguration") || !strings.Contains(stderr.String(), "kubeconfig") {
		t.Errorf("exit %d, stderr %q: want the configuration accepted and the kubeconfig refused", code, stderr.String())
	}
}
