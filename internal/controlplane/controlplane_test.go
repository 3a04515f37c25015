package controlplane

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

func TestRenderSchedulerConfig(t *testing.T) {
	in := []byte(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  qps: 50
leaderElection:
  leaderElect: true
  resourceName: devicefit-scheduler
  resourceNamespace: devicefit-system
profiles:
  - schedulerName: devicefit
`)
	out, le, err := RenderSchedulerConfig(in, "/x/kubeconfig")
	if err != nil {
		t.Fatal(err)
	}
	if le != (LeaderElection{ResourceName: "devicefit-scheduler", ResourceNamespace: "devicefit-system"}) {
		t.Errorf("lease %+v", le)
	}
	var cfg map[string]interface{}
	if err := yaml.Unmarshal(out, &cfg); err != nil {
		t.Fatal(err)
	}
	cc := cfg["clientConnection"].(map[string]interface{})
	if cc["kubeconfig"] != "/x/kubeconfig" || cc["qps"] != float64(50) {
		t.Errorf("clientConnection %v", cc)
	}

	_, le, err = RenderSchedulerConfig([]byte("kind: KubeSchedulerConfiguration\n"), "k")
	if err != nil || le != (LeaderElection{ResourceName: "kube-scheduler", ResourceNamespace: "kube-system"}) {
		t.Errorf("without leaderElection: %+v, %v; want kube-scheduler's default lease", le, err)
	}
	if _, _, err := RenderSchedulerConfig([]byte("apiVersion: v1\nkind: ConfigMap\n"), "k"); err == nil {
		t.Error("a ConfigMap was accepted as a KubeSchedulerConfiguration")
	}
}

func TestProcess(t *testing.T) {
	dir := t.TempDir()
	p := startShell(t, "sleeper", "echo started; exec sleep 60")
	if err := p.Exited(); err != nil {
		t.Fatalf("running process: %v", err)
	}
	p.Stop(5 * time.Second)
	var pe *ProcessError
	if err := p.Exited(); !errors.As(err, &pe) || pe.Process != p {
		t.Errorf("stopped process: Exited() = %v, want a *ProcessError", err)
	}
	p.Stop(time.Second) // a second Stop returns at once

	q, err := StartProcess("failer", "/bin/sh", []string{"-c", "exit 3"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	err = Poll(context.Background(), 10*time.Millisecond, 10*time.Second, q, func(context.Context) (bool, error) { return false, nil })
	if !errors.As(err, &pe) || pe.Process != q || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("Poll of an exiting process: %v, want its *ProcessError", err)
	}

	if _, err := StartProcess("missing", filepath.Join(dir, "nope"), nil, dir); err == nil {
		t.Error("a missing binary started")
	}
}

func TestTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(path, []byte("a\nb\nc\nd\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := Tail(path, 2); got != "c\nd" {
		t.Errorf("Tail = %q", got)
	}
}

func TestFreePort(t *testing.T) {
	p, err := FreePort()
	if err != nil || p <= 0 || p > 65535 {
		t.Errorf("FreePort() = %d, %v", p, err)
	}
}
