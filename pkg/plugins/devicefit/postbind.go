package devicefit

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/metrics"
)

// PostBind counts the placement in devicefit_placements_total and
// devicefit_placed_devices_total, per device resource and the product of the
// node's devices. It runs only after a successful bind, so a pod whose
// binding failed is never counted.
//
// Devices from ResourceSlices are counted from the pod's allocated claims
// (its own, and the scheduler's claim for DRA-backed extended resources),
// per class Resource and the product of the devices it got.
func (pl *DeviceFit) PostBind(ctx context.Context, cycleState fwk.CycleState, pod *v1.Pod, nodeName string) {
	logger := klog.FromContext(ctx)
	s, err := getPreFilterState(cycleState)
	hasDemand := err == nil && len(s.demand) > 0
	if !hasDemand && len(pod.Spec.ResourceClaims) == 0 {
		// No state: PreFilter skipped a pod without devices.
		return
	}
	var node *v1.Node
	if pl.nodes != nil {
		// The informer cache, not the snapshot: the binding cycle runs
		// concurrently with the next scheduling cycle, which owns the snapshot.
		if node, err = pl.nodes.Get(nodeName); err != nil {
			logger.V(4).Info("Node of a bound device pod not in the cache; product unknown",
				"pod", klog.KObj(pod), "node", nodeName, "err", err)
		}
	}
	fromSlices := len(pod.Spec.ResourceClaims) > 0
	if hasDemand {
		for i := range s.demand {
			if s.classServed[i] && (node == nil || node.Status.Allocatable.Name(s.demand[i].Name, "").IsZero()) {
				fromSlices = true
			}
		}
	}
	if fromSlices && pl.handle != nil {
		placed, err := pl.dra.PodPlacements(pl.handle.SharedDRAManager(), pod)
		if err != nil {
			logger.V(4).Info("Claims of a bound pod not readable; its DRA devices are not counted", "pod", klog.KObj(pod), "err", err)
		}
		for _, p := range placed {
			product := p.Product
			if product == "" {
				product = metrics.ProductUnknown
			}
			metrics.Placements.WithLabelValues(string(p.Resource), product).Inc()
			metrics.PlacedDevices.WithLabelValues(string(p.Resource), product).Add(float64(p.Devices))
		}
	}
	if !hasDemand {
		return
	}
	var labels map[string]string
	if node != nil {
		labels = node.Labels
	}
	for i, r := range s.demand {
		if s.classServed[i] && (node == nil || node.Status.Allocatable.Name(r.Name, "").IsZero()) {
			// Served from slices: counted from the claims above.
			continue
		}
		product := s.labels[i].Describe(labels).Product
		if product == "" {
			product = metrics.ProductUnknown
		}
		metrics.Placements.WithLabelValues(string(r.Name), product).Inc()
		metrics.PlacedDevices.WithLabelValues(string(r.Name), product).Add(float64(r.Count))
	}
}
