package validation

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/devicefit/devicefit/pkg/apis/config"
	"github.com/devicefit/devicefit/pkg/devices"
)

func TestValidateDeviceFitArgs(t *testing.T) {
	valid := func() *config.DeviceFitArgs {
		return &config.DeviceFitArgs{DeviceResources: devices.DefaultResourcePatterns(), DeviceNodePolicy: config.DeviceNodePolicyNone}
	}
	tests := []struct {
		name string
		args func(*config.DeviceFitArgs)
		want field.ErrorList
	}{
		{name: "defaults", args: func(*config.DeviceFitArgs) {}},
		{name: "Require", args: func(a *config.DeviceFitArgs) { a.DeviceNodePolicy = config.DeviceNodePolicyRequire }},
		{
			name: "unsupported policy",
			args: func(a *config.DeviceFitArgs) { a.DeviceNodePolicy = "Prefer" },
			want: field.ErrorList{field.NotSupported(field.NewPath("args", "deviceNodePolicy"), config.DeviceNodePolicy("Prefer"), []config.DeviceNodePolicy{"None", "Require"})},
		},
		{
			name: "empty policy",
			args: func(a *config.DeviceFitArgs) { a.DeviceNodePolicy = "" },
			want: field.ErrorList{field.NotSupported(field.NewPath("args", "deviceNodePolicy"), config.DeviceNodePolicy(""), []config.DeviceNodePolicy{"None", "Require"})},
		},
		{
			name: "no device resources",
			args: func(a *config.DeviceFitArgs) { a.DeviceResources = nil },
			want: field.ErrorList{field.Required(field.NewPath("args", "deviceResources"), "list the device resources, e.g. nvidia.com/gpu")},
		},
		{
			name: "bad and duplicate device resources",
			args: func(a *config.DeviceFitArgs) {
				a.DeviceResources = []string{"nvidia.com/gpu", "nvidia.com/gpu", "cpu", "kubernetes.io/x"}
			},
			want: field.ErrorList{
				field.Duplicate(field.NewPath("args", "deviceResources").Index(1), "nvidia.com/gpu"),
				field.Invalid(field.NewPath("args", "deviceResources").Index(2), "cpu", `"cpu": want a domain-qualified extended resource name such as nvidia.com/gpu`),
				field.Invalid(field.NewPath("args", "deviceResources").Index(3), "kubernetes.io/x", `"kubernetes.io/x": the kubernetes.io domain holds native resources, not devices`),
			},
		},
		{
			name: "allowed counts out of range and duplicated",
			args: func(a *config.DeviceFitArgs) { a.AllowedCounts = []int64{1, 0, 2048, 1} },
			want: field.ErrorList{
				field.Invalid(field.NewPath("args", "allowedCounts").Index(1), int64(0), "must be between 1 and 1024"),
				field.Invalid(field.NewPath("args", "allowedCounts").Index(2), int64(2048), "must be between 1 and 1024"),
				field.Duplicate(field.NewPath("args", "allowedCounts").Index(3), int64(1)),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := valid()
			tt.args(args)
			got := deviceFitArgsErrors(field.NewPath("args"), args)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("unexpected errors (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestValidateConfigFile(t *testing.T) {
	const cfg = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
- schedulerName: devicefit
  plugins:
    multiPoint:
      enabled:
      - name: DeviceFit
  pluginConfig:
  - name: DeviceFit
    args:
      deviceNodePolicy: %s
`
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if err := ValidateConfigFile(write("good.yaml", strings.Replace(cfg, "%s", "Require", 1))); err != nil {
		t.Errorf("valid file: %v", err)
	}
	err := ValidateConfigFile(write("bad.yaml", strings.Replace(cfg, "%s", "Sometimes", 1)))
	want := `profiles[1].pluginConfig[0].args.deviceNodePolicy: Unsupported value: "Sometimes": supported values: "None", "Require"`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("bad file: got %v, want an error containing %q", err, want)
	}
	if err := ValidateConfigFile(""); err != nil {
		t.Errorf("no --config: %v", err)
	}
}

func fieldPath(name string) *field.Path { return field.NewPath(name) }
