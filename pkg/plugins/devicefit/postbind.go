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
func (pl *DeviceFit) PostBind(ctx context.Context, cycleState fwk.CycleState, pod *v1.Pod, nodeName string) {
	s, err := getPreFilterState(cycleState)
	if err != nil || len(s.demand) == 0 {
		// No state: PreFilter skipped a pod without devices.
		return
	}
	var labels map[string]string
	if pl.nodes != nil {
		// The informer cache, not the snapshot: the binding cycle runs
		// concurrently with the next scheduling cycle, which owns the snapshot.
		if node, err := pl.nodes.Get(nodeName); err == nil {
			labels = node.Labels
		} else {
			klog.FromContext(ctx).V(4).Info("Node of a bound device pod not in the cache; product unknown",
				"pod", klog.KObj(pod), "node", nodeName, "err", err)
		}
	}
	for i, r := range s.demand {
		product := s.labels[i].Describe(labels).Product
		if product == "" {
			product = metrics.ProductUnknown
		}
		metrics.Placements.WithLabelValues(string(r.Name), product).Inc()
		metrics.PlacedDevices.WithLabelValues(string(r.Name), product).Add(float64(r.Count))
	}
}
