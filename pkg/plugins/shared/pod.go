package shared

import (
	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/devices"
)

// PodKey is the cycle state key of Pod.
const PodKey fwk.StateKey = "devicefit.io/pod"

// Pod is what the devicefit plugins read of the pod in a cycle: its device
// demand and its CPU and memory requests. Summing a pod's requests as the
// scheduler does (resourcehelper.PodRequests) builds maps; DeviceFit's
// PreFilter, DevicePack's PreFilter (the observed workload) and its
// PreScore each needed them, so the first to ask computes them once
// (ReadPod) and the others read them from the cycle state.
type Pod struct {
	// pod is the pod they were computed for, and resources names the device
	// resources Demand counts (ResourcesKey): a cycle state read for another
	// pod object or resources computes them again.
	pod       *v1.Pod
	resources string
	// Demand is devices.PodDemand's, and Err its error (a malformed device
	// request: DeviceFit rejects the pod, DevicePack skips it).
	Demand devices.Demand
	Err    error
	// MilliCPU and MemoryBytes are the pod's summed requests; 0 with Err.
	MilliCPU, MemoryBytes int64
	// Selector is what the pod's devicefit.io annotations accept
	// (devices.ParseSelector), SelectorErr why they are malformed:
	// DeviceFit rejects the pod then, the observed workload leaves it out.
	Selector    devices.Selector
	SelectorErr error
}

// Clone implements fwk.StateData; Pod is never modified once written.
func (p *Pod) Clone() fwk.StateData { return p }

// ReadPod returns the cycle's Pod for pod and the device resources set,
// named key (ResourcesKey): the one a plugin wrote earlier in the cycle for
// the same pod object and resources, else computed and written for the
// plugins after (computed only, when there is no cycle state).
func ReadPod(cs fwk.CycleState, pod *v1.Pod, set devices.ResourceSet, key string) *Pod {
	if p := ReadAs[*Pod](cs, PodKey); p != nil && p.pod == pod && p.resources == key {
		return p
	}
	p := &Pod{pod: pod, resources: key}
	var reqs v1.ResourceList
	p.Demand, reqs, p.Err = devices.PodDemandAndRequests(pod, set)
	if p.Err == nil {
		cpu, mem := reqs[v1.ResourceCPU], reqs[v1.ResourceMemory]
		p.MilliCPU, p.MemoryBytes = cpu.MilliValue(), mem.Value()
	}
	p.Selector, p.SelectorErr = devices.ParseSelector(pod.Annotations)
	if cs != nil {
		cs.Write(PodKey, p)
	}
	return p
}
