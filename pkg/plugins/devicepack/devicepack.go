// Package devicepack is the DevicePack scheduler plugin: fragmentation-aware
// bin-packing of device resources. Among the nodes that fit a pod it prefers
// the one where the expected number of stranded devices (see pkg/devices,
// Fragmentation) grows least, then the one whose devices end up fullest, then
// the least valuable product, so that the devices left free stay usable by
// the jobs that actually arrive.
package devicepack

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"
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
const Name = "DevicePack"

var (
	_ fwk.PreFilterPlugin   = &DevicePack{}
	_ fwk.EnqueueExtensions = &DevicePack{}
	_ fwk.PreScorePlugin    = &DevicePack{}
	_ fwk.ScorePlugin       = &DevicePack{}
	_ fwk.ScoreExtensions   = &DevicePack{}
	_ fwk.PostFilterPlugin  = &DevicePack{}
	_ fwk.SignPlugin        = &DevicePack{}
)

// DevicePack is the plugin. After New only the workload distribution and
// the scratch and memo fields change (the node table is snapshot's).
type DevicePack struct {
	handle    fwk.Handle
	resources devices.ResourceSet
	// scratchMu guards the PreScore-only fields below; cycles are serial,
	// so it is never contended.
	scratchMu sync.Mutex
	// scratch holds the candidates' entries in the node table's cache,
	// reused from cycle to cycle.
	scratch  []*devices.NodeDevices
	weights  weights
	values   []productValue
	workload *workload
	// dra keeps the DRA inventory and class verdicts between cycles, the
	// same tracker as DeviceFit's in the framework (dra.TrackerFor);
	// releaseDRA gives it back (Close).
	dra        *dra.Tracker
	releaseDRA func()
	// table is the cycle's node view DeviceFit shares (snapshot.For), which
	// the shortlist walks; releaseTable gives it back (Close).
	table        *snapshot.Table
	releaseTable func()
	// resourcesKey names the device resources (shared.ResourcesKey).
	resourcesKey string

	// groups is the distribution of pod-group shapes PlacementScore counts
	// domains against (placement.go); placementMu lets one of a cycle's
	// parallel ScorePlacement calls build the cycle's domains.
	groups      *groupShapes
	placementMu sync.Mutex
	// podDomains are the domains single pods are scored against, kept from
	// cycle to cycle (PreScore, under scratchMu); groupDomains those
	// placements are (ScorePlacement, under placementMu).
	podDomains, groupDomains podDomains
	// listNodes overrides the snapshot's node list (tests).
	listNodes func() ([]fwk.NodeInfo, error)

	// The shortlist (shortlist.go): shortlistOn from the args; profile is
	// read once; shortlistBroken stops it for good should a listed node
	// fail the filters; retries are the pods whose shortlist missed
	// (heal.go). The scratch slices are reused from cycle to cycle.
	shortlistOn     bool
	profileOnce     sync.Once
	profile         profileShortlist
	shortlistBroken atomic.Bool
	retries         retrySet
	feasibleScratch []fwk.NodeInfo
	rowScratch      []*snapshot.Row
	knownScratch    []*devices.NodeDevices
	// kept are the shortlist's walks kept between cycles, by pod class
	// (keptshortlist.go), under keptMu.
	// keptStamp counts the walks asked for (LRU); allRows is every
	// position, for a walk that starts over.
	keptMu    sync.Mutex
	kept      map[string]*keptFeasible
	keptStamp uint64
	allRows   []int
	// shapeScores[id] is the raw score of row shape id in the cycle whose
	// shapeStamp shapeStamps[id] holds (scoreShapes).
	shapeScores              []int64
	shapeStamps              []uint64
	shapeStamp               uint64
	rawScratch               []int64
	spreadListers            *spreadListers
	taintComparisonOperators bool
	draGates                 draGates
}

type weights struct {
	fragmentation, bestFit, productValue, scarcity, deviceNodePenalty int64
}

type productValue struct {
	pattern devices.ProductPattern
	value   int64
}

// New builds DevicePack from its args, validating them again: tests and
// embedders construct plugins without going through the config scheme.
func New(_ context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, ok := obj.(*config.DevicePackArgs)
	if !ok {
		return nil, fmt.Errorf("want args to be of type DevicePackArgs, got %T", obj)
	}
	if err := validation.ValidateDevicePackArgs(nil, args); err != nil {
		return nil, err
	}
	set, err := devices.NewResourceSet(args.DeviceResources)
	if err != nil {
		return nil, err
	}
	w, err := newWorkload(args.Workload)
	if err != nil {
		return nil, err
	}
	tracker, release := dra.TrackerFor(h)
	key := shared.ResourcesKey(args.DeviceResources)
	table, releaseTable := snapshot.For(h, set, key)
	pl := &DevicePack{
		handle:    h,
		resources: set,
		weights: weights{
			fragmentation:     args.FragmentationWeight,
			bestFit:           args.BestFitWeight,
			productValue:      args.ProductValueWeight,
			scarcity:          args.ScarcityWeight,
			deviceNodePenalty: args.DeviceNodePenalty,
		},
		workload:   w,
		dra:        tracker,
		releaseDRA: release,
		groups:     newGroupShapes(args.Workload.HalfLifePods),

		groupDomains: podDomains{withValues: true},

		resourcesKey: key,
		table:        table,
		releaseTable: releaseTable,

		shortlistOn:              args.Shortlist,
		taintComparisonOperators: utilfeature.DefaultFeatureGate.Enabled(features.TaintTolerationComparisonOperators),
		draGates: draGates{
			extendedResource: utilfeature.DefaultFeatureGate.Enabled(features.DRAExtendedResource),
			deviceTaints:     utilfeature.DefaultFeatureGate.Enabled(features.DRADeviceTaints),
			nodeAllocatable:  utilfeature.DefaultFeatureGate.Enabled(features.DRANodeAllocatableResources),
		},
	}
	for _, v := range args.ProductValues {
		p, err := devices.ParseProductPattern(v.Product)
		if err != nil {
			return nil, err
		}
		pl.values = append(pl.values, productValue{pattern: p, value: v.Value})
	}
	metrics.Register()
	if h != nil && h.SharedInformerFactory() != nil {
		// Stranded devices on /metrics are counted against the same
		// workload that DevicePack scores with.
		// The informers PodTopologySpread reads too: none added.
		pl.spreadListers = newSpreadListers(h.SharedInformerFactory())
		core := h.SharedInformerFactory().Core().V1()
		metrics.SetInventorySource(metrics.Source{
			Nodes: core.Nodes().Lister(), Pods: core.Pods().Lister(), Resources: set, Workload: func(pods []*v1.Pod) *devices.Workload { return strandingWorkload(args, pods) },
			// A tracker of the scrape's own: a scrape's view would
			// otherwise move the held state the scheduling cycles'
			// views are computed from, between two of them.
			DRA: dra.InventorySource(dra.NewTracker(), h.SharedDRAManager),
		})
	}
	return pl, nil
}

// Close gives back the framework's DRA tracker (dra.TrackerFor) and node
// table (snapshot.For); the framework's Close calls it.
func (pl *DevicePack) Close() error {
	if pl.releaseDRA != nil {
		pl.releaseDRA()
	}
	if pl.releaseTable != nil {
		pl.releaseTable()
	}
	return nil
}

// strandingWorkload is what devicefit_devices counts stranded devices
// against: the profile's workload made of the jobs bound and pending now
// (EstimateWorkload), so that the gauge and `kubectl devicefit inventory`,
// which reads the API server only, agree; the histogram DevicePack scores
// with also weighs pods that are gone. nil when none is known.
func strandingWorkload(args *config.DevicePackArgs, pods []*v1.Pod) *devices.Workload {
	w, err := EstimateWorkload(args, pods)
	if err != nil {
		klog.ErrorS(err, "Estimating the workload of devicefit_devices")
		return nil
	}
	return w
}

// Name returns the plugin name.
func (pl *DevicePack) Name() string { return Name }

// EventsToRegister returns the events on which a node list DevicePack
// returned for DeviceFit may grow (shared.CarriedListEvents). DevicePack
// itself never rejects a pod; but the framework counts the plugins that
// return PreFilter lists among those that rejected a pending pod, and
// asks only those whether an event may help it.
func (pl *DevicePack) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return shared.CarriedListEvents(), nil
}
