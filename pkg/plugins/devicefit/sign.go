package devicefit

import (
	"context"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/devices"
)

// Signature fragment keys: DeviceFit's verdict depends on the pod's device
// requests and its devicefit.io/* annotations, and on nothing else of the pod.
const (
	signerDemand      = "DeviceFit.Demand"
	signerAnnotations = "DeviceFit.Annotations"
)

// SignPod lets the framework batch pods with equal signatures (KEP-5598);
// without it an enabled Filter plugin turns batching off for every pod.
func (pl *DeviceFit) SignPod(_ context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	demand, err := devices.PodDemand(pod, pl.resources)
	if err != nil {
		// A pod PreFilter will reject anyway: not worth batching.
		return nil, fwk.NewStatus(fwk.Unschedulable, err.Error())
	}
	annotations := devices.SelectorAnnotations(pod.Annotations)
	return []fwk.SignFragment{
		{Key: signerDemand, Value: demand},
		{Key: signerAnnotations, Value: annotations},
	}, nil
}
