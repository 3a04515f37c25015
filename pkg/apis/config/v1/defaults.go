package v1

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/devicefit/devicefit/pkg/devices"
)

func addDefaultingFuncs(scheme *runtime.Scheme) error {
	scheme.AddTypeDefaultingFunc(&DeviceFitArgs{}, func(obj interface{}) {
		SetDefaults_DeviceFitArgs(obj.(*DeviceFitArgs))
	})
	return nil
}

// SetDefaults_DeviceFitArgs fills the unset fields of DeviceFitArgs.
func SetDefaults_DeviceFitArgs(obj *DeviceFitArgs) { //nolint:revive // upstream naming for defaulters
	if len(obj.DeviceResources) == 0 {
		obj.DeviceResources = devices.DefaultResourcePatterns()
	}
	if obj.DeviceNodePolicy == nil {
		p := DeviceNodePolicyNone
		obj.DeviceNodePolicy = &p
	}
}
