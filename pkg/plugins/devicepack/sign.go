package devicepack

import (
	"context"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/devices"
)

// SignPod lets the framework batch pods with equal signatures (KEP-5598).
// DevicePack scores from the pod's device demand, its CPU and memory
// requests (covered by the upstream resources signer) and its devicefit.io
// annotations.
func (pl *DevicePack) SignPod(_ context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	demand, err := devices.PodDemand(pod, pl.resources)
	if err != nil {
		return nil, fwk.NewStatus(fwk.Unschedulable, err.Error())
	}
	cpu, mem := requests(pod)
	annotations := devices.SelectorAnnotations(pod.Annotations)
	return []fwk.SignFragment{
		{Key: "DevicePack.Demand", Value: demand},
		{Key: "DevicePack.Requests", Value: [2]int64{cpu, mem}},
		{Key: "DevicePack.Annotations", Value: annotations},
	}, nil
}
