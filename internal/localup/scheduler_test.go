package localup

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

// The shipped configuration must come out of rendering with its profile
// intact, the kubeconfig added and the lease read.
func TestRenderSchedulerConfig(t *testing.T) {
	dir := t.TempDir()
	out, le, err := renderSchedulerConfig("../../manifests/scheduler-config.yaml", dir, "/x/scheduler.kubeconfig")
	if err != nil {
		t.Fatal(err)
	}
	if le.ResourceName != "devicefit-scheduler" || le.ResourceNamespace != "devicefit-system" {
		t.Errorf("lease %s/%s, want devicefit-system/devicefit-scheduler", le.ResourceNamespace, le.ResourceName)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		APIVersion       string `json:"apiVersion"`
		ClientConnection struct {
			Kubeconfig string `json:"kubeconfig"`
		} `json:"clientConnection"`
		Profiles []struct {
			SchedulerName string `json:"schedulerName"`
			PluginConfig  []struct {
				Name string                 `json:"name"`
				Args map[string]interface{} `json:"args"`
			} `json:"pluginConfig"`
		} `json:"profiles"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.APIVersion != "kubescheduler.config.k8s.io/v1" {
		t.Errorf("apiVersion %q", cfg.APIVersion)
	}
	if cfg.ClientConnection.Kubeconfig != "/x/scheduler.kubeconfig" {
		t.Errorf("kubeconfig %q", cfg.ClientConnection.Kubeconfig)
	}
	if len(cfg.Profiles) != 1 || cfg.Profiles[0].SchedulerName != schedulerName {
		t.Fatalf("profiles %+v, want one named %s", cfg.Profiles, schedulerName)
	}
	// The rendered copy keeps the plugin args of manifests/ as they are.
	pc := cfg.Profiles[0].PluginConfig
	if len(pc) != 2 || pc[0].Name != "DeviceFit" || pc[0].Args["kind"] != "DeviceFitArgs" || pc[0].Args["deviceNodePolicy"] != "None" ||
		pc[1].Name != "DevicePack" || pc[1].Args["kind"] != "DevicePackArgs" {
		t.Errorf("pluginConfig %+v", pc)
	}
}

func TestRenderSchedulerConfigRejectsOtherKinds(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "cm.yaml")
	if err := os.WriteFile(src, []byte("apiVersion: v1\nkind: ConfigMap\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := renderSchedulerConfig(src, dir, "k"); err == nil {
		t.Error("a ConfigMap was accepted as a KubeSchedulerConfiguration")
	}
}
