package defrag

import (
	"context"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/devicefit/devicefit/pkg/apis/defragmenter/v1alpha1"
	"github.com/devicefit/devicefit/pkg/apis/defragmenter/validation"
	"github.com/devicefit/devicefit/pkg/cli"
)

var (
	configScheme = runtime.NewScheme()
	// configCodecs decode strictly: an unknown or duplicate field is an
	// error, as kube-scheduler's --config decoding makes it.
	configCodecs = serializer.NewCodecFactory(configScheme, serializer.EnableStrict)
)

func init() {
	if err := v1alpha1.AddToScheme(configScheme); err != nil {
		panic(err)
	}
}

// LoadConfig reads a DefragmenterConfiguration file, defaults it, loads the
// scheduler profile it names and validates both together: every error
// with its field path (the scheduler config's own validation style), so a
// bad budget or an unknown resource name stops the defragmenter at
// startup.
func LoadConfig(path string) (*v1alpha1.DefragmenterConfiguration, *cli.Profile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := DecodeConfig(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	var profile *cli.Profile
	var resources []string
	if cfg.SchedulerConfigFile != "" {
		if profile, err = cli.LoadProfile(context.Background(), nil, cfg.SchedulerConfigFile, "", cfg.SchedulerName); err != nil {
			return nil, nil, fmt.Errorf("%s: schedulerConfigFile: %w", path, err)
		}
		resources = profile.Fit.DeviceResources
	}
	if errs := validation.ValidateConfiguration(cfg, resources); len(errs) > 0 {
		return nil, nil, fmt.Errorf("invalid DefragmenterConfiguration in %s: %w", path, errs.ToAggregate())
	}
	return cfg, profile, nil
}

// DecodeConfig decodes and defaults a DefragmenterConfiguration.
func DecodeConfig(data []byte) (*v1alpha1.DefragmenterConfiguration, error) {
	obj, gvk, err := configCodecs.UniversalDecoder(v1alpha1.SchemeGroupVersion).Decode(data, nil, nil)
	if err != nil {
		return nil, err
	}
	cfg, ok := obj.(*v1alpha1.DefragmenterConfiguration)
	if !ok {
		return nil, fmt.Errorf("got %s, want DefragmenterConfiguration (apiVersion %s)", gvk, v1alpha1.SchemeGroupVersion)
	}
	return cfg, nil
}
