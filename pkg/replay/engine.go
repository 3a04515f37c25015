package replay

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	fwk "k8s.io/kube-scheduler/framework"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"

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
	// Defrag runs the defragmenter in the loop (defragloop.go).
	Defrag DefragOptions
	// onPlugin is called with every plugin the framework builds (the
	// soak reads DevicePack's workload through it).
	onPlugin func(fwk.Plugin)
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
	dra   *committedDRA
	snap  *internalcache.Snapshot
	nodes []fwk.NodeInfo // fleet order
	// bound: a placed pod is added to its node info, as the scheduler's
	// cache adds a bound pod, instead of assumed in the snapshot (the
	// soak, whose pods also depart).
	bound   bool
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
	if opts.onPlugin != nil {
		for name, factory := range registry {
			registry[name] = func(ctx context.Context, args runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
				p, err := factory(ctx, args, h)
				if err == nil {
					opts.onPlugin(p)
				}
				return p, err
			}
		}
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
	var d *defragger
	if opts.Defrag.Budget > 0 {
		d = newDefragger(opts.Defrag, len(arrivals), len(fleet))
		d.placements = res.Placements
		// Moved pods leave their node info, as deleted pods leave the
		// scheduler's cache: bound, not assumed.
		s.bound = true
		res.Defrag = &DefragResult{Budget: opts.Defrag.Budget, MaxMoves: opts.Defrag.MaxMoves, Delay: opts.Defrag.Delay}
	}
	r := &policyRun{s: s, res: res, arrivals: arrivals, d: d, name: pol.Name}
	record := r.record
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
		if err := record(i, pod, out, arrived); err != nil {
			return nil, err
		}
		if d != nil {
			if err := d.step(ctx, s, i, record); err != nil {
				return nil, fmt.Errorf("policy %s, moves after pod %s (%s): %w", pol.Name, a.Name, a.Pod.Source, err)
			}
		}
		if opts.Progress != nil && (i+1)%256 == 0 && time.Since(lastReport) > 2*time.Second {
			lastReport = time.Now()
			p := m.point(i + 1)
			fmt.Fprintf(opts.Progress, "%s: %d/%d pods, arrived %.1f%%, allocated %.1f%%, failed %d, %.0fs\n",
				pol.Name, i+1, len(arrivals), p.ArrivedPct, p.AllocatedPct, p.FailedPods, time.Since(begin).Seconds())
		}
	}
	if d != nil {
		// Replacements still waiting out the delay are scheduled last.
		if err := d.release(ctx, s, math.MaxInt, record); err != nil {
			return nil, fmt.Errorf("policy %s, moved pods at the end: %w", pol.Name, err)
		}
	}
	for nextPoint*m.capacity <= 100*m.arrived {
		res.Points = append(res.Points, m.point(len(arrivals)).at(nextPoint))
		nextPoint++
	}
	res.Final = m.point(len(arrivals))
	if d != nil {
		res.Defrag.Moves, res.Defrag.Rescued, res.Defrag.Lost = m.moves, d.rescued, d.lost
	}
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

// policyRun is one policy's replay under way: what record books outcomes
// into.
type policyRun struct {
	s        *simulation
	res      *PolicyResult
	arrivals []Arrival
	d        *defragger // nil: no defragmenter
	name     string
}

// record books an outcome of arrival idx: on arrival, placed again after
// a move, or placed after waiting.
func (r *policyRun) record(idx int, pod *v1.Pod, out outcome, how outcomeOf) error {
	s, m, res, d := r.s, r.s.metrics, r.res, r.d
	a := &r.arrivals[idx]
	if how == rescued {
		m.failed--
		if a.Pod.GPUs > 0 {
			m.failedDevice--
		}
		k := slices.IndexFunc(res.Failures, func(f Failure) bool { return f.Index == idx })
		for _, p := range res.Failures[k].RejectedBy {
			s.failed[p]--
		}
		res.Failures = slices.Delete(res.Failures, k, k+1)
	}
	if out.node < 0 {
		m.failed++
		if a.Pod.GPUs > 0 {
			m.failedDevice++
		}
		for _, p := range out.rejectedBy {
			s.failed[p]++
		}
		rejectedBy := out.rejectedBy
		if how == moved {
			rejectedBy = append([]string{"moved by the defragmenter"}, rejectedBy...)
		}
		res.Failures = append(res.Failures, Failure{Index: idx, ArrivedPct: round2(100 * float64(m.arrived) / float64(m.capacity)),
			Pod: a.Pod, Name: a.Name, RejectedBy: rejectedBy})
		res.Placements[idx] = ""
		if d != nil {
			d.pend(idx, pod, a.Pod)
		}
		return nil
	}
	m.allocated += a.Pod.MilliGPUs()
	var gpus []int
	if m.shares != nil {
		var err error
		if gpus, err = m.shares.place(out.node, a.Pod, out.gpu); err != nil {
			return fmt.Errorf("policy %s, pod %s: %w", r.name, a.Name, err)
		}
	}
	m.update(out.node, s.nodes[out.node])
	res.Placements[idx] = s.nodes[out.node].Node().Name
	if d != nil {
		d.bind(idx, pod, a.Pod, out.node, gpus)
	}
	return nil
}
