package devicepack

import (
	"context"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/dra"
	"github.com/devicefit/devicefit/pkg/plugins/shared"
)

// PreFilter records the pod in the observed workload, once per pod, and
// names the nodes that can win when it can tell them exactly (shortlist.go).
// It never rejects: DevicePack has no Filter.
//
// A pod with ResourceClaims is observed by what its unallocated claims
// request (per class Resource): claim pods are jobs of the workload as much
// as pods asking for nvidia.com/gpu.
func (pl *DevicePack) PreFilter(ctx context.Context, cycleState fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	pl.observe(ctx, cycleState, pod)
	if res := pl.shortlist(ctx, cycleState, pod, nodes); res != nil {
		return res, nil
	}
	// DeviceFit's list, when DeviceFit left it to DevicePack to return
	// (shared.ListCarrier): the framework copies the first list it merges,
	// and the shortlist, when there is one, spares it that copy.
	if v := shared.ReadVerdict(cycleState); v != nil && v.List != nil {
		return v.List, nil
	}
	return nil, fwk.NewStatus(fwk.Skip)
}

// observe records the pod's device demand in the observed workload.
func (pl *DevicePack) observe(ctx context.Context, cycleState fwk.CycleState, pod *v1.Pod) {
	if !pl.workload.observed {
		return
	}
	facts := shared.ReadPod(cycleState, pod, pl.resources, pl.resourcesKey)
	if facts.Err != nil {
		return
	}
	demand := facts.Demand
	var shares *claimShares
	if len(pod.Spec.ResourceClaims) > 0 {
		if view, err := pl.draView(ctx, cycleState); err == nil && view != nil {
			if reqs, err := dra.PodRequestsFor(cycleState, view, pod, demand); err == nil {
				demand, shares = draDemand(reqs, demand)
			}
		}
	}
	if len(demand) == 0 {
		return
	}
	if facts.SelectorErr != nil {
		// DeviceFit rejects the pod; a malformed class is no evidence.
		return
	}
	pl.workload.observe(string(pod.UID), demand, shares, facts.MilliCPU, facts.MemoryBytes, selectorKey(pod.Annotations), facts.Selector)
}

// PreFilterExtensions returns nil: DevicePack keeps no per-node filter state.
func (pl *DevicePack) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

func requests(pod *v1.Pod) (milliCPU, memoryBytes int64) {
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	cpu, mem := reqs[v1.ResourceCPU], reqs[v1.ResourceMemory]
	return cpu.MilliValue(), mem.Value()
}

// MaxObservedClasses is the most job classes an Observed workload keeps
// (maxTracked): past it, prune drops the insignificant and the lightest.
const MaxObservedClasses = maxTracked

// ObservedClasses is the number of job classes the Observed workload tracks
// now (0 for a Static one): bounded by MaxObservedClasses however long the
// scheduler runs (the soak in pkg/replay reads it).
func (pl *DevicePack) ObservedClasses() int {
	if !pl.workload.observed {
		return 0
	}
	pl.workload.mu.Lock()
	defer pl.workload.mu.Unlock()
	return len(pl.workload.classes)
}
