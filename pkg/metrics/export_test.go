package metrics

import "k8s.io/component-base/metrics"

// CollectorOf is an inventory collector over s, for the tests of package
// metrics_test (which can import pkg/dra: it imports this package).
func CollectorOf(s Source) metrics.StableCollector {
	return &inventoryCollector{source: &s}
}
