package v1

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	schedconfigv1 "k8s.io/kube-scheduler/config/v1"
)

// SchemeGroupVersion is kubescheduler.config.k8s.io/v1, the version users
// write in KubeSchedulerConfiguration files.
var SchemeGroupVersion = schema.GroupVersion{Group: schedconfigv1.GroupName, Version: "v1"}

var (
	// SchemeBuilder registers the v1 args with their defaults and conversions.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes, addDefaultingFuncs, addConversionFuncs)
	// AddToScheme adds the v1 args types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &DeviceFitArgs{}, &DevicePackArgs{})
	return nil
}
