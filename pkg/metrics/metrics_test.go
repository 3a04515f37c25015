package metrics

import (
	"strings"
	"testing"

	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
)

func TestCountersOnLegacyRegistry(t *testing.T) {
	// Every plugin constructor calls Register; only the first registers.
	Register()
	Register()
	Placements.Reset()
	PlacedDevices.Reset()
	FilterRejections.Reset()

	Placements.WithLabelValues("nvidia.com/gpu", "NVIDIA-H100-80GB-HBM3").Inc()
	Placements.WithLabelValues("nvidia.com/gpu", "NVIDIA-H100-80GB-HBM3").Inc()
	PlacedDevices.WithLabelValues("nvidia.com/gpu", "NVIDIA-H100-80GB-HBM3").Add(12)
	// Binding the counters up front also exports every reason at 0, so
	// rate() and alerts see a series from the first scrape.
	rejections := RejectionCounters()
	rejections[ReasonProduct].Inc()
	rejections[ReasonInvalidAnnotation].Add(3)

	want := `
# HELP devicefit_filter_rejections_total [ALPHA] Number of DeviceFit rejections by reason: once per scheduling attempt for request and annotation errors, once per node for node mismatches, once per placement for a pod group's placements.
# TYPE devicefit_filter_rejections_total counter
devicefit_filter_rejections_total{reason="allocatable_above_capacity"} 0
devicefit_filter_rejections_total{reason="compute"} 0
devicefit_filter_rejections_total{reason="count_not_allowed"} 0
devicefit_filter_rejections_total{reason="device_node"} 0
devicefit_filter_rejections_total{reason="exceeds_largest_node"} 0
devicefit_filter_rejections_total{reason="excluded_product"} 0
devicefit_filter_rejections_total{reason="family"} 0
devicefit_filter_rejections_total{reason="invalid_annotation"} 3
devicefit_filter_rejections_total{reason="invalid_request"} 0
devicefit_filter_rejections_total{reason="memory"} 0
devicefit_filter_rejections_total{reason="mig_invalid"} 0
devicefit_filter_rejections_total{reason="mig_strategy"} 0
devicefit_filter_rejections_total{reason="no_matching_node"} 0
devicefit_filter_rejections_total{reason="placement_room"} 0
devicefit_filter_rejections_total{reason="placement_twin"} 0
devicefit_filter_rejections_total{reason="product"} 1
devicefit_filter_rejections_total{reason="shared"} 0
devicefit_filter_rejections_total{reason="unserved_resource"} 0
# HELP devicefit_placed_devices_total [ALPHA] Number of devices requested by the device pods bound, by device resource and product.
# TYPE devicefit_placed_devices_total counter
devicefit_placed_devices_total{product="NVIDIA-H100-80GB-HBM3",resource="nvidia.com/gpu"} 12
# HELP devicefit_placements_total [ALPHA] Number of device pods bound, by device resource and the product of the node's devices.
# TYPE devicefit_placements_total counter
devicefit_placements_total{product="NVIDIA-H100-80GB-HBM3",resource="nvidia.com/gpu"} 2
`
	if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(want),
		"devicefit_placements_total", "devicefit_placed_devices_total", "devicefit_filter_rejections_total"); err != nil {
		t.Error(err)
	}
}

func TestReasonsAreDistinct(t *testing.T) {
	seen := map[Reason]bool{}
	for _, r := range Reasons {
		if seen[r] || r == "" {
			t.Errorf("reason %q is empty or listed twice", r)
		}
		seen[r] = true
	}
	if got := len(RejectionCounters()); got != len(Reasons) {
		t.Errorf("RejectionCounters has %d counters, want %d", got, len(Reasons))
	}
}
