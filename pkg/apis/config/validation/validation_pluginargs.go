// Package validation checks devicefit plugin args, with field paths, the way
// upstream validates the in-tree plugin args.
package validation

import (
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/devicefit/devicefit/pkg/apis/config"
	"github.com/devicefit/devicefit/pkg/devices"
)

// MaxAllowedCount bounds allowedCounts entries: far above any node's devices.
const MaxAllowedCount = 1024

var supportedDeviceNodePolicies = sets.New(
	config.DeviceNodePolicyNone,
	config.DeviceNodePolicyRequire,
)

// ValidateDeviceFitArgs validates args; path is where they sit in the
// configuration (nil in the plugin constructor).
func ValidateDeviceFitArgs(path *field.Path, args *config.DeviceFitArgs) error {
	return deviceFitArgsErrors(path, args).ToAggregate()
}

func deviceFitArgsErrors(path *field.Path, args *config.DeviceFitArgs) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateDeviceResources(path.Child("deviceResources"), args.DeviceResources)...)
	if !supportedDeviceNodePolicies.Has(args.DeviceNodePolicy) {
		errs = append(errs, field.NotSupported(path.Child("deviceNodePolicy"), args.DeviceNodePolicy,
			sets.List(supportedDeviceNodePolicies)))
	}
	seen := sets.New[int64]()
	for i, n := range args.AllowedCounts {
		p := path.Child("allowedCounts").Index(i)
		switch {
		case n < 1 || n > MaxAllowedCount:
			errs = append(errs, field.Invalid(p, n, "must be between 1 and 1024"))
		case seen.Has(n):
			errs = append(errs, field.Duplicate(p, n))
		}
		seen.Insert(n)
	}
	return errs
}

func validateDeviceResources(path *field.Path, patterns []string) field.ErrorList {
	var errs field.ErrorList
	if len(patterns) == 0 {
		// Defaulting fills the list; an empty one reaching here would make
		// every pod device-free and DeviceFit a silent no-op.
		return append(errs, field.Required(path, "list the device resources, e.g. nvidia.com/gpu"))
	}
	seen := sets.New[string]()
	for i, p := range patterns {
		if err := devices.ValidateResourcePattern(p); err != nil {
			errs = append(errs, field.Invalid(path.Index(i), p, err.Error()))
		} else if seen.Has(p) {
			errs = append(errs, field.Duplicate(path.Index(i), p))
		}
		seen.Insert(p)
	}
	return errs
}
