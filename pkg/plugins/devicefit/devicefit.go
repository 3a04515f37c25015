// Package devicefit is the DeviceFit scheduler plugin: it validates a pod's
// device requests once per scheduling cycle (PreFilter) and keeps the pod off
// nodes whose devices its devicefit.io/* annotations reject (Filter).
// Device capacity is not checked here: upstream NodeResourcesFit does that.
package devicefit

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/component-base/featuregate"
	k8smetrics "k8s.io/component-base/metrics"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"

	"github.com/devicefit/devicefit/pkg/apis/config"
	_ "github.com/devicefit/devicefit/pkg/apis/config/scheme" // args decode from KubeSchedulerConfiguration
	"github.com/devicefit/devicefit/pkg/apis/config/validation"
	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/dra"
	"github.com/devicefit/devicefit/pkg/metrics"
	"github.com/devicefit/devicefit/pkg/plugins/shared"
	"github.com/devicefit/devicefit/pkg/plugins/snapshot"
)

// Name is the plugin name in KubeSchedulerConfiguration profiles.
const Name = "DeviceFit"

var (
	_ fwk.PreFilterPlugin   = &DeviceFit{}
	_ fwk.FilterPlugin      = &DeviceFit{}
	_ fwk.EnqueueExtensions = &DeviceFit{}
	_ fwk.SignPlugin        = &DeviceFit{}
	_ fwk.PostBindPlugin    = &DeviceFit{}
	_ fwk.PostFilterPlugin  = &DeviceFit{}
)

// DeviceFit is the plugin. Its fields are set once by New and never change,
// but for the node cache and PreFilter's scratch slice.
type DeviceFit struct {
	handle    fwk.Handle
	resources devices.ResourceSet
	policy    config.DeviceNodePolicy
	// allowedCounts is sorted; allowedText is its message form, formatted once.
	allowedCounts []int64
	allowedText   string
	// draExtendedResources: a DeviceClass may serve an extended resource from
	// ResourceSlices (KEP-5004), and such nodes show no allocatable for it.
	draExtendedResources bool
	// taintComparisonOperators: the gate TaintToleration reads, so that
	// shared.NodeRules tolerates exactly as it does.
	taintComparisonOperators bool

	// Counters bound once, so a rejection costs one atomic add and Filter
	// stays allocation-free.
	rejections           map[metrics.Reason]k8smetrics.CounterMetric
	mismatchRejections   [len(mismatchMetric)]k8smetrics.CounterMetric
	deviceNodeRejections k8smetrics.CounterMetric
	capacityRejections   k8smetrics.CounterMetric
	// table is the cycle's node view DevicePack shares (pkg/plugins/snapshot);
	// cache, its node cache, holds what each node's labels say about its
	// devices, read again only when the node object changes (PreFilter
	// refreshes the table). releaseTable gives the table back (Close).
	table        *snapshot.Table
	cache        *devices.NodeCache
	releaseTable func()
	// scratchMu guards the fields below, which PreFilter keeps from cycle
	// to cycle.
	scratchMu sync.Mutex
	// lists keeps candidate lists between cycles, by pod shape (lists.go);
	// under scratchMu.
	lists map[string]*nameList
	// scans keeps scan's results between cycles, by pod shape and node
	// rules (keptscan.go); under scratchMu.
	scans map[string]*keptScan
	// scanStamp counts the kept scans asked for (LRU); allRows is every
	// position, for a scan that starts over.
	scanStamp uint64
	allRows   []int
	// scanInFull walks every node for every pod (scan), as the reference
	// tests hold the kept scan to.
	scanInFull bool
	// nodeClasses numbers node objects for twin placements (twins.go).
	nodeClasses nodeClasses
	// nodes reads the product of a bound pod's node in PostBind; nil when the
	// framework has no informer factory (some tests, embedders).
	nodes corelisters.NodeLister
	// dra keeps the DRA inventory and class verdicts between cycles, the
	// same tracker as DevicePack's in the framework (dra.TrackerFor);
	// releaseDRA gives it back (Close).
	dra        *dra.Tracker
	releaseDRA func()
	// resourcesKey names the device resources (shared.ResourcesKey).
	resourcesKey string
	// carrier: shared.ListCarrier runs PreFilter after DeviceFit, found
	// once (carrierFollows).
	carrierOnce sync.Once
	carrier     bool
}

// New builds DeviceFit from its args. It validates them again: tests and
// other embedders construct plugins without going through the config scheme.
func New(_ context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, ok := obj.(*config.DeviceFitArgs)
	if !ok {
		return nil, fmt.Errorf("want args to be of type DeviceFitArgs, got %T", obj)
	}
	if err := validation.ValidateDeviceFitArgs(nil, args); err != nil {
		return nil, err
	}
	set, err := devices.NewResourceSet(args.DeviceResources)
	if err != nil {
		return nil, err
	}
	tracker, release := dra.TrackerFor(h)
	key := shared.ResourcesKey(args.DeviceResources)
	table, releaseTable := snapshot.For(h, set, key)
	pl := &DeviceFit{
		handle:                   h,
		resources:                set,
		table:                    table,
		cache:                    table.Cache(),
		releaseTable:             releaseTable,
		lists:                    map[string]*nameList{},
		scans:                    map[string]*keptScan{},
		dra:                      tracker,
		releaseDRA:               release,
		resourcesKey:             key,
		policy:                   args.DeviceNodePolicy,
		allowedCounts:            slices.Sorted(slices.Values(args.AllowedCounts)),
		draExtendedResources:     enabled(features.DRAExtendedResource),
		taintComparisonOperators: enabled(features.TaintTolerationComparisonOperators),
	}
	text := make([]string, len(pl.allowedCounts))
	for i, n := range pl.allowedCounts {
		text[i] = strconv.FormatInt(n, 10)
	}
	pl.allowedText = strings.Join(text, ", ")

	metrics.Register()
	pl.rejections = metrics.RejectionCounters()
	for m, r := range mismatchMetric {
		if r != "" {
			pl.mismatchRejections[m] = pl.rejections[r]
		}
	}
	pl.deviceNodeRejections = pl.rejections[metrics.ReasonDeviceNode]
	pl.capacityRejections = pl.rejections[metrics.ReasonAllocatableAboveCapacity]
	if h != nil && h.SharedInformerFactory() != nil {
		core := h.SharedInformerFactory().Core().V1()
		pl.nodes = core.Nodes().Lister()
		// DevicePack, when in the profile, supplies a source that also knows
		// the workload; this one serves the gauges without it.
		metrics.SetInventorySource(metrics.Source{Nodes: pl.nodes, Pods: core.Pods().Lister(), Resources: set,
			DRA: dra.InventorySource(dra.NewTracker(), h.SharedDRAManager)})
	}
	return pl, nil
}

// Close gives back the framework's DRA tracker (dra.TrackerFor) and node
// table (snapshot.For); the framework's Close calls it.
func (pl *DeviceFit) Close() error {
	if pl.releaseDRA != nil {
		pl.releaseDRA()
	}
	if pl.releaseTable != nil {
		pl.releaseTable()
	}
	return nil
}

func enabled(f featuregate.Feature) bool {
	return utilfeature.DefaultFeatureGate.Enabled(f)
}

// Name returns the plugin name.
func (pl *DeviceFit) Name() string { return Name }
