package perf

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
)

// TestNoSpreadConfigs checks that the *-nospread scheduler configs are their
// base configs with PodTopologySpread's default constraints removed and
// nothing else changed, so that the batching variant measures the profile
// that is deployed (manifests/scheduler-config.yaml). It needs no cluster.
func TestNoSpreadConfigs(t *testing.T) {
	for base, variant := range map[string]string{
		"../../manifests/scheduler-config.yaml": "config/scheduler-config-devicefit-nospread.yaml",
		"config/scheduler-config-default.yaml":  "config/scheduler-config-default-nospread.yaml",
	} {
		want, got := decodeConfig(t, base), decodeConfig(t, variant)
		for i := range got.Profiles {
			for j := range got.Profiles[i].PluginConfig {
				pc := &got.Profiles[i].PluginConfig[j]
				if pc.Name != names.PodTopologySpread {
					continue
				}
				args, ok := pc.Args.(*config.PodTopologySpreadArgs)
				if !ok {
					t.Fatalf("%s: PodTopologySpread args are %T", variant, pc.Args)
				}
				if args.DefaultingType != config.ListDefaulting || len(args.DefaultConstraints) != 0 {
					t.Errorf("%s: PodTopologySpread args %+v, want defaultingType List and no default constraints", variant, args)
				}
				// Compare the rest with the base's defaulted args.
				pc.Args = pluginArgs(want, i, names.PodTopologySpread)
			}
		}
		// An explicit pluginConfig entry comes before the defaulted ones.
		byName := cmpopts.SortSlices(func(a, b config.PluginConfig) bool { return a.Name < b.Name })
		if diff := cmp.Diff(want, got, byName); diff != "" {
			t.Errorf("%s differs from %s beyond PodTopologySpread (-base,+variant):\n%s", variant, base, diff)
		}
	}
}

func decodeConfig(t *testing.T, path string) *config.KubeSchedulerConfiguration {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	obj, _, err := scheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	cfg, ok := obj.(*config.KubeSchedulerConfiguration)
	if !ok {
		t.Fatalf("%s: decoded %T", path, obj)
	}
	return cfg
}

func pluginArgs(cfg *config.KubeSchedulerConfiguration, profile int, name string) runtime.Object {
	for _, pc := range cfg.Profiles[profile].PluginConfig {
		if pc.Name == name {
			return pc.Args
		}
	}
	return nil
}
