package main

import (
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
