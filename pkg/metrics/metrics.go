// Package metrics holds devicefit's Prometheus metrics. They are registered
// into component-base's legacyregistry, so they appear on the scheduler's own
// authenticated /metrics next to the upstream scheduler_* metrics.
//
// Counters (placements, rejections) are updated by the plugins; the device
// gauges are computed at scrape time by the inventory collector (collector.go)
// from the scheduler's informer caches.
package metrics

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Subsystem prefixes every devicefit metric: devicefit_<name>.
const Subsystem = "devicefit"

// Label names.
const (
	LabelResource = "resource"
	LabelProduct  = "product"
	LabelReason   = "reason"
	LabelState    = "state"
	LabelFailed   = "failed"
)

// ProductUnknown is the product label of devices whose node has no product
// label (a node without GFD, or a vendor whose labeller is not running).
const ProductUnknown = "unknown"

// Values of the state label of devicefit_devices (allocatable, allocated,
// free, stranded) and of devicefit_device_shares (used, free, stranded).
const (
	StateAllocatable = "allocatable"
	StateAllocated   = "allocated"
	StateFree        = "free"
	StateStranded    = "stranded"
	StateUsed        = "used"
)

// Reason is a value of the reason label of devicefit_filter_rejections_total.
// The set is closed: every DeviceFit rejection maps to exactly one.
type Reason string

// Rejections at PreFilter (once per scheduling attempt of a pod).
const (
	ReasonInvalidRequest     Reason = "invalid_request"      // fractional count, requests != limits
	ReasonInvalidAnnotation  Reason = "invalid_annotation"   // a devicefit.io/* value that does not parse
	ReasonCountNotAllowed    Reason = "count_not_allowed"    // outside allowedCounts
	ReasonExceedsLargestNode Reason = "exceeds_largest_node" // more devices than any node offers
	ReasonNoMatchingNode     Reason = "no_matching_node"     // no node offering the resource matches
	ReasonUnservedResource   Reason = "unserved_resource"    // a DeviceClass names the resource, none serves it
	ReasonPlacementRoom      Reason = "placement_room"       // a pod group's placement has too few free devices for the group
	ReasonPlacementTwin      Reason = "placement_twin"       // a pod group's placement is the twin of one tried before it
)

// Rejections at Filter (once per node and scheduling attempt).
const (
	ReasonProduct         Reason = "product"
	ReasonExcludedProduct Reason = "excluded_product"
	ReasonMemory          Reason = "memory"
	ReasonFamily          Reason = "family"
	ReasonCompute         Reason = "compute"
	ReasonShared          Reason = "shared"
	ReasonMIGStrategy     Reason = "mig_strategy"
	ReasonMIGInvalid      Reason = "mig_invalid"
	ReasonDeviceNode      Reason = "device_node"
	// The node advertises more allocatable of the resource than capacity.
	ReasonAllocatableAboveCapacity Reason = "allocatable_above_capacity"
)

// Reasons lists every reason, so the plugins can bind one counter to each up
// front and a rejection costs one atomic add.
var Reasons = []Reason{
	ReasonInvalidRequest, ReasonInvalidAnnotation, ReasonCountNotAllowed, ReasonExceedsLargestNode, ReasonNoMatchingNode, ReasonUnservedResource,
	ReasonPlacementRoom, ReasonPlacementTwin,
	ReasonProduct, ReasonExcludedProduct, ReasonMemory, ReasonFamily, ReasonCompute, ReasonShared,
	ReasonMIGStrategy, ReasonMIGInvalid, ReasonDeviceNode, ReasonAllocatableAboveCapacity,
}

var (
	// Placements counts pods bound by the devicefit scheduler, per device
	// resource the pod requested and the product of the node's devices.
	Placements = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      Subsystem,
		Name:           "placements_total",
		Help:           "Number of device pods bound, by device resource and the product of the node's devices.",
		StabilityLevel: metrics.ALPHA,
	}, []string{LabelResource, LabelProduct})

	// PlacedDevices counts the devices those pods requested.
	PlacedDevices = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      Subsystem,
		Name:           "placed_devices_total",
		Help:           "Number of devices requested by the device pods bound, by device resource and product.",
		StabilityLevel: metrics.ALPHA,
	}, []string{LabelResource, LabelProduct})

	// FilterRejections counts DeviceFit's rejections: a PreFilter reason once
	// per scheduling attempt, a Filter reason once per node rejected in it,
	// a placement reason once per placement of a pod-group cycle.
	FilterRejections = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      Subsystem,
		Name:           "filter_rejections_total",
		Help:           "Number of DeviceFit rejections by reason: once per scheduling attempt for request and annotation errors, once per node for node mismatches, once per placement for a pod group's placements.",
		StabilityLevel: metrics.ALPHA,
	}, []string{LabelReason})

	// ShortlistMisses counts the cycles in which nodes DevicePack's
	// shortlist named failed the profile's filters: every one of them (the
	// pod is retried at once on every node) or some (the shortlist stops).
	ShortlistMisses = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      Subsystem,
		Name:           "shortlist_misses_total",
		Help:           "Number of scheduling cycles in which nodes DevicePack's shortlist named failed the filters, by whether all or some of them failed.",
		StabilityLevel: metrics.ALPHA,
	}, []string{LabelFailed})
)

// Values of the failed label of devicefit_shortlist_misses_total.
const (
	FailedAll  = "all"
	FailedSome = "some"
)

var registerOnce sync.Once

// Register registers the counters and the inventory collector into
// legacyregistry. It is safe to call more than once (every plugin
// constructor does); only the first call registers.
func Register() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(Placements, PlacedDevices, FilterRejections, ShortlistMisses)
		legacyregistry.CustomMustRegister(inventory)
	})
}

// RejectionCounters returns one counter per reason. Call it after Register:
// an unregistered vector hands out no-op counters.
func RejectionCounters() map[Reason]metrics.CounterMetric {
	out := make(map[Reason]metrics.CounterMetric, len(Reasons))
	for _, r := range Reasons {
		out[r] = FilterRejections.WithLabelValues(string(r))
	}
	return out
}
