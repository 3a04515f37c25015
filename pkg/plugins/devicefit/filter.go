package devicefit

import (
	"context"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/metrics"
)

// Filter reasons. Constants, because the framework aggregates them per node
// ("3 node(s) didn't match ...") and Filter runs per node per pod.
const (
	ReasonProduct         = "node(s) didn't match devicefit.io/products"
	ReasonExcludedProduct = "node(s) had a product excluded by devicefit.io/exclude-products"
	ReasonMemory          = "node(s) had less device memory than devicefit.io/min-memory"
	ReasonFamily          = "node(s) didn't match devicefit.io/families"
	ReasonCompute         = "node(s) had lower compute capability than devicefit.io/min-compute"
	ReasonShared          = "node(s) only had shared devices and devicefit.io/sharing is exclusive"
	ReasonMIGStrategy     = "node(s) had a MIG strategy that cannot serve the requested MIG resource"
	ReasonMIGInvalid      = "node(s) had an invalid MIG configuration (GFD product -MIG-INVALID)"
	ReasonDeviceNode      = "node(s) had devices and deviceNodePolicy is Require"
	// A kubelet derives allocatable from capacity minus reservations; more
	// allocatable than capacity is a broken node status, and trusting it
	// would bind more pods than the node has devices.
	ReasonAllocatableAboveCapacity = "node(s) advertised more device allocatable than capacity"
)

// mismatchMetric is the devicefit_filter_rejections_total reason of each.
var mismatchMetric = [...]metrics.Reason{
	devices.MismatchProduct:         metrics.ReasonProduct,
	devices.MismatchExcludedProduct: metrics.ReasonExcludedProduct,
	devices.MismatchMemory:          metrics.ReasonMemory,
	devices.MismatchFamily:          metrics.ReasonFamily,
	devices.MismatchCompute:         metrics.ReasonCompute,
	devices.MismatchShared:          metrics.ReasonShared,
	devices.MismatchMIGStrategy:     metrics.ReasonMIGStrategy,
	devices.MismatchMIGInvalid:      metrics.ReasonMIGInvalid,
}

var mismatchReasons = [...]string{
	devices.MismatchProduct:         ReasonProduct,
	devices.MismatchExcludedProduct: ReasonExcludedProduct,
	devices.MismatchMemory:          ReasonMemory,
	devices.MismatchFamily:          ReasonFamily,
	devices.MismatchCompute:         ReasonCompute,
	devices.MismatchShared:          ReasonShared,
	devices.MismatchMIGStrategy:     ReasonMIGStrategy,
	devices.MismatchMIGInvalid:      ReasonMIGInvalid,
}

// Filter rejects a node whose devices the pod's selector or the node's MIG
// setup rule out, and, under deviceNodePolicy Require, a device node for a
// device-free pod. Preemption cannot change labels, so rejections are
// UnschedulableAndUnresolvable. It does not allocate on success.
func (pl *DeviceFit) Filter(ctx context.Context, cycleState fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	s, err := getPreFilterState(cycleState)
	if err != nil {
		return fwk.AsStatus(err)
	}
	r, m := s.reject(pl, nodeInfo)
	if r == rejectNone {
		return nil
	}
	if !s.quiet {
		switch r {
		case rejectDeviceNode:
			pl.deviceNodeRejections.Inc()
		case rejectAboveCapacity:
			pl.capacityRejections.Inc()
		default:
			pl.mismatchRejections[m].Inc()
		}
	}
	switch r {
	case rejectDeviceNode:
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, ReasonDeviceNode)
	case rejectAboveCapacity:
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, ReasonAllocatableAboveCapacity)
	}
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, mismatchReasons[m])
}

// rejection is why Filter turns a node away (rejectNone: it does not).
type rejection int8

const (
	rejectNone rejection = iota
	rejectDeviceNode
	rejectAboveCapacity
	rejectMismatch
)

// reject is Filter's verdict on the node, counting nothing: Filter counts
// it, DevicePack reads it (admits) to know which nodes its shortlist may
// name.
func (s *preFilterState) reject(pl *DeviceFit, nodeInfo fwk.NodeInfo) (rejection, devices.Mismatch) {
	// The cache holds the node as PreFilter saw it; a node object it has not
	// seen (a Filter call outside the cycle's PreFilter) is read directly.
	return s.rejectCached(pl, nodeInfo, s.cache.Lookup(nodeInfo.Node()))
}

// rejectCached is reject with the node's cache entry, nil when the cache
// has none.
func (s *preFilterState) rejectCached(pl *DeviceFit, nodeInfo fwk.NodeInfo, cached *devices.NodeDevices) (rejection, devices.Mismatch) {
	node := nodeInfo.Node()
	if s.deviceFree {
		if cached != nil && cached.HasDevices() || cached == nil && pl.hasDevices(nodeInfo) || s.draDeviceNodes.Has(node.Name) {
			return rejectDeviceNode, devices.Match
		}
		return rejectNone, devices.Match
	}
	for i := range s.demand {
		m, aboveCapacity := s.judge(cached, nodeInfo, i)
		if aboveCapacity {
			return rejectAboveCapacity, devices.Match
		}
		if m != devices.Match {
			return rejectMismatch, m
		}
	}
	return rejectNone, devices.Match
}

// judge returns the selector's verdict on the node's devices of demand[i]
// and whether the node advertises more of them than its capacity.
func (s *preFilterState) judge(cached *devices.NodeDevices, nodeInfo fwk.NodeInfo, i int) (devices.Mismatch, bool) {
	name := s.demand[i].Name
	if s.draServedOn(nodeInfo, i) {
		// Served from slices: PreFilter judged the devices the pod would get.
		return s.draVerdict(nodeInfo.Node().Name, i), false
	}
	if cached != nil {
		if d := cached.Find(name); d != nil {
			return s.verdict(i, d), d.AboveCapacity()
		}
	}
	node := nodeInfo.Node()
	if c, ok := node.Status.Capacity[name]; ok && nodeInfo.GetAllocatable().GetScalarResources()[name] > c.Value() {
		return devices.Match, true
	}
	return s.selector.Match(&s.labels[i], s.labels[i].Describe(node.Labels)), false
}

func (pl *DeviceFit) hasDevices(nodeInfo fwk.NodeInfo) bool {
	for name, n := range nodeInfo.GetAllocatable().GetScalarResources() {
		if n > 0 && pl.resources.Contains(name) {
			return true
		}
	}
	return false
}
