package config_test

import (
	"context"
	"fmt"
	"testing"

	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/devicefit/devicefit/pkg/apis/config"
	"github.com/devicefit/devicefit/pkg/apis/config/scheme"
	"github.com/devicefit/devicefit/pkg/apis/config/validation"
	"github.com/devicefit/devicefit/pkg/plugins/devicefit"
	"github.com/devicefit/devicefit/pkg/plugins/devicepack"
)

// The fuzz targets mutate the JSON of one plugin's args and decode it inside
// a KubeSchedulerConfiguration through the scheduler's own scheme (strict
// decoding, defaulting, conversion), then validate it. JSON rather than YAML:
// the kube-scheduler's YAML parser (go.yaml.in/yaml/v2) spends minutes on some
// mutated inputs in yaml_parser_scan_plain_scalar, which is upstream's and
// an operator's own file, and would stall the fuzzer on it instead of on
// our code. Whatever the input: no panic, and args that pass validation
// build their plugin, since a configuration the scheduler accepts must not
// fail later in the plugin constructor.
//
//	make fuzz FUZZTIME=60s   (or go test ./pkg/apis/config -run '^$' -fuzz FuzzDevicePackArgs)

const deviceFitSeed = `{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "DeviceFitArgs",
 "deviceResources": ["nvidia.com/gpu", "nvidia.com/mig-*", "amd.com/gpu"],
 "deviceNodePolicy": "Require", "allowedCounts": [1, 2, 4, 8]}`

const devicePackSeed = `{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "DevicePackArgs",
 "deviceResources": ["nvidia.com/gpu", "google.com/tpu*"],
 "workload": {"mode": "Static", "halfLifePods": 100, "priorPods": 10, "classes": [
   {"resource": "nvidia.com/gpu", "devices": 4, "milliCPU": 8000, "memoryMiB": 65536, "products": "H100*", "weight": 3},
   {"resource": "nvidia.com/gpu", "devices": 1, "weight": 1}]},
 "fragmentationWeight": 100, "bestFitWeight": 10, "productValueWeight": 1, "scarcityWeight": 100,
 "deviceNodePenalty": 10, "productValues": [{"product": "NVIDIA-H100-80GB-HBM3", "value": 100}]}`

func FuzzDeviceFitArgs(f *testing.F) {
	f.Add([]byte(deviceFitSeed))
	f.Add([]byte(`{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "DeviceFitArgs"}`))
	f.Fuzz(func(t *testing.T, args []byte) {
		if err := runOne("DeviceFit", args); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzDevicePackArgs(f *testing.F) {
	f.Add([]byte(devicePackSeed))
	f.Add([]byte(`{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "DevicePackArgs", "workload": {"mode": "Observed"}}`))
	f.Fuzz(func(t *testing.T, args []byte) {
		if err := runOne("DevicePack", args); err != nil {
			t.Fatal(err)
		}
	})
}

// configWith wraps one plugin's args into a KubeSchedulerConfiguration.
func configWith(plugin string, args []byte) []byte {
	return []byte(`{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
 "profiles": [{"schedulerName": "devicefit",
   "plugins": {"multiPoint": {"enabled": [{"name": "DeviceFit"}, {"name": "DevicePack"}]}},
   "pluginConfig": [{"name": "` + plugin + `", "args": ` + string(args) + `}]}]}`)
}

// runOne decodes and validates the args; it fails only when validated args
// do not build their plugin.
func runOne(plugin string, args []byte) error {
	obj, _, err := scheme.Codecs.UniversalDecoder().Decode(configWith(plugin, args), nil, nil)
	if err != nil {
		return nil
	}
	cfg, ok := obj.(*schedconfig.KubeSchedulerConfiguration)
	if !ok {
		return nil
	}
	if err := validation.ValidateConfiguration(cfg); err != nil {
		return nil
	}
	ctx := context.Background()
	for _, p := range cfg.Profiles {
		for _, pc := range p.PluginConfig {
			var err error
			switch args := pc.Args.(type) {
			case *config.DeviceFitArgs:
				_, err = devicefit.New(ctx, args, nil)
			case *config.DevicePackArgs:
				_, err = devicepack.New(ctx, args, nil)
			default:
				continue
			}
			if err != nil {
				return fmt.Errorf("profile %s, plugin %s: args pass validation but New fails: %w", p.SchedulerName, pc.Name, err)
			}
		}
	}
	return nil
}

// TestSeedsValid keeps the fuzz seeds meaningful: they must decode and
// validate, so that mutations start from the path that builds plugins.
func TestSeedsValid(t *testing.T) {
	for plugin, seed := range map[string]string{"DeviceFit": deviceFitSeed, "DevicePack": devicePackSeed} {
		obj, _, err := scheme.Codecs.UniversalDecoder().Decode(configWith(plugin, []byte(seed)), nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", plugin, err)
		}
		cfg := obj.(*schedconfig.KubeSchedulerConfiguration)
		if err := validation.ValidateConfiguration(cfg); err != nil {
			t.Fatalf("%s: %v", plugin, err)
		}
		var found bool
		for _, pc := range cfg.Profiles[0].PluginConfig {
			switch pc.Args.(type) {
			case *config.DeviceFitArgs, *config.DevicePackArgs:
				found = found || pc.Name == plugin
			}
		}
		if !found {
			t.Fatalf("%s: seed did not decode into typed args", plugin)
		}
	}
}
