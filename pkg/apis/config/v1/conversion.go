package v1

import (
	"k8s.io/apimachinery/pkg/conversion"

	"github.com/devicefit/devicefit/pkg/apis/config"
)

// The functions below are the only hand-written conversions, and they convert
// fields, not types: conversion-gen calls them from the generated
// Convert_<type> functions (zz_generated.conversion.go) because they carry
// the names it looks for. It cannot write them itself: a v1 field is a
// pointer (unset, so that defaulting can tell "absent" from "zero", the
// convention for optional fields of versioned config) where the internal
// field is a value of a *named* type, and without these it reports the
// field as needing manual conversion ("inconvertible types") and writes no
// Convert_ function for the type that holds it. metav1 ships such functions only for the builtin types
// (Convert_Pointer_int64_To_int64, which the generated code uses for the
// weights).

// Convert_Pointer_v1_DeviceNodePolicy_To_config_DeviceNodePolicy leaves the
// internal policy empty when v1 has none (args that skipped defaulting).
func Convert_Pointer_v1_DeviceNodePolicy_To_config_DeviceNodePolicy(in **DeviceNodePolicy, out *config.DeviceNodePolicy, _ conversion.Scope) error { //nolint:revive // conversion-gen naming
	*out = ""
	if *in != nil {
		*out = config.DeviceNodePolicy(**in)
	}
	return nil
}

// Convert_config_DeviceNodePolicy_To_Pointer_v1_DeviceNodePolicy omits an
// empty policy, so that v1 defaulting fills it in again.
func Convert_config_DeviceNodePolicy_To_Pointer_v1_DeviceNodePolicy(in *config.DeviceNodePolicy, out **DeviceNodePolicy, _ conversion.Scope) error { //nolint:revive // conversion-gen naming
	*out = nil
	if *in != "" {
		p := DeviceNodePolicy(*in)
		*out = &p
	}
	return nil
}

// Convert_Pointer_v1_WorkloadMode_To_config_WorkloadMode leaves the internal
// mode empty when v1 has none.
func Convert_Pointer_v1_WorkloadMode_To_config_WorkloadMode(in **WorkloadMode, out *config.WorkloadMode, _ conversion.Scope) error { //nolint:revive // conversion-gen naming
	*out = ""
	if *in != nil {
		*out = config.WorkloadMode(**in)
	}
	return nil
}

// Convert_config_WorkloadMode_To_Pointer_v1_WorkloadMode always sets the mode,
// as the internal args always carry one once defaulted.
func Convert_config_WorkloadMode_To_Pointer_v1_WorkloadMode(in *config.WorkloadMode, out **WorkloadMode, _ conversion.Scope) error { //nolint:revive // conversion-gen naming
	m := WorkloadMode(*in)
	*out = &m
	return nil
}

// Convert_Pointer_v1_WorkloadSpec_To_config_WorkloadSpec turns an absent v1
// workload into the zero internal one.
func Convert_Pointer_v1_WorkloadSpec_To_config_WorkloadSpec(in **WorkloadSpec, out *config.WorkloadSpec, s conversion.Scope) error { //nolint:revive // conversion-gen naming
	if *in == nil {
		*out = config.WorkloadSpec{}
		return nil
	}
	return Convert_v1_WorkloadSpec_To_config_WorkloadSpec(*in, out, s)
}

// Convert_config_WorkloadSpec_To_Pointer_v1_WorkloadSpec always writes the
// workload out: the internal one has no "absent".
func Convert_config_WorkloadSpec_To_Pointer_v1_WorkloadSpec(in *config.WorkloadSpec, out **WorkloadSpec, s conversion.Scope) error { //nolint:revive // conversion-gen naming
	*out = new(WorkloadSpec)
	return Convert_config_WorkloadSpec_To_v1_WorkloadSpec(in, *out, s)
}

// Convert_Slice_string_To_Slice_string and Convert_Slice_int64_To_Slice_int64
// copy, as apimachinery's Convert_Slice_byte_To_Slice_byte does: conversion-gen
// assigns slices of builtin elements as they are (even with --skip-unsafe),
// and the internal args would then share the decoded v1 args' arrays. A
// plugin that sorts or edits its args must not reach into the object it was
// decoded from (conversion_test.go checks it).
func Convert_Slice_string_To_Slice_string(in, out *[]string, _ conversion.Scope) error { //nolint:revive // conversion-gen naming
	*out = copySlice(*in)
	return nil
}

// Convert_Slice_int64_To_Slice_int64: see Convert_Slice_string_To_Slice_string.
func Convert_Slice_int64_To_Slice_int64(in, out *[]int64, _ conversion.Scope) error { //nolint:revive // conversion-gen naming
	*out = copySlice(*in)
	return nil
}

// copySlice keeps nil and empty apart, as generated code does for slices.
func copySlice[T any](in []T) []T {
	if in == nil {
		return nil
	}
	return append(make([]T, 0, len(in)), in...)
}
