package v1

import (
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/devicefit/devicefit/pkg/apis/config"
)

func addConversionFuncs(s *runtime.Scheme) error {
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
