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
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// localSchemeBuilder is the name the generated zz_generated.conversion.go
	// registers RegisterConversions with, in its init.
	localSchemeBuilder = &SchemeBuilder
	// AddToScheme adds the v1 args types to a scheme.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func init() {
	// As upstream's pkg/scheduler/apis/config/v1: only hand-written functions
	// are registered here; the generated files register their own, so the
	// package still compiles while they are being regenerated.
	localSchemeBuilder.Register(addDefaultingFuncs)
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &DeviceFitArgs{}, &DevicePackArgs{})
	return nil
}
