package v1

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/devicefit/devicefit/pkg/devices"
)

// addDefaultingFuncs registers the SetDefaults_ functions below through
// RegisterDefaults, which defaulter-gen writes (zz_generated.defaults.go).
func addDefaultingFuncs(scheme *runtime.Scheme) error {
	return RegisterDefaults(scheme)
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

// SetDefaults_DevicePackArgs fills the unset fields of DevicePackArgs.
func SetDefaults_DevicePackArgs(obj *DevicePackArgs) { //nolint:revive // upstream naming for defaulters
	if len(obj.DeviceResources) == 0 {
		obj.DeviceResources = devices.DefaultResourcePatterns()
	}
	if obj.Workload == nil {
		obj.Workload = &WorkloadSpec{}
	}
	w := obj.Workload
	setDefault(&w.Mode, WorkloadObserved)
	setDefault(&w.HalfLifePods, 2000)
	setDefault(&w.PriorPods, 100)
	if len(w.Classes) == 0 {
		// A neutral prior until pods are observed: the usual power-of-two
		// job sizes, smaller ones more frequent.
		w.Classes = []WorkloadClass{
			{Resource: string(devices.NVIDIAGPU), Devices: 1, Weight: 8},
			{Resource: string(devices.NVIDIAGPU), Devices: 2, Weight: 4},
			{Resource: string(devices.NVIDIAGPU), Devices: 4, Weight: 2},
			{Resource: string(devices.NVIDIAGPU), Devices: 8, Weight: 1},
		}
	}
	setDefault(&obj.FragmentationWeight, 100)
	setDefault(&obj.BestFitWeight, 1)
	setDefault(&obj.ProductValueWeight, 1)
	setDefault(&obj.ScarcityWeight, 100)
	setDefault(&obj.DeviceNodePenalty, 0)
	setDefault(&obj.Shortlist, true)
}

func setDefault[T any](p **T, v T) {
	if *p == nil {
		*p = &v
	}
}
