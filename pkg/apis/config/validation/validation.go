package validation

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/devicefit/devicefit/pkg/apis/config"
)

// ValidateConfiguration validates the devicefit args of every profile with
// their full path (profiles[0].pluginConfig[1].args.deviceNodePolicy).
// Upstream validates only in-tree args in KubeSchedulerConfiguration; without
// this the error would surface from the plugin constructor without saying
// where in the file the bad value is.
func ValidateConfiguration(cfg *schedconfig.KubeSchedulerConfiguration) error {
	var errs field.ErrorList
	for i := range cfg.Profiles {
		for j, pc := range cfg.Profiles[i].PluginConfig {
			path := field.NewPath("profiles").Index(i).Child("pluginConfig").Index(j).Child("args")
			switch args := pc.Args.(type) {
			case *config.DeviceFitArgs:
				errs = append(errs, deviceFitArgsErrors(path, args)...)
			case *config.DevicePackArgs:
				errs = append(errs, devicePackArgsErrors(path, args)...)
			}
		}
	}
	return errs.ToAggregate()
}
