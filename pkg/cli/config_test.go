package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/devicefit/devicefit/pkg/apis/config"
)

// deployedFile is the repository's scheduler configuration, the one
// manifests/ deploys.
const deployedFile = "../../manifests/scheduler-config.yaml"

func deployment(configMap string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "devicefit-system", Name: "devicefit-scheduler"},
		Spec: appsv1.DeploymentSpec{Template: v1.PodTemplateSpec{Spec: v1.PodSpec{Volumes: []v1.Volume{{
			Name: "config",
			VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
				LocalObjectReference: v1.LocalObjectReference{Name: configMap},
			}},
		}}}}},
	}
}

func configMap(name, data string) *v1.ConfigMap {
	return &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "devicefit-system", Name: name},
		Data:       map[string]string{ConfigFile: data},
	}
}

func TestLoadProfile(t *testing.T) {
	deployed, err := os.ReadFile(deployedFile)
	if err != nil {
		t.Fatal(err)
	}
	static := strings.Replace(string(deployed), "mode: Observed", "mode: Static\n            classes: [{resource: nvidia.com/gpu, devices: 2, weight: 1}]", 1)
	dir := t.TempDir()
	file := filepath.Join(dir, "static.yaml")
	if err := os.WriteFile(file, []byte(static), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		objects []any
		file    string
		profile string
		// wantSource is a prefix of Source; wantMode DevicePack's mode
		// ("" when the profile has no DevicePack).
		wantSource, wantMode, wantErr string
	}{
		{
			name:       "the deployment's configmap",
			objects:    []any{deployment("devicefit-scheduler-config-abc"), configMap("devicefit-scheduler-config-abc", string(deployed))},
			wantSource: "configmap devicefit-system/devicefit-scheduler-config-abc (deployment devicefit-system/devicefit-scheduler)",
			wantMode:   string(config.WorkloadObserved),
		},
		{
			name:       "a file wins",
			objects:    []any{deployment("x"), configMap("x", string(deployed))},
			file:       file,
			wantSource: file, wantMode: string(config.WorkloadStatic),
		},
		{name: "no deployment: defaults", wantSource: "defaults (", wantMode: string(config.WorkloadObserved)},
		{
			name:    "a deployment without the configmap: defaults",
			objects: []any{deployment("gone")}, wantSource: "defaults (", wantMode: string(config.WorkloadObserved),
		},
		{
			name:    "an invalid configuration is an error",
			objects: []any{deployment("bad"), configMap("bad", "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles: 3\n")},
			wantErr: "configmap devicefit-system/bad",
		},
		{
			name:    "no such profile",
			objects: []any{deployment("x"), configMap("x", string(deployed))},
			profile: "gpu", wantErr: `no profile "gpu" (profiles: devicefit)`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset()
			for _, o := range tt.objects {
				switch o := o.(type) {
				case *appsv1.Deployment:
					if _, err := cs.AppsV1().Deployments(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
				case *v1.ConfigMap:
					if _, err := cs.CoreV1().ConfigMaps(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
				}
			}
			profile := tt.profile
			if profile == "" {
				profile = "devicefit"
			}
			p, err := LoadProfile(context.Background(), cs, tt.file, DefaultScheduler, profile)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("want an error with %q, got %v", tt.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(p.Source, tt.wantSource) {
				t.Errorf("source %q, want it to start with %q", p.Source, tt.wantSource)
			}
			if p.Fit == nil {
				t.Errorf("no DeviceFit args")
			}
			mode := ""
			if p.Pack != nil {
				mode = string(p.Pack.Workload.Mode)
			}
			if mode != tt.wantMode {
				t.Errorf("DevicePack workload mode %q, want %q", mode, tt.wantMode)
			}
		})
	}
}
