package metrics

import (
	"maps"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"

	"github.com/devicefit/devicefit/pkg/devices"
)

var (
	devicesDesc = metrics.NewDesc(metrics.BuildFQName("", Subsystem, "devices"),
		"Devices of the cluster's nodes by device resource, product and state: allocatable; allocated "+
			"(requested by bound pods); free (allocatable minus allocated per node, never negative); stranded "+
			"(the expected number of free devices that a job asking for the resource, of the workload of the jobs bound and pending, could not use where they are).",
		[]string{LabelResource, LabelProduct, LabelState}, nil, metrics.ALPHA, "")
	// The unit is whole devices, as in devicefit_devices, so the two add
	// up: NVIDIA's DRA driver publishes 1000 "shares" per GPU (FGD's
	// milli-GPU), and 500 shares used is 0.5 here.
	sharesDesc = metrics.NewDesc(metrics.BuildFQName("", Subsystem, "device_shares"),
		"Shared devices (DRA consumable capacity: allowMultipleAllocations) by device resource, product and state, "+
			"in whole devices (a device's share is the most consumed of its capacities; 500 of a GPU's 1000 shares is 0.5): "+
			"used (consumed by the claims' allocations); free (left: untouched devices whole and the free share of partly used ones); "+
			"stranded (the expected free share of partly used devices that a fractional job of the workload, asking a share of the resource, could not use where it is).",
		[]string{LabelResource, LabelProduct, LabelState}, nil, metrics.ALPHA, "")
	fragmentationDesc = metrics.NewDesc(metrics.BuildFQName("", Subsystem, "fragmentation_ratio"),
		"Stranded devices divided by free devices, per device resource (0 when none is free).",
		[]string{LabelResource}, nil, metrics.ALPHA, "")
)

// Source is what the inventory collector reads at scrape time: the
// scheduler's own informer caches, so a scrape costs no API call.
type Source struct {
	Nodes     corelisters.NodeLister
	Pods      corelisters.PodLister
	Resources devices.ResourceSet
	// Workload returns the job distribution stranded devices are counted
	// against, given the pods of the scheduler's cache (DevicePack's:
	// its profile's workload made of the jobs bound and pending, the measure
	// `kubectl devicefit inventory` shows too); nil, or returning nil,
	// counts none stranded.
	Workload func(pods []*v1.Pod) *devices.Workload
	// DRA returns the nodes' DRA devices (pkg/dra, InventorySource); nil
	// when the scheduler does not read ResourceSlices.
	DRA func() (map[string][]DRAEntry, error)
}

// inventoryCollector computes devicefit_devices, devicefit_device_shares
// and devicefit_fragmentation_ratio on every scrape.
type inventoryCollector struct {
	metrics.BaseStableCollector

	mu     sync.Mutex
	source *Source
	// minInterval, when set, reuses the last summary for gathers closer
	// together than that (SetMinGatherInterval); last is that summary.
	minInterval time.Duration
	last        *Summary
	lastAt      time.Time
	lastSource  *Source
}

var inventory = &inventoryCollector{}

var _ metrics.StableCollector = inventory

// SetInventorySource points the collector at a scheduler's caches. Both
// plugins call it from their constructors; a source that knows the workload
// (DevicePack's) is never replaced by one that does not (DeviceFit's), so the
// order in which a profile builds its plugins does not matter. Otherwise the
// newest source wins: one scheduler per process, or the newest in tests.
func SetInventorySource(s Source) {
	inventory.mu.Lock()
	defer inventory.mu.Unlock()
	if cur := inventory.source; cur != nil && cur.Workload != nil && s.Workload == nil {
		return
	}
	inventory.source = &s
}

// SetMinGatherInterval makes gathers closer together than d reuse the
// previous one's gauges (0, the default, computes them on every gather, as
// a production scheduler does: Prometheus scrapes every 15–30 s). For
// harnesses that gather the whole registry far more often than any scraper
// would: scheduler_perf's throughput collector gathers it every second
// (util.go, v1.37.2), and each gather walks every node and pod, a cost no
// deployed devicefit pays at that rate (test/perf sets a scrape interval).
func SetMinGatherInterval(d time.Duration) {
	inventory.mu.Lock()
	defer inventory.mu.Unlock()
	inventory.minInterval = d
}

func (c *inventoryCollector) current() *Source {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.source
}

// DescribeWithStability implements metrics.StableCollector.
func (c *inventoryCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- devicesDesc
	ch <- sharesDesc
	ch <- fragmentationDesc
}

// CollectWithStability implements metrics.StableCollector.
func (c *inventoryCollector) CollectWithStability(ch chan<- metrics.Metric) {
	src := c.current()
	if src == nil {
		return
	}
	if s := c.recent(src); s != nil {
		emit(ch, *s)
		return
	}
	s, err := src.summarize()
	if err != nil {
		klog.ErrorS(err, "Listing the scheduler's caches for devicefit_devices")
		return
	}
	c.remember(src, &s)
	emit(ch, s)
}

// recent returns the last summary of src if a minimum gather interval is
// set and has not passed since.
func (c *inventoryCollector) recent(src *Source) *Summary {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.minInterval <= 0 || c.last == nil || c.lastSource != src || time.Since(c.lastAt) >= c.minInterval {
		return nil
	}
	return c.last
}

func (c *inventoryCollector) remember(src *Source, s *Summary) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.minInterval > 0 {
		c.last, c.lastAt, c.lastSource = s, time.Now(), src
	}
}

func (src *Source) summarize() (Summary, error) {
	nodes, err := src.Nodes.List(labels.Everything())
	if err != nil {
		return Summary{}, err
	}
	pods, err := src.Pods.List(labels.Everything())
	if err != nil {
		return Summary{}, err
	}
	var w *devices.Workload
	if src.Workload != nil {
		w = src.Workload(pods)
	}
	var dra map[string][]DRAEntry
	if src.DRA != nil {
		if dra, err = src.DRA(); err != nil {
			return Summary{}, err
		}
	}
	return SummarizeWithDRA(nodes, pods, src.Resources, w, dra), nil
}

// emit sends the gauges of s, in key order.
func emit(ch chan<- metrics.Metric, s Summary) {
	for _, k := range s.Keys() {
		c := s.Devices[k]
		r, p := string(k.Resource), k.Product
		ch <- metrics.NewLazyConstMetric(devicesDesc, metrics.GaugeValue, float64(c.Allocatable), r, p, StateAllocatable)
		ch <- metrics.NewLazyConstMetric(devicesDesc, metrics.GaugeValue, float64(c.Allocated), r, p, StateAllocated)
		ch <- metrics.NewLazyConstMetric(devicesDesc, metrics.GaugeValue, float64(c.Free), r, p, StateFree)
		ch <- metrics.NewLazyConstMetric(devicesDesc, metrics.GaugeValue, c.Stranded, r, p, StateStranded)
	}
	for _, k := range s.ShareKeys() {
		c := s.Shares[k]
		r, p := string(k.Resource), k.Product
		ch <- metrics.NewLazyConstMetric(sharesDesc, metrics.GaugeValue, c.Used, r, p, StateUsed)
		ch <- metrics.NewLazyConstMetric(sharesDesc, metrics.GaugeValue, c.Free, r, p, StateFree)
		ch <- metrics.NewLazyConstMetric(sharesDesc, metrics.GaugeValue, c.Stranded, r, p, StateStranded)
	}
	ratios := s.FragmentationRatio()
	for _, r := range slices.Sorted(maps.Keys(ratios)) {
		ch <- metrics.NewLazyConstMetric(fragmentationDesc, metrics.GaugeValue, ratios[r], string(r))
	}
}
