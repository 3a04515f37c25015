package replay

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/dynamic-resource-allocation/deviceclass/extendedresourcecache"
	resourceslicetracker "k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodevolumelimits"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
	"k8s.io/kubernetes/pkg/scheduler/util/assumecache"

	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/plugins/devicefit"
)

// Upstream's bounds for percentageOfNodesToScore (pkg/scheduler,
// minFeasibleNodesToFind and minFeasibleNodesPercentageToFind), unexported
// there.
const (
	minFeasibleNodesToFind           = 100
	minFeasibleNodesPercentageToFind = 5
)

// EngineOptions tune how a policy is replayed; none changes its result
// except AllNodes.
type EngineOptions struct {
	// Parallelism of the framework's Parallelizer (Filter and Score run
	// per node in parallel; results do not depend on it). <= 0 means 1.
	Parallelism int
	// AllNodes ignores percentageOfNodesToScore: every feasible node is
	// scored, for every policy.
	AllNodes bool
	// Progress receives a line every couple of seconds; nil for none.
	Progress io.Writer
	// NoPrescreen runs every Filter plugin on every node, even where
	// NodeResourcesFit must reject the pod (see simulation.prescreen).
	NoPrescreen bool
	// Devices is how the fleet's devices reach the scheduler: a device
	// plugin (default) or DRA ResourceSlices (dramode.go).
	Devices DeviceMode
	// Shares: the GPUs are shared DRA devices and fractional pods ask for
	// shares of one through claims (--fractional dra-shares,
	// sharesmode.go). Needs Devices dra.
	Shares bool
	// DeviceChoice is which GPU of the chosen node a share claim gets:
	// first fit, upstream's allocator (the default), or an oracle's choice
	// (sharesmode.go), which the replay makes the claim's allocation in
	// place of the allocator's. Shares only; it changes the result.
	DeviceChoice DeviceChoice
	// ModelDeviceChoice makes DevicePack's model of the allocator
	// (pkg/dra's Picks) follow DeviceChoice too, through the DRA manager
	// the framework gets (dra.DeviceChooser); otherwise it models first
	// fit, as in a cluster.
	ModelDeviceChoice bool
}

// oracle reports whether share claims get an oracle's device.
func (o *EngineOptions) oracle() bool {
	return o.Shares && o.DeviceChoice != "" && o.DeviceChoice != ChoiceFirstFit
}

var metricsOnce sync.Once

// initMetrics creates the scheduler's metrics, which the framework needs,
// without registering them: unregistered, they cost nothing to update.
func initMetrics() {
	metricsOnce.Do(func() {
		if schedmetrics.PluginEvaluationTotal == nil {
			schedmetrics.InitMetrics()
		}
	})
}

// simulation is one policy's replay over a fresh fleet.
type simulation struct {
	fw framework.Framework
	// dra is the DRA manager with the allocations of bound pods committed
	// (committedclaims.go); nil without DRA.
	dra     *committedDRA
	snap    *internalcache.Snapshot
	nodes   []fwk.NodeInfo // fleet order
	style   SelectorStyle
	percent int32
	par     int

	// nextStart is where the next pod's node search begins (upstream's
	// nextStartNodeIndex), in fleet order.
	nextStart int
	// Reused per pod.
	statuses []*fwk.Status
	order    []int

	metrics *tracker
	failed  map[string]int

	// prescreen: see canFit. free is what each node has left, kept
	// up to date as pods are assumed; gpus is each node's devices; shares
	// the shares model in dra-shares mode.
	prescreen bool
	// draByModel: the pre-screen's device model also decides where
	// DynamicResources would accept the pod, and the allocator runs on the
	// chosen node only (see schedule).
	draByModel bool
	models     []string // per node, the GPU model its slice publishes
	shares     *shareTracker
	// choice is the device choice of share claims (EngineOptions);
	// nodeIndex maps node names to fleet indexes for the DRA manager's
	// DeviceChooser.
	choice    DeviceChoice
	nodeIndex map[string]int
	moved     int // share claims the oracle moved off first fit's GPU
	gpus      []int64
	request   podRequest
	free      []podRequest
	slots     []int
}

// podRequest is what NodeResourcesFit checks of a replay pod; share is a
// fractional pod's shares in dra-shares mode (DynamicResources checks it).
type podRequest struct {
	milliCPU, memory, devices int64
	share                     int64
	// models are the GPU models a claim's CEL accepts (nil: any).
	models []string
}

// rejectedByFit is the status of a node the pre-screen turned away;
// rejectedByDRA that of one whose shared GPUs it found too full.
var (
	rejectedByFit = fwk.NewStatus(fwk.Unschedulable, "insufficient resources (replay pre-screen)").WithPlugin(names.NodeResourcesFit)
	rejectedByDRA = fwk.NewStatus(fwk.Unschedulable, "cannot allocate all claims (replay pre-screen)").WithPlugin(names.DynamicResources)
)

// canFit is the replay's capacity pre-screen: false when the node lacks the
// pod slot, cpu, memory or devices the pod requests, which NodeResourcesFit's
// Filter would reject (it checks exactly these), or, in DRA mode,
// DynamicResources would (the node's slice has fewer free devices: the
// pods asking nvidia.com/gpu there hold exactly their count). Such nodes are not handed to the
// framework at all: most nodes are full late in a replay, and upstream's
// NodeResourcesFit spends most of its time validating the extended resource
// name on every node. Placements are unchanged (--no-prescreen checks
// that); only the plugin named for a failed pod on such a node may differ.
//
// In dra-shares mode the devices are judged by the shares model instead
// (shareTracker.fits: a GPU with the share left, or enough untouched GPUs),
// as the allocator's first fit would; the model is checked against the
// allocator after every replay, and the tests compare placements with the
// pre-screen off.
func (s *simulation) canFit(i int) *fwk.Status {
	r, f := &s.request, &s.free[i]
	if s.slots[i] <= 0 ||
		(r.milliCPU != 0 && r.milliCPU > f.milliCPU) ||
		(r.memory != 0 && r.memory > f.memory) {
		return rejectedByFit
	}
	if s.shares != nil {
		if !s.shares.fits(i, r.devices, r.share) || len(r.models) > 0 && !slices.Contains(r.models, s.models[i]) {
			return rejectedByDRA
		}
		return nil
	}
	if r.devices != 0 && r.devices > f.devices {
		return rejectedByFit
	}
	return nil
}

// refresh reads what node i has left from its NodeInfo.
func (s *simulation) refresh(i int) {
	ni := s.nodes[i]
	alloc, req := ni.GetAllocatable(), ni.GetRequested()
	s.free[i] = podRequest{
		milliCPU: alloc.GetMilliCPU() - req.GetMilliCPU(),
		memory:   alloc.GetMemory() - req.GetMemory(),
		devices:  s.gpus[i] - req.GetScalarResources()[DeviceResource],
	}
	s.slots[i] = alloc.GetAllowedPodNumber() - len(ni.GetPods())
}

// filters reports whether plugin filters in fw's profile.
func filters(fw framework.Framework, plugin string) bool {
	return slices.ContainsFunc(fw.ListPlugins().Filter.Enabled, func(p schedconfig.Plugin) bool { return p.Name == plugin })
}

// prescreenApplies reports whether NodeResourcesFit filters in the profile
// and checks nvidia.com/gpu.
func prescreenApplies(fw framework.Framework, profile *schedconfig.KubeSchedulerProfile) bool {
	if !filters(fw, names.NodeResourcesFit) {
		return false
	}
	for _, pc := range profile.PluginConfig {
		if pc.Name != names.NodeResourcesFit {
			continue
		}
		args, ok := pc.Args.(*schedconfig.NodeResourcesFitArgs)
		if !ok {
			return false
		}
		group, _, _ := strings.Cut(string(DeviceResource), "/")
		if slices.Contains(args.IgnoredResources, string(DeviceResource)) || slices.Contains(args.IgnoredResourceGroups, group) {
			return false
		}
	}
	return true
}

// newSimulation builds the framework for a policy, as kube-scheduler's
// scheduler.New does for a profile, over an in-memory snapshot of the
// fleet and an empty fake API (informers for the plugins that list
// volumes, DRA objects and the like see nothing).
func newSimulation(ctx context.Context, pol Policy, fleet []NodeSpec, arrivals []Arrival, wl *devices.Workload, opts EngineOptions) (*simulation, error) {
	initMetrics()
	registry, err := Registry()
	if err != nil {
		return nil, err
	}
	v1Nodes := make([]*v1.Node, len(fleet))
	for i := range fleet {
		v1Nodes[i] = NewNode(&fleet[i])
		if opts.Devices == DevicesDRA {
			asDRANode(v1Nodes[i])
		}
	}
	snap := internalcache.NewSnapshot(nil, v1Nodes)
	par := max(opts.Parallelism, 1)
	client := fake.NewClientset()
	if opts.Devices == DevicesDRA {
		objs := draObjects(fleet, opts.Shares)
		if opts.Shares {
			objs = append(objs, shareClaims(arrivals)...)
		}
		client = fake.NewClientset(objs...)
	}
	var chooser *choosingDRA
	if opts.oracle() && opts.ModelDeviceChoice {
		chooser = &choosingDRA{}
	}
	fw, dra, err := newFramework(ctx, pol, registry, client, snap, par, chooser)
	if err != nil {
		return nil, err
	}
	profile := pol.Profile

	s := &simulation{
		fw:       fw,
		dra:      dra,
		snap:     snap,
		nodes:    make([]fwk.NodeInfo, len(fleet)),
		par:      par,
		statuses: make([]*fwk.Status, len(fleet)),
		free:     make([]podRequest, len(fleet)),
		gpus:     make([]int64, len(fleet)),
		models:   make([]string, len(fleet)),
		slots:    make([]int, len(fleet)),
		order:    make([]int, 0, len(fleet)),
		failed:   map[string]int{},
		percent:  pol.PercentageOfNodesToScore,
	}
	if opts.AllNodes {
		s.percent = 100
	}
	for i := range fleet {
		ni, err := snap.Get(fleet[i].Name)
		if err != nil {
			return nil, err
		}
		s.nodes[i] = ni
		s.gpus[i] = fleet[i].GPUs
		s.models[i] = fleet[i].Model
	}
	if slices.ContainsFunc(fw.ListPlugins().Filter.Enabled, func(p schedconfig.Plugin) bool { return p.Name == devicefit.Name }) {
		s.style = SelectByAnnotation
	}
	s.prescreen = !opts.NoPrescreen && prescreenApplies(fw, &profile)
	s.draByModel = s.prescreen && opts.Devices == DevicesDRA && filters(fw, names.DynamicResources)
	s.metrics = newTracker(fleet, v1Nodes, wl)
	if opts.Shares {
		s.shares = newShareTracker(fleet)
		s.metrics.withShares(s.shares)
	}
	s.choice = ChoiceFirstFit
	if opts.oracle() {
		s.choice = opts.DeviceChoice
	}
	if chooser != nil {
		s.nodeIndex = make(map[string]int, len(fleet))
		for i := range fleet {
			s.nodeIndex[fleet[i].Name] = i
		}
		chooser.choose = s.chooseDevice
	}
	for i := range s.nodes {
		s.metrics.update(i, s.nodes[i])
		s.refresh(i)
	}
	return s, nil
}

// newFramework builds the framework for a policy, as kube-scheduler's
// scheduler.New does for a profile, over snap and a fake API client that
// holds what the plugins read through informers (volumes, DRA objects and
// the like). The informers are started and synced.
//
// chooser, when not nil, is the DRA manager the framework gets instead of
// the committed one it wraps (an oracle's device choice, modelled by
// DevicePack); its choose function is the caller's to set.
func newFramework(ctx context.Context, pol Policy, registry frameworkruntime.Registry, client *fake.Clientset, snap *internalcache.Snapshot, par int, chooser *choosingDRA) (framework.Framework, *committedDRA, error) {
	logger := klog.FromContext(ctx)
	informerFactory := informers.NewSharedInformerFactory(client, 0)
	var draManager fwk.SharedDRAManager
	var claims *committedDRA
	// synced are the DRA caches fed by handlers, which WaitForCacheSync
	// does not wait for: the first pods must see every slice and class.
	var synced []cache.InformerSynced
	if utilfeature.DefaultFeatureGate.Enabled(features.DynamicResourceAllocation) {
		claimCache := assumecache.NewAssumeCache(logger, informerFactory.Resource().V1().ResourceClaims().Informer(), "ResourceClaim", "", nil)
		// The registration of the cache's own informer handler: synced once
		// the cache holds every claim (the share claims of dra-shares),
		// which the informer's sync alone does not promise.
		synced = append(synced, claimCache.AddEventHandler(cache.ResourceEventHandlerFuncs{}).HasSynced)
		trackerOpts := resourceslicetracker.Options{
			EnableDeviceTaintRules:   utilfeature.DefaultFeatureGate.Enabled(features.DRADeviceTaintRules),
			EnableConsumableCapacity: utilfeature.DefaultFeatureGate.Enabled(features.DRAConsumableCapacity),
			SliceInformer:            informerFactory.Resource().V1().ResourceSlices(),
			KubeClient:               client,
		}
		if trackerOpts.EnableDeviceTaintRules {
			trackerOpts.TaintInformer = informerFactory.Resource().V1().DeviceTaintRules()
		}
		sliceTracker, err := resourceslicetracker.StartTracker(ctx, trackerOpts)
		if err != nil {
			return nil, nil, fmt.Errorf("starting the resource slice tracker: %w", err)
		}
		synced = append(synced, sliceTracker.HasSynced)
		m := dynamicresources.NewDRAManager(ctx, claimCache, sliceTracker, informerFactory)
		if erCache, ok := m.DeviceClassResolver().(*extendedresourcecache.ExtendedResourceCache); ok && erCache != nil {
			// The cache that maps extended resources to DeviceClasses
			// (DRAExtendedResource) fills only from DeviceClass events, as
			// kube-scheduler's event handlers feed it.
			reg, err := informerFactory.Resource().V1().DeviceClasses().Informer().AddEventHandler(erCache)
			if err != nil {
				return nil, nil, fmt.Errorf("watching DeviceClasses: %w", err)
			}
			synced = append(synced, reg.HasSynced)
		}
		claims = newCommittedDRA(m)
		draManager = claims
		if chooser != nil {
			chooser.committedDRA = claims
			draManager = chooser
		}
	}
	profile := pol.Profile
	fw, err := frameworkruntime.NewFramework(ctx, registry, &profile,
		frameworkruntime.WithClientSet(client),
		frameworkruntime.WithInformerFactory(informerFactory),
		frameworkruntime.WithSharedDRAManager(draManager),
		frameworkruntime.WithSharedCSIManager(nodevolumelimits.NewCSIManager(informerFactory.Storage().V1().CSINodes().Lister())),
		frameworkruntime.WithSnapshotSharedLister(snap),
		frameworkruntime.WithEventRecorder(&events.FakeRecorder{}),
		frameworkruntime.WithWaitingPods(frameworkruntime.NewWaitingPodsMap()),
		frameworkruntime.WithPodsInPreBind(frameworkruntime.NewPodsInPreBindMap()),
		frameworkruntime.WithParallelism(par),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("policy %s: %w", pol.Name, err)
	}
	informerFactory.Start(ctx.Done())
	for typ, ok := range informerFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, nil, fmt.Errorf("policy %s: informer for %v did not sync", pol.Name, typ)
		}
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return nil, nil, fmt.Errorf("policy %s: the DRA caches did not sync", pol.Name)
	}
	return fw, claims, nil
}

// numFeasibleNodesToFind is upstream's rule (Scheduler.numFeasibleNodesToFind).
func numFeasibleNodesToFind(percentage int32, numAllNodes int) int {
	n := int32(numAllNodes)
	if n < minFeasibleNodesToFind {
		return numAllNodes
	}
	if percentage == 0 {
		percentage = int32(50) - n/125
		if percentage < minFeasibleNodesPercentageToFind {
			percentage = minFeasibleNodesPercentageToFind
		}
	}
	num := n * percentage / 100
	if num < minFeasibleNodesToFind {
		return minFeasibleNodesToFind
	}
	return int(num)
}

// outcome of one pod.
type outcome struct {
	node int // fleet index, -1 when the pod failed
	// gpu is the GPU an oracle device choice gave a share claim; -1 for
	// first fit (the allocator's own choice).
	gpu int
	// rejectedBy names the plugins that turned the pod (or some node) away.
	rejectedBy []string
}

// schedule runs one scheduling cycle for pod, the way schedule_one.go's
// schedulePod does, deterministically:
//
//   - PreFilter on all nodes; a rejection fails the pod (no PostFilter:
//     no preemption, and a failed pod is never retried);
//   - Filter over the nodes (or PreFilter's subset) in fleet order, starting
//     where the previous pod's search stopped; it stops once
//     numFeasibleNodesToFind nodes fit, counting in that order (upstream
//     counts in completion order of its parallel workers, which is not
//     reproducible);
//   - one feasible node is taken as is; otherwise PreScore and Score (with
//     NormalizeScore and the profile's weights) run on the feasible nodes
//     and the highest total wins, ties going to the lowest fleet index
//     (upstream takes whichever its heap yields);
//   - Reserve on the chosen node, then the pod is assumed in the snapshot
//     (no Permit, PreBind or Bind: nothing runs and nothing departs).
func (s *simulation) schedule(ctx context.Context, pod *v1.Pod) (outcome, error) {
	state := framework.NewCycleState()
	preRes, status, _ := s.fw.RunPreFilterPlugins(ctx, state, pod)
	if !status.IsSuccess() {
		if !status.IsRejected() {
			return outcome{}, fmt.Errorf("PreFilter: %w", status.AsError())
		}
		return outcome{node: -1, rejectedBy: []string{status.Plugin() + " (PreFilter)"}}, nil
	}
	s.order = s.order[:0]
	if preRes.AllNodes() {
		for i := range s.nodes {
			s.order = append(s.order, i)
		}
	} else {
		for i := range s.nodes {
			if preRes.NodeNames.Has(s.nodes[i].Node().Name) {
				s.order = append(s.order, i)
			}
		}
	}
	// In DRA mode the allocator's Filter dominates a replay: upstream runs
	// it on every node tried, for ~500 nodes per pod at the trace's scale.
	// Where the pre-screen's device model is exact (free devices per node,
	// or per GPU the shares first fit leaves, and the claim's models), it
	// decides DynamicResources' verdict on the nodes tried and the
	// allocator runs on the chosen node alone, before Reserve, which needs
	// its result. Should the allocator refuse a node the model accepted,
	// the replay fails (allocatorAgrees); --no-prescreen runs it everywhere.
	skip := state.GetSkipFilterPlugins()
	byModel := s.draByModel && !skip.Has(names.DynamicResources)
	if byModel {
		state.SetSkipFilterPlugins(skip.Clone().Insert(names.DynamicResources))
	}
	// Upstream counts the nodes PreFilter left (findNodesThatPassFilters).
	toFind := numFeasibleNodesToFind(s.percent, len(s.order))
	if !s.fw.HasScorePlugins() {
		toFind = 1
	}
	feasible, rejectedBy, err := s.filter(ctx, state, pod, toFind)
	if err != nil {
		return outcome{}, err
	}
	if len(feasible) == 0 {
		if len(s.order) == 0 {
			rejectedBy = append(rejectedBy, "PreFilter result")
		}
		return outcome{node: -1, rejectedBy: rejectedBy}, nil
	}
	chosen := feasible[0]
	if len(feasible) > 1 {
		if chosen, err = s.score(ctx, state, pod, feasible); err != nil {
			return outcome{}, err
		}
	}
	if byModel {
		state.SetSkipFilterPlugins(skip)
		if err := s.allocatorAgrees(ctx, state, pod, chosen); err != nil {
			return outcome{}, err
		}
	}
	name := s.nodes[chosen].Node().Name
	pod.Spec.NodeName = name
	if st := s.fw.RunReservePluginsReserve(ctx, state, pod, name); !st.IsSuccess() {
		s.fw.RunReservePluginsUnreserve(ctx, state, pod, name)
		pod.Spec.NodeName = ""
		if !st.IsRejected() {
			return outcome{}, fmt.Errorf("Reserve on %s: %w", name, st.AsError())
		}
		return outcome{node: -1, rejectedBy: []string{st.Plugin() + " (Reserve)"}}, nil
	}
	pi, err := framework.NewPodInfo(pod)
	if err != nil {
		return outcome{}, err
	}
	if err := s.snap.AssumePod(pi); err != nil {
		return outcome{}, err
	}
	gpu, firstFit := -1, -1
	if s.choice != ChoiceFirstFit && s.request.share > 0 {
		// The oracle's device replaces the allocator's first fit in the
		// claim's allocation, as if the allocator had chosen it.
		gpu = s.oracleGPU(chosen, nil)
		if gpu < 0 {
			return outcome{}, fmt.Errorf("the %s device choice finds no GPU of node %s with %d shares left, yet the allocator placed the pod there", s.choice, name, s.request.share)
		}
		if firstFit = s.shares.firstFit(chosen, s.request.share); gpu != firstFit {
			s.moved++
		}
	}
	if s.dra != nil {
		if err := s.dra.claims.commit(pod.UID, pod.Name, moveShareTo(name, gpu, firstFit)); err != nil {
			return outcome{}, err
		}
	}
	s.refresh(chosen)
	return outcome{node: chosen, gpu: gpu}, nil
}

// allocatorAgrees runs every Filter plugin, DynamicResources' allocator
// included, on the node the replay chose by its device model: the
// allocation Reserve commits is the allocator's own, and a model that
// strays from it stops the replay.
func (s *simulation) allocatorAgrees(ctx context.Context, state fwk.CycleState, pod *v1.Pod, chosen int) error {
	st := s.fw.RunFilterPlugins(ctx, state, pod, s.nodes[chosen])
	if !st.IsSuccess() {
		return fmt.Errorf("the replay's device model found node %s feasible, Filter did not (%s: %s)",
			s.nodes[chosen].Node().Name, st.Plugin(), st.Message())
	}
	return nil
}

// filter runs the Filter plugins in rotation order, in parallel chunks,
// until toFind nodes fit or every candidate was tried.
func (s *simulation) filter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, toFind int) ([]int, []string, error) {
	n := len(s.order)
	if n == 0 {
		return nil, nil, nil
	}
	start := s.nextStart % n
	var feasible []int
	var rejectedBy []string
	processed := 0
	for off := 0; off < n && len(feasible) < toFind; {
		chunk := n - off
		if toFind < n {
			chunk = min(chunk, max(toFind-len(feasible), 8*s.par))
		}
		s.fw.Parallelizer().Until(ctx, chunk, func(k int) {
			idx := s.order[(start+off+k)%n]
			if s.prescreen {
				if st := s.canFit(idx); st != nil {
					s.statuses[off+k] = st
					return
				}
			}
			s.statuses[off+k] = s.fw.RunFilterPlugins(ctx, state, pod, s.nodes[idx])
		}, "Filter")
		for k := off; k < off+chunk; k++ {
			st := s.statuses[k]
			s.statuses[k] = nil
			if len(feasible) >= toFind {
				continue // only clearing the buffer
			}
			processed = k + 1
			switch {
			case st.IsSuccess():
				feasible = append(feasible, s.order[(start+k)%n])
			case st.IsRejected():
				if p := st.Plugin(); !slices.Contains(rejectedBy, p) {
					rejectedBy = append(rejectedBy, p)
				}
			default:
				return nil, nil, fmt.Errorf("Filter on %s: %w", s.nodes[s.order[(start+k)%n]].Node().Name, st.AsError())
			}
		}
		off += chunk
	}
	s.nextStart = (s.nextStart + processed) % len(s.nodes)
	slices.Sort(rejectedBy)
	return feasible, rejectedBy, nil
}

// score returns the feasible node with the highest weighted total score,
// the lowest fleet index among equals.
func (s *simulation) score(ctx context.Context, state fwk.CycleState, pod *v1.Pod, feasible []int) (int, error) {
	if !s.fw.HasScorePlugins() {
		return slices.Min(feasible), nil
	}
	infos := make([]fwk.NodeInfo, len(feasible))
	for i, idx := range feasible {
		infos[i] = s.nodes[idx]
	}
	if st := s.fw.RunPreScorePlugins(ctx, state, pod, infos); !st.IsSuccess() {
		return 0, fmt.Errorf("PreScore: %w", st.AsError())
	}
	scores, st := s.fw.RunScorePlugins(ctx, state, pod, infos)
	if !st.IsSuccess() {
		return 0, fmt.Errorf("Score: %w", st.AsError())
	}
	best := -1
	var bestScore int64
	for i := range scores {
		idx := feasible[i]
		if best < 0 || scores[i].TotalScore > bestScore || scores[i].TotalScore == bestScore && idx < best {
			best, bestScore = idx, scores[i].TotalScore
		}
	}
	return best, nil
}

// PolicyResult is the replay of one policy.
type PolicyResult struct {
	Name string `json:"name"`
	// WallSeconds is the time the replay took (setup included); set only
	// with timing on, so that the JSON is otherwise reproducible.
	WallSeconds *float64 `json:"wall_seconds,omitempty"`
	// Points has a point at every whole arrived percent from 0 to the
	// final arrived percent (rounded down): the state after the last pod
	// whose arrival kept arrived demand at or below that percent.
	Points []Point `json:"points"`
	// Final is the state after the last pod.
	Final Point `json:"final"`
	// Source says where the profile came from, ConfigSHA256 which text.
	Source       string `json:"source"`
	ConfigSHA256 string `json:"config_sha256"`
	// SchedulerName and PercentageOfNodesToScore are the profile's (the
	// latter as used: 100 with --all-nodes, 0 meaning upstream's adaptive rule).
	SchedulerName            string `json:"scheduler_name"`
	PercentageOfNodesToScore int32  `json:"percentage_of_nodes_to_score"`
	// Selector is how pods' accepted models were expressed: "annotation"
	// (devicefit.io/products, profiles with DeviceFit) or "affinity".
	Selector string `json:"selector"`
	// FailedBy counts failed pods per plugin that rejected them somewhere
	// (a pod can count for several plugins).
	FailedBy map[string]int `json:"failed_by"`
	// MovedShares counts the share claims an oracle device choice
	// (EngineOptions.DeviceChoice) gave another GPU than first fit would
	// have; SharesPlaced the share claims placed.
	MovedShares  int `json:"moved_shares,omitempty"`
	SharesPlaced int `json:"shares_placed,omitempty"`
	// Failures lists every failed pod (not in the JSON; see WriteFailures).
	Failures []Failure `json:"-"`
	// Placements holds, per arrival, the node it was bound to ("" when it
	// failed). Not in the JSON.
	Placements []string `json:"-"`
}

// Failure is a pod that fitted nowhere.
type Failure struct {
	// Index is the pod's position in the arrival sequence.
	Index int
	// ArrivedPct is the arrived demand including this pod.
	ArrivedPct float64
	Pod        *PodSpec
	Name       string
	RejectedBy []string
}

// Point is the cluster state at one step of the replay. Percentages are of
// the fleet's devices, rounded to two decimals.
type Point struct {
	// ArrivedPct is the whole percent of a grid point (Points), or the
	// exact arrived demand (Final).
	ArrivedPct float64 `json:"arrived_pct"`
	// ArrivedExactPct is the arrived demand of the state a grid point
	// shows: at most ArrivedPct, short of it by less than the next pod.
	ArrivedExactPct float64 `json:"arrived_exact_pct"`
	AllocatedPct    float64 `json:"allocated_pct"`
	UnallocatedPct  float64 `json:"unallocated_pct"`
	// FragmentedPct is the expected stranded devices (pkg/devices,
	// Workload.Stranded, summed over nodes) for the trace's workload.
	FragmentedPct float64 `json:"fragmented_pct"`
	// FailedPods counts every pod that failed so far; FailedDevicePods
	// only those requesting devices.
	FailedPods       int `json:"failed_pods"`
	FailedDevicePods int `json:"failed_device_pods"`
	// Pods is the number of pods tried so far.
	Pods int `json:"pods"`
}

// RunPolicy replays arrivals under one policy on a fresh fleet.
func RunPolicy(ctx context.Context, pol Policy, fleet []NodeSpec, arrivals []Arrival, wl *devices.Workload, opts EngineOptions) (*PolicyResult, error) {
	begin := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if opts.Shares && opts.Devices != DevicesDRA {
		return nil, fmt.Errorf("--fractional %s needs --devices %s", FractionalDRAShares, DevicesDRA)
	}
	s, err := newSimulation(ctx, pol, fleet, arrivals, wl, opts)
	if err != nil {
		return nil, err
	}
	res := &PolicyResult{
		Name:                     pol.Name,
		Source:                   pol.Source,
		ConfigSHA256:             pol.ConfigSHA256,
		SchedulerName:            pol.Profile.SchedulerName,
		PercentageOfNodesToScore: s.percent,
		Selector:                 "affinity",
		FailedBy:                 s.failed,
		Placements:               make([]string, len(arrivals)),
	}
	if s.style == SelectByAnnotation {
		res.Selector = "annotation"
	}
	m := s.metrics
	nextPoint := int64(0)
	lastReport := time.Now()
	for i := range arrivals {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		a := &arrivals[i]
		// Points up to the arrived percent this pod will push past.
		after := m.arrived + a.Pod.MilliGPUs()
		for nextPoint*m.capacity < 100*after {
			res.Points = append(res.Points, m.point(i).at(nextPoint))
			nextPoint++
		}
		pod := NewPod(a, "replay-"+strconv.Itoa(i), pol.Profile.SchedulerName, s.style)
		s.request = podRequest{milliCPU: a.Pod.MilliCPU, memory: a.Pod.MemoryMiB << 20, devices: a.Pod.GPUs}
		share := opts.Shares && a.Pod.Fractional()
		if share {
			withShareClaim(pod, a)
			s.request.devices, s.request.share, s.request.models = 0, a.Pod.GPUMilli, a.Pod.Products
		}
		out, err := s.schedule(ctx, pod)
		if err != nil {
			return nil, fmt.Errorf("policy %s, pod %s (%s): %w", pol.Name, a.Name, a.Pod.Source, err)
		}
		m.arrived = after
		if out.node < 0 {
			m.failed++
			if a.Pod.GPUs > 0 {
				m.failedDevice++
			}
			for _, p := range out.rejectedBy {
				s.failed[p]++
			}
			res.Failures = append(res.Failures, Failure{Index: i, ArrivedPct: round2(100 * float64(after) / float64(m.capacity)),
				Pod: a.Pod, Name: a.Name, RejectedBy: out.rejectedBy})
		} else {
			m.allocated += a.Pod.MilliGPUs()
			if m.shares != nil {
				if err := m.shares.place(out.node, a.Pod, out.gpu); err != nil {
					return nil, fmt.Errorf("policy %s, pod %s: %w", pol.Name, a.Name, err)
				}
			}
			m.update(out.node, s.nodes[out.node])
			res.Placements[i] = s.nodes[out.node].Node().Name
		}
		if opts.Progress != nil && (i+1)%256 == 0 && time.Since(lastReport) > 2*time.Second {
			lastReport = time.Now()
			p := m.point(i + 1)
			fmt.Fprintf(opts.Progress, "%s: %d/%d pods, arrived %.1f%%, allocated %.1f%%, failed %d, %.0fs\n",
				pol.Name, i+1, len(arrivals), p.ArrivedPct, p.AllocatedPct, p.FailedPods, time.Since(begin).Seconds())
		}
	}
	for nextPoint*m.capacity <= 100*m.arrived {
		res.Points = append(res.Points, m.point(len(arrivals)).at(nextPoint))
		nextPoint++
	}
	res.Final = m.point(len(arrivals))
	if s.choice != ChoiceFirstFit {
		res.MovedShares = s.moved
		for i := range arrivals {
			if a := &arrivals[i]; a.Pod.Fractional() && res.Placements[i] != "" {
				res.SharesPlaced++
			}
		}
	}
	switch {
	case opts.Shares:
		if err := s.checkShares(m.shares, fleet, m.allocated); err != nil {
			return nil, fmt.Errorf("policy %s: %w", pol.Name, err)
		}
	case opts.Devices == DevicesDRA:
		if err := s.checkDRA(m.allocated / 1000); err != nil {
			return nil, fmt.Errorf("policy %s: %w", pol.Name, err)
		}
	}
	if opts.Progress != nil {
		fmt.Fprintf(opts.Progress, "%s: done, %d pods, arrived %.2f%%, allocated %.2f%%, failed %d, %.1fs\n",
			pol.Name, len(arrivals), res.Final.ArrivedPct, res.Final.AllocatedPct, res.Final.FailedPods, time.Since(begin).Seconds())
	}
	wall := round2(time.Since(begin).Seconds())
	res.WallSeconds = &wall
	return res, nil
}
