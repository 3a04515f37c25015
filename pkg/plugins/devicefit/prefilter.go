package devicefit

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/apis/config"
	"github.com/devicefit/devicefit/pkg/devices"
)

// PreFilter validates the pod's device requests and selector once per cycle.
// Every rejection here is UnschedulableAndUnresolvable: no preemption and no
// other pod's departure can fix a malformed request; the pod must change (or,
// for a count above every node, a bigger node must join, which the node
// queueing hints catch).
func (pl *DeviceFit) PreFilter(ctx context.Context, cycleState fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	s, status := pl.computeState(pod, nodes)
	if !status.IsSuccess() {
		return nil, status
	}
	cycleState.Write(preFilterStateKey, s)
	return nil, nil
}

// computeState builds the pod's preFilterState, or the status that rejects
// or skips it.
func (pl *DeviceFit) computeState(pod *v1.Pod, nodes []fwk.NodeInfo) (*preFilterState, *fwk.Status) {
	demand, err := devices.PodDemand(pod, pl.resources)
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	if len(demand) == 0 {
		if pl.policy == config.DeviceNodePolicyRequire {
			return &preFilterState{deviceFree: true}, nil
		}
		// CPU pods pay nothing: Filter does not run for them.
		return nil, fwk.NewStatus(fwk.Skip)
	}
	selector, err := devices.ParseSelector(pod.Annotations)
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	for _, r := range demand {
		if len(pl.allowedCounts) > 0 && !slices.Contains(pl.allowedCounts, r.Count) {
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
				fmt.Sprintf("requests %d %s; allowedCounts are %s", r.Count, r.Name, pl.allowedText))
		}
		if pl.servedByDRA(r.Name) {
			// Nodes show no allocatable for a DRA-served extended resource; the
			// DynamicResources plugin decides from ResourceSlices.
			continue
		}
		if largest := largestAllocatable(nodes, r.Name); largest > 0 && r.Count > largest {
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
				fmt.Sprintf("requests %d %s; the largest node offers %d", r.Count, r.Name, largest))
		}
		// largest == 0: no node offers it today. That is NodeResourcesFit's
		// "Insufficient" (a node may join); calling it unresolvable here would
		// also misjudge resources served by DRA when the class is not synced yet.
	}
	s := &preFilterState{demand: demand, selector: selector, labels: make([]devices.DeviceLabels, len(demand))}
	for i, r := range demand {
		s.labels[i] = devices.NewDeviceLabels(r.Name)
	}
	return s, nil
}

// servedByDRA reports whether a DeviceClass maps the extended resource name
// (DRAExtendedResource). The resolver returns nil when the feature is off.
func (pl *DeviceFit) servedByDRA(name v1.ResourceName) bool {
	if pl.handle == nil {
		return false
	}
	m := pl.handle.SharedDRAManager()
	if m == nil {
		return false
	}
	r := m.DeviceClassResolver()
	return r != nil && r.GetDeviceClass(name) != nil
}

func largestAllocatable(nodes []fwk.NodeInfo, name v1.ResourceName) int64 {
	var largest int64
	for _, n := range nodes {
		if a := n.GetAllocatable().GetScalarResources()[name]; a > largest {
			largest = a
		}
	}
	return largest
}

// PreFilterExtensions returns nil: DeviceFit's verdict on a node does not
// depend on the other pods there.
func (pl *DeviceFit) PreFilterExtensions() fwk.PreFilterExtensions { return nil }
