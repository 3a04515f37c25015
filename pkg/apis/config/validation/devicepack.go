package validation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/devicefit/devicefit/pkg/apis/config"
	"github.com/devicefit/devicefit/pkg/devices"
)

const (
	maxWeight    = 100
	maxPods      = 10_000_000
	maxClasses   = 256
	maxMilliCPU  = 1 << 40
	maxMemoryMiB = 1 << 40
)

var supportedWorkloadModes = sets.New(config.WorkloadObserved, config.WorkloadStatic)

// ValidateDevicePackArgs validates args; path is where they sit in the
// configuration (nil in the plugin constructor).
func ValidateDevicePackArgs(path *field.Path, args *config.DevicePackArgs) error {
	return devicePackArgsErrors(path, args).ToAggregate()
}

func devicePackArgsErrors(path *field.Path, args *config.DevicePackArgs) field.ErrorList {
	errs := validateDeviceResources(path.Child("deviceResources"), args.DeviceResources)
	for _, w := range []struct {
		name  string
		value int64
	}{
		{"fragmentationWeight", args.FragmentationWeight},
		{"bestFitWeight", args.BestFitWeight},
		{"productValueWeight", args.ProductValueWeight},
		{"scarcityWeight", args.ScarcityWeight},
		{"deviceNodePenalty", args.DeviceNodePenalty},
	} {
		if w.value < 0 || w.value > maxWeight {
			errs = append(errs, field.Invalid(path.Child(w.name), w.value, fmt.Sprintf("must be between 0 and %d", maxWeight)))
		}
	}
	if args.FragmentationWeight+args.BestFitWeight+args.ProductValueWeight+args.ScarcityWeight+args.DeviceNodePenalty == 0 {
		errs = append(errs, field.Invalid(path, "", "all weights are 0: DevicePack would score nothing"))
	}

	w, wp := args.Workload, path.Child("workload")
	if !supportedWorkloadModes.Has(w.Mode) {
		errs = append(errs, field.NotSupported(wp.Child("mode"), w.Mode, sets.List(supportedWorkloadModes)))
	}
	if w.HalfLifePods < 1 || w.HalfLifePods > maxPods {
		errs = append(errs, field.Invalid(wp.Child("halfLifePods"), w.HalfLifePods, fmt.Sprintf("must be between 1 and %d", maxPods)))
	}
	if w.PriorPods < 0 || w.PriorPods > maxPods {
		errs = append(errs, field.Invalid(wp.Child("priorPods"), w.PriorPods, fmt.Sprintf("must be between 0 and %d", maxPods)))
	}
	if w.Mode == config.WorkloadStatic && len(w.Classes) == 0 {
		errs = append(errs, field.Required(wp.Child("classes"), "the Static workload needs classes"))
	}
	if len(w.Classes) > maxClasses {
		errs = append(errs, field.TooMany(wp.Child("classes"), len(w.Classes), maxClasses))
	}
	for i, c := range w.Classes {
		cp := wp.Child("classes").Index(i)
		if err := devices.ValidateResourcePattern(c.Resource); err != nil || c.Resource[len(c.Resource)-1] == '*' {
			errs = append(errs, field.Invalid(cp.Child("resource"), c.Resource, "want a device resource name such as nvidia.com/gpu"))
		}
		if c.Devices < 1 || c.Devices > MaxAllowedCount {
			errs = append(errs, field.Invalid(cp.Child("devices"), c.Devices, "must be between 1 and 1024"))
		}
		if c.MilliCPU < 0 || c.MilliCPU > maxMilliCPU {
			errs = append(errs, field.Invalid(cp.Child("milliCPU"), c.MilliCPU, "must not be negative or absurd"))
		}
		if c.MemoryMiB < 0 || c.MemoryMiB > maxMemoryMiB {
			errs = append(errs, field.Invalid(cp.Child("memoryMiB"), c.MemoryMiB, "must not be negative or absurd"))
		}
		if c.Products != "" {
			if _, err := devices.ParseSelector(map[string]string{devices.AnnotationProducts: c.Products}); err != nil {
				errs = append(errs, field.Invalid(cp.Child("products"), c.Products, err.Error()))
			}
		}
		if c.Weight < 1 || c.Weight > maxPods {
			errs = append(errs, field.Invalid(cp.Child("weight"), c.Weight, fmt.Sprintf("must be between 1 and %d", maxPods)))
		}
	}
	for i, v := range args.ProductValues {
		vp := path.Child("productValues").Index(i)
		if _, err := devices.ParseProductPattern(v.Product); err != nil {
			errs = append(errs, field.Invalid(vp.Child("product"), v.Product, err.Error()))
		}
		if v.Value < 0 || v.Value > 1_000_000 {
			errs = append(errs, field.Invalid(vp.Child("value"), v.Value, "must be between 0 and 1000000"))
		}
	}
	return errs
}
