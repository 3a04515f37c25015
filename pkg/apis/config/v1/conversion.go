package v1

import (
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/devicefit/devicefit/pkg/apis/config"
)

func addConversionFuncs(s *runtime.Scheme) error {
	if err := s.AddConversionFunc((*DevicePackArgs)(nil), (*config.DevicePackArgs)(nil), func(a, b interface{}, scope conversion.Scope) error {
		return Convert_v1_DevicePackArgs_To_config_DevicePackArgs(a.(*DevicePackArgs), b.(*config.DevicePackArgs), scope)
	}); err != nil {
		return err
	}
	if err := s.AddConversionFunc((*config.DevicePackArgs)(nil), (*DevicePackArgs)(nil), func(a, b interface{}, scope conversion.Scope) error {
		return Convert_config_DevicePackArgs_To_v1_DevicePackArgs(a.(*config.DevicePackArgs), b.(*DevicePackArgs), scope)
	}); err != nil {
		return err
	}
	if err := s.AddConversionFunc((*DeviceFitArgs)(nil), (*config.DeviceFitArgs)(nil), func(a, b interface{}, scope conversion.Scope) error {
		return Convert_v1_DeviceFitArgs_To_config_DeviceFitArgs(a.(*DeviceFitArgs), b.(*config.DeviceFitArgs), scope)
	}); err != nil {
		return err
	}
	return s.AddConversionFunc((*config.DeviceFitArgs)(nil), (*DeviceFitArgs)(nil), func(a, b interface{}, scope conversion.Scope) error {
		return Convert_config_DeviceFitArgs_To_v1_DeviceFitArgs(a.(*config.DeviceFitArgs), b.(*DeviceFitArgs), scope)
	})
}

// Convert_v1_DeviceFitArgs_To_config_DeviceFitArgs converts v1 args to the internal type.
func Convert_v1_DeviceFitArgs_To_config_DeviceFitArgs(in *DeviceFitArgs, out *config.DeviceFitArgs, _ conversion.Scope) error { //nolint:revive // conversion naming
	out.DeviceResources = append([]string(nil), in.DeviceResources...)
	out.AllowedCounts = append([]int64(nil), in.AllowedCounts...)
	out.DeviceNodePolicy = ""
	if in.DeviceNodePolicy != nil {
		out.DeviceNodePolicy = config.DeviceNodePolicy(*in.DeviceNodePolicy)
	}
	return nil
}

// Convert_config_DeviceFitArgs_To_v1_DeviceFitArgs converts internal args to v1.
func Convert_config_DeviceFitArgs_To_v1_DeviceFitArgs(in *config.DeviceFitArgs, out *DeviceFitArgs, _ conversion.Scope) error { //nolint:revive // conversion naming
	out.DeviceResources = append([]string(nil), in.DeviceResources...)
	out.AllowedCounts = append([]int64(nil), in.AllowedCounts...)
	out.DeviceNodePolicy = nil
	if in.DeviceNodePolicy != "" {
		p := DeviceNodePolicy(in.DeviceNodePolicy)
		out.DeviceNodePolicy = &p
	}
	return nil
}

// Convert_v1_DevicePackArgs_To_config_DevicePackArgs converts v1 args to the
// internal type. Unset pointers (args that skipped defaulting) become zero.
func Convert_v1_DevicePackArgs_To_config_DevicePackArgs(in *DevicePackArgs, out *config.DevicePackArgs, _ conversion.Scope) error { //nolint:revive // conversion naming
	*out = config.DevicePackArgs{
		DeviceResources:     append([]string(nil), in.DeviceResources...),
		FragmentationWeight: deref(in.FragmentationWeight),
		BestFitWeight:       deref(in.BestFitWeight),
		ProductValueWeight:  deref(in.ProductValueWeight),
		ScarcityWeight:      deref(in.ScarcityWeight),
		DeviceNodePenalty:   deref(in.DeviceNodePenalty),
	}
	for _, v := range in.ProductValues {
		out.ProductValues = append(out.ProductValues, config.ProductValue(v))
	}
	if w := in.Workload; w != nil {
		out.Workload = config.WorkloadSpec{
			Mode:         config.WorkloadMode(deref(w.Mode)),
			HalfLifePods: deref(w.HalfLifePods),
			PriorPods:    deref(w.PriorPods),
		}
		for _, c := range w.Classes {
			out.Workload.Classes = append(out.Workload.Classes, config.WorkloadClass(c))
		}
	}
	return nil
}

// Convert_config_DevicePackArgs_To_v1_DevicePackArgs converts internal args to v1.
func Convert_config_DevicePackArgs_To_v1_DevicePackArgs(in *config.DevicePackArgs, out *DevicePackArgs, _ conversion.Scope) error { //nolint:revive // conversion naming
	mode := WorkloadMode(in.Workload.Mode)
	*out = DevicePackArgs{
		DeviceResources:     append([]string(nil), in.DeviceResources...),
		FragmentationWeight: ptrTo(in.FragmentationWeight),
		BestFitWeight:       ptrTo(in.BestFitWeight),
		ProductValueWeight:  ptrTo(in.ProductValueWeight),
		ScarcityWeight:      ptrTo(in.ScarcityWeight),
		DeviceNodePenalty:   ptrTo(in.DeviceNodePenalty),
		Workload: &WorkloadSpec{
			Mode:         &mode,
			HalfLifePods: ptrTo(in.Workload.HalfLifePods),
			PriorPods:    ptrTo(in.Workload.PriorPods),
		},
	}
	for _, v := range in.ProductValues {
		out.ProductValues = append(out.ProductValues, ProductValue(v))
	}
	for _, c := range in.Workload.Classes {
		out.Workload.Classes = append(out.Workload.Classes, WorkloadClass(c))
	}
	return nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func ptrTo[T any](v T) *T { return &v }
