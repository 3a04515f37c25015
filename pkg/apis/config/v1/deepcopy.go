package v1

import "k8s.io/apimachinery/pkg/runtime"

// DeepCopyInto copies the receiver into out. Written by hand: the type is
// small and the project does not run code generators.
func (in *DeviceFitArgs) DeepCopyInto(out *DeviceFitArgs) {
	*out = *in
	if in.DeviceResources != nil {
		out.DeviceResources = append([]string(nil), in.DeviceResources...)
	}
	if in.DeviceNodePolicy != nil {
		p := *in.DeviceNodePolicy
		out.DeviceNodePolicy = &p
	}
	if in.AllowedCounts != nil {
		out.AllowedCounts = append([]int64(nil), in.AllowedCounts...)
	}
}

// DeepCopy returns a deep copy of the receiver.
func (in *DeviceFitArgs) DeepCopy() *DeviceFitArgs {
	if in == nil {
		return nil
	}
	out := new(DeviceFitArgs)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *DeviceFitArgs) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyInto copies the receiver into out.
func (in *DevicePackArgs) DeepCopyInto(out *DevicePackArgs) {
	*out = *in
	out.DeviceResources = append([]string(nil), in.DeviceResources...)
	if in.Workload != nil {
		w := *in.Workload
		w.Mode = copyPtr(in.Workload.Mode)
		w.HalfLifePods = copyPtr(in.Workload.HalfLifePods)
		w.PriorPods = copyPtr(in.Workload.PriorPods)
		w.Classes = append([]WorkloadClass(nil), in.Workload.Classes...)
		out.Workload = &w
	}
	out.FragmentationWeight = copyPtr(in.FragmentationWeight)
	out.BestFitWeight = copyPtr(in.BestFitWeight)
	out.ProductValueWeight = copyPtr(in.ProductValueWeight)
	out.ScarcityWeight = copyPtr(in.ScarcityWeight)
	out.DeviceNodePenalty = copyPtr(in.DeviceNodePenalty)
	out.ProductValues = append([]ProductValue(nil), in.ProductValues...)
}

func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// DeepCopy returns a deep copy of the receiver.
func (in *DevicePackArgs) DeepCopy() *DevicePackArgs {
	if in == nil {
		return nil
	}
	out := new(DevicePackArgs)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *DevicePackArgs) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}
