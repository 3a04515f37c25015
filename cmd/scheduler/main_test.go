package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadArgsNameTheField runs the scheduler command as the binary does, with
// a config whose DeviceFit args are wrong: it must fail before connecting to
// any cluster, naming each bad field by its full path.
func TestBadArgsNameTheField(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	err := os.WriteFile(cfg, []byte(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: devicefit
  plugins:
    multiPoint:
      enabled:
      - name: DeviceFit
  pluginConfig:
  - name: DeviceFit
    args:
      deviceNodePolicy: Sometimes
      allowedCounts: [3, 0]
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := newCommand()
	cmd.SetArgs([]string{"--config", cfg, "--bind-address", "127.0.0.1", "--secure-port", "0"})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err = cmd.Execute()
	if err == nil {
		t.Fatal("the scheduler accepted bad DeviceFit args")
	}
	for _, want := range []string{
		`profiles[0].pluginConfig[0].args.deviceNodePolicy: Unsupported value: "Sometimes"`,
		`profiles[0].pluginConfig[0].args.allowedCounts[1]: Invalid value: 0`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

// TestUnknownPluginFails: a profile that names a plugin this binary does not
// have (a typo, or a plugin of another scheduler build) must stop the
// scheduler with the plugin's name, before it schedules anything. The
// kubeconfig points at a port nothing listens on: the check must not need
// a cluster.
func TestUnknownPluginFails(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: none, user: {token: none}}]
contexts: [{name: none, context: {cluster: none, user: none}}]
current-context: none
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: `+kubeconfig+`
leaderElection:
  leaderElect: false
profiles:
- schedulerName: devicefit
  plugins:
    multiPoint:
      enabled:
      - name: DeviceFitt
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := newCommand()
	cmd.SetArgs([]string{"--config", cfg, "--bind-address", "127.0.0.1", "--secure-port", "0"})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.Execute()
	if err == nil {
		t.Fatal("the scheduler started with an unknown plugin")
	}
	if want := `"DeviceFitt" does not exist`; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not contain %q", err, want)
	}
}

// TestHelpListsVersion: the scheduler's --version is upstream's
// (component-base verflag, in the global section); it prints and exits the
// process, so the test reads the help instead of running it. The version it
// prints is the one hack/version.sh stamps into every devicefit binary.
func TestHelpListsVersion(t *testing.T) {
	cmd := newCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--help"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	help := out.String()
	global := strings.Index(help, "\nGlobal flags:\n")
	if global < 0 {
		t.Fatalf("help has no global section:\n%s", help)
	}
	if !strings.Contains(help[global:], "--version version[=true]") {
		t.Errorf("the global section does not list --version:\n%s", help[global:])
	}
}
