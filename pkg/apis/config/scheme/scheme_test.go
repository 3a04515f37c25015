package scheme

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/devicefit/devicefit/pkg/apis/config"
	"github.com/devicefit/devicefit/pkg/devices"
)

func decode(t *testing.T, yaml string) (*schedconfig.KubeSchedulerConfiguration, error) {
	t.Helper()
	obj, _, err := Codecs.UniversalDecoder().Decode([]byte(yaml), nil, nil)
	if err != nil {
		return nil, err
	}
	cfg, ok := obj.(*schedconfig.KubeSchedulerConfiguration)
	if !ok {
		t.Fatalf("decoded %T, want KubeSchedulerConfiguration", obj)
	}
	return cfg, nil
}

func deviceFitArgs(t *testing.T, cfg *schedconfig.KubeSchedulerConfiguration) *config.DeviceFitArgs {
	t.Helper()
	for _, pc := range cfg.Profiles[0].PluginConfig {
		if pc.Name == "DeviceFit" {
			args, ok := pc.Args.(*config.DeviceFitArgs)
			if !ok {
				t.Fatalf("DeviceFit args decoded as %T", pc.Args)
			}
			return args
		}
	}
	t.Fatal("no DeviceFit pluginConfig in the decoded profile")
	return nil
}

const header = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: devicefit
  plugins:
    multiPoint:
      enabled:
      - name: DeviceFit
`

func TestDecodeDeviceFitArgs(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		want    *config.DeviceFitArgs
		wantErr string
	}{
		{
			name: "explicit args",
			yaml: header + `  pluginConfig:
  - name: DeviceFit
    args:
      deviceResources: ["nvidia.com/gpu", "nvidia.com/mig-*"]
      deviceNodePolicy: Require
      allowedCounts: [1, 2, 4, 8]
`,
			want: &config.DeviceFitArgs{
				DeviceResources:  []string{"nvidia.com/gpu", "nvidia.com/mig-*"},
				DeviceNodePolicy: config.DeviceNodePolicyRequire,
				AllowedCounts:    []int64{1, 2, 4, 8},
			},
		},
		{
			name: "empty args are defaulted",
			yaml: header + `  pluginConfig:
  - name: DeviceFit
    args: {}
`,
			want: &config.DeviceFitArgs{DeviceResources: devices.DefaultResourcePatterns(), DeviceNodePolicy: config.DeviceNodePolicyNone},
		},
		{
			// Upstream defaulting adds args for every enabled plugin whose
			// "<Name>Args" kind is registered; ours must be among them, or the
			// plugin would be built with nil args.
			name: "enabled without pluginConfig gets default args",
			yaml: header,
			want: &config.DeviceFitArgs{DeviceResources: devices.DefaultResourcePatterns(), DeviceNodePolicy: config.DeviceNodePolicyNone},
		},
		{
			name: "unknown field is rejected (strict decoding)",
			yaml: header + `  pluginConfig:
  - name: DeviceFit
    args:
      deviceNodePolcy: Require
`,
			wantErr: `unknown field "deviceNodePolcy"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := decode(t, tt.yaml)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := deviceFitArgs(t, cfg)
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(config.DeviceFitArgs{}, "TypeMeta")); diff != "" {
				t.Errorf("unexpected args (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestDecodeDevicePackArgs(t *testing.T) {
	cfg, err := decode(t, `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: devicefit
  plugins:
    multiPoint:
      enabled:
      - name: DevicePack
  pluginConfig:
  - name: DevicePack
    args:
      bestFitWeight: 0
      workload:
        mode: Static
        classes:
        - {resource: nvidia.com/gpu, devices: 8, milliCPU: 64000, memoryMiB: 524288, products: "H100*", weight: 3}
      productValues:
      - {product: "NVIDIA-H100*", value: 100}
`)
	if err != nil {
		t.Fatal(err)
	}
	var got *config.DevicePackArgs
	for _, pc := range cfg.Profiles[0].PluginConfig {
		if a, ok := pc.Args.(*config.DevicePackArgs); ok {
			got = a
		}
	}
	want := &config.DevicePackArgs{
		DeviceResources: devices.DefaultResourcePatterns(),
		Workload: config.WorkloadSpec{
			Mode: config.WorkloadStatic, HalfLifePods: 2000, PriorPods: 100,
			Classes: []config.WorkloadClass{{Resource: "nvidia.com/gpu", Devices: 8, MilliCPU: 64000, MemoryMiB: 524288, Products: "H100*", Weight: 3}},
		},
		// An explicit 0 stays 0; unset weights get their defaults.
		FragmentationWeight: 100, BestFitWeight: 0, ProductValueWeight: 1, ScarcityWeight: 100,
		ProductValues: []config.ProductValue{{Product: "NVIDIA-H100*", Value: 100}},
		Shortlist:     true,
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(config.DevicePackArgs{}, "TypeMeta")); diff != "" {
		t.Errorf("unexpected args (-want,+got):\n%s", diff)
	}
}
