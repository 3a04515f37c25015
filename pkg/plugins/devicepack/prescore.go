package devicepack

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/dra"
	"github.com/devicefit/devicefit/pkg/plugins/shared"
	"github.com/devicefit/devicefit/pkg/plugins/snapshot"
)

const preScoreStateKey fwk.StateKey = "PreScore" + Name

// preScoreState is computed once per pod; Score reads it for every node.
type preScoreState struct {
	// demand is the pod's extended-resource device demand; devicePod says
	// whether it takes devices at all (claims included).
	demand      devices.Demand
	devicePod   bool
	milliCPU    int64
	memoryBytes int64
	workload    *devices.Workload
	// cache holds the candidates' devices as PreScore refreshed them; kinds
	// is indexed by its kind ids.
	cache *devices.NodeCache
	kinds []kindInfo
	// maxValue is the largest product value among the candidates (> 0).
	maxValue int64
	// dra holds the candidates with DRA devices (prepareDRA), by name.
	dra map[string]*draNode
	// domains: the topology domains of the pod groups DevicePack placed,
	// with their free devices, when any group had a topology key and the
	// pod asks for devices (nil otherwise): Score charges a node what
	// taking the pod there costs those groups (domainsState.nodeLoss).
	domains *domainsState
	// listed is the number of nodes PreFilter's shortlist named (0: none),
	// and lo and hi the lowest and highest raw scores over every feasible
	// node, which NormalizeScore scales by instead of the listed nodes'.
	listed int
	lo, hi int64
	// first is, after a shortlist, the lowest-named feasible node with the
	// best raw score (firstByName).
	first string
	// coarse: Score ranks by FGD's band (coarse.go).
	coarse bool
}

// kindInfo is what scoring needs of one kind of device, computed once per
// pod instead of once per node.
type kindInfo struct {
	value int64
	// accept is nil when no node has a free device of the kind (no node of
	// the cluster with scarcity on, else no candidate): then nothing of it
	// can be stranded (F = 0 before and after).
	accept []bool
	// pressure: expected devices of product-constrained demand left without
	// room per device of this kind a placement takes.
	pressure float64
	// free is the kind's free devices over the cluster (scarcity on) or
	// over the candidates.
	free int64
	// candidate: some candidate node has devices of the kind.
	candidate bool
	// need is, per class, the share of one such DRA device a job takes
	// (preScoreState.need); nil until asked.
	need []float64
}

// Clone implements fwk.StateData; the state is never modified.
func (s *preScoreState) Clone() fwk.StateData { return s }

// PreScore prepares the pod's demand, the workload snapshot and, per kind of
// device on the candidate nodes, its value, workload acceptance and scarcity
// pressure, so Score neither parses nor allocates. The node cache reads a
// node's labels only when the node object changed.
func (pl *DevicePack) PreScore(ctx context.Context, cycleState fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) *fwk.Status {
	if s := readShortlist(cycleState); s != nil {
		// PreFilter prepared the state over every feasible node and named
		// the nodes that can win; the framework filtered only those.
		pl.checkShortlist(ctx, pod, s, nodes)
		return nil
	}
	s, status := pl.prepare(ctx, cycleState, pod, nodes, nil)
	if !status.IsSuccess() {
		return status
	}
	cycleState.Write(preScoreStateKey, s)
	return nil
}

// prepare computes the pod's preScoreState over nodes, the nodes it will be
// scored on; Skip when there is nothing to pack for. known, when not nil,
// are the nodes' entries in the node table (the shortlist's walk).
func (pl *DevicePack) prepare(ctx context.Context, cycleState fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo, known []*devices.NodeDevices) (*preScoreState, *fwk.Status) {
	facts := shared.ReadPod(cycleState, pod, pl.resources, pl.resourcesKey)
	demand, err := facts.Demand, facts.Err
	if err != nil {
		// DeviceFit reports this; scoring a malformed pod helps no one.
		return nil, fwk.NewStatus(fwk.Skip)
	}
	view, err := pl.draView(ctx, cycleState)
	if err != nil {
		return nil, fwk.AsStatus(fmt.Errorf("DRA devices: %w", err))
	}
	reqs, err := dra.PodRequestsFor(cycleState, view, pod, demand)
	if err != nil {
		// DynamicResources keeps a pod whose claims are missing from being
		// scheduled; without its demand there is nothing to pack for.
		return nil, fwk.NewStatus(fwk.Skip)
	}
	// devicePod: the pod takes devices, through a device plugin or DRA.
	devicePod := len(demand) > 0 || len(reqs) > 0
	wl, err := pl.workload.snapshot()
	if err != nil {
		return nil, fwk.AsStatus(fmt.Errorf("workload snapshot: %w", err))
	}
	// DeviceFit, in this cycle's PreFilter, refreshed the node table to
	// every node and counted the free devices per kind: use both, instead
	// of walking the cluster again (pkg/plugins/shared). Without DeviceFit
	// (a device-free pod it skips, or not in the profile), the shortlist's
	// own refresh of the table serves the same.
	fromFit := shared.Read(cycleState)
	if fromFit != nil && fromFit.Resources != pl.resourcesKey {
		fromFit = nil
	}
	cache := pl.cache
	var fromTable *snapshot.Cycle
	switch {
	case fromFit != nil:
		cache = fromFit.Cache
	default:
		if fromTable = pl.table.Current(cycleState); fromTable != nil {
			cache = pl.table.Cache()
		}
	}
	s := &preScoreState{demand: demand, devicePod: devicePod, workload: wl, maxValue: 1, cache: cache}
	s.milliCPU, s.memoryBytes = facts.MilliCPU, facts.MemoryBytes
	pl.scratchMu.Lock()
	defer pl.scratchMu.Unlock()
	// Scarcity weighs the free devices of the whole cluster, not of the
	// candidates: the percentageOfNodesToScore sample (and PreFilter's
	// list) would make it an estimate that changes with where the search
	// started. Refreshing all nodes first also interns every kind before
	// the table is sized.
	scarcity := wl != nil && pl.weights.scarcity > 0 && devicePod
	wholeCluster := scarcity && (fromFit != nil || fromTable != nil)
	var all []fwk.NodeInfo
	if scarcity && !wholeCluster {
		all = pl.allNodes(len(nodes))
		wholeCluster = all != nil
	}
	var table []devices.DeviceKind
	var entries []*devices.NodeDevices
	if known != nil && cache == pl.table.Cache() {
		table, entries = cache.Kinds(), known
	} else {
		table, entries = pl.refresh(cache, nodes, all != nil || fromFit != nil || fromTable != nil)
	}
	var kindMap []int
	if view != nil {
		table, kindMap = cycleKinds(cache, table, view)
	}
	s.kinds = make([]kindInfo, len(table))
	var withDevices bool
	for j, n := range nodes {
		e := entries[j]
		if e == nil {
			continue
		}
		// The entry's allocatable is the node info's (SetNode reads the
		// same node object's status; device resources are scalar), so only
		// the free count for scarcity needs the node info's request map:
		// when DeviceFit counted it over the cluster, no map is read here.
		var req map[v1.ResourceName]int64
		for i := range e.Devices {
			d := &e.Devices[i]
			a := d.Allocatable
			if a <= 0 {
				continue
			}
			withDevices = true
			if k := pl.candidateKind(s, d.Kind, d.Device); k != nil && !wholeCluster {
				if req == nil {
					req = n.GetRequested().GetScalarResources()
				}
				k.free += max(a-req[d.Resource], 0)
			}
		}
	}
	switch {
	case all != nil:
		s.addFree(all, pl.allScratch)
	case wholeCluster:
		var free []int64
		if fromFit != nil {
			free = fromFit.Free
		} else {
			free = fromTable.FreeByKind()
		}
		for k, n := range free {
			if k < len(s.kinds) {
				s.kinds[k].free += n
			}
		}
	}
	if view != nil && pl.prepareDRA(view, reqs, s, nodes, wholeCluster, kindMap) {
		withDevices = true
	}
	if !withDevices {
		// No candidate has devices: nothing to pack, nothing to strand.
		return nil, fwk.NewStatus(fwk.Skip)
	}
	if wl != nil {
		s.computeKinds(table, pl.weights.scarcity > 0 && devicePod)
		pl.finishDRA(ctx, s)
		s.coarse = s.coarseOK(pl.weights.fragmentation)
	}
	// Domains single pods keep whole (podDomains). Not in a pod-group
	// cycle: there the placement's PlacementScore chooses the domain, and a
	// pod's candidates all lie in the one domain the placement tries.
	if len(demand) > 0 && !cycleState.IsPodGroupSchedulingCycle() {
		if key, shapes, _ := pl.groups.current(); key != "" {
			all, err := pl.snapshotNodes(nodes)
			if err != nil {
				return nil, fwk.AsStatus(fmt.Errorf("listing nodes: %w", err))
			}
			s.domains = pl.podDomains.refresh(pl, key, shapes, all)
		}
	}
	return s, nil
}

// candidateKind notes that a candidate has devices of kind (with facts d):
// the largest product value so far, and the kind's value, matched against
// productValues once per kind (it depends on the kind alone). It returns
// the kind's info, nil for a device past the kind bound (NoKind).
func (pl *DevicePack) candidateKind(s *preScoreState, kind int, d devices.Device) *kindInfo {
	if kind < 0 || kind >= len(s.kinds) {
		s.maxValue = max(s.maxValue, pl.value(d))
		return nil
	}
	k := &s.kinds[kind]
	if !k.candidate {
		k.value, k.candidate = pl.value(d), true
		s.maxValue = max(s.maxValue, k.value)
	}
	return k
}

// allNodes returns the snapshot's nodes, refreshed into pl.allScratch,
// when they are more than the candidates; else nil.
func (pl *DevicePack) allNodes(candidates int) []fwk.NodeInfo {
	if pl.handle == nil {
		return nil
	}
	all, err := pl.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil || len(all) <= candidates {
		return nil
	}
	_, pl.allScratch = pl.cache.Refresh(snapshot.NodeObjects(all), true, pl.allScratch)
	return all
}

// addFree adds each kind's free devices over nodes (entries aligned).
func (s *preScoreState) addFree(nodes []fwk.NodeInfo, entries []*devices.NodeDevices) {
	for j, n := range nodes {
		e := entries[j]
		if e == nil || len(e.Devices) == 0 {
			continue
		}
		req := n.GetRequested().GetScalarResources()
		for i := range e.Devices {
			d := &e.Devices[i]
			if d.Kind >= 0 && d.Kind < len(s.kinds) && d.Allocatable > 0 {
				s.kinds[d.Kind].free += max(d.Allocatable-req[d.Resource], 0)
			}
		}
	}
}

// refresh brings cache up to the candidates and, for its own cache every
// fullRefreshEvery cycles unless fresh (all nodes were just refreshed), to
// the whole snapshot, so that deleted nodes are forgotten (PreScore alone
// sees only the feasible ones). DeviceFit's cache, refreshed to all nodes
// in its PreFilter this cycle, is only read: a plugin never writes
// another's state (past devices.MaxKinds a Refresh would even start its kind
// table over under DeviceFit's verdicts). A node it lacks is read directly,
// its devices without kind ids, as Score reads one. Its entries have a
// scratch slice of their own: entries of one cache must never be reused for
// the other (their kind ids differ).
func (pl *DevicePack) refresh(cache *devices.NodeCache, nodes []fwk.NodeInfo, fresh bool) ([]devices.DeviceKind, []*devices.NodeDevices) {
	if cache != pl.cache {
		entries := pl.fitScratch[:0]
		for _, n := range nodes {
			e := cache.Lookup(n.Node())
			if e == nil {
				e = devices.ReadNodeDevices(n.Node(), pl.resources)
			}
			entries = append(entries, e)
		}
		pl.fitScratch = entries
		return cache.Kinds(), entries
	}
	pl.cycles++
	if !fresh && pl.handle != nil && pl.cycles%fullRefreshEvery == 0 {
		if all, err := pl.handle.SnapshotSharedLister().NodeInfos().List(); err == nil {
			_, pl.allScratch = pl.cache.Refresh(snapshot.NodeObjects(all), true, pl.allScratch)
		}
	}
	kinds, entries := pl.cache.Refresh(snapshot.NodeObjects(nodes), false, pl.scratch)
	pl.scratch = entries
	return kinds, entries
}

// fullRefreshEvery: a deleted node's entry lives at most this many cycles.
const fullRefreshEvery = 1024

// computeKinds computes, once per kind with free devices among the
// candidates (a fleet has few kinds), which workload classes accept it and
// its scarcity pressure. Score then looks the kind up instead of matching
// every class selector on every node.
//
// Pressure is what fragmentation alone does not see: to FGD a free T4 is
// usable whoever takes it, so 1-GPU jobs without a selector happily fill the
// small T4 nodes and the jobs that accept only T4 find none left. For each
// class with a product selector, taking one device it accepts costs
// weight · (free devices) / (free devices it accepts): the expected devices
// of its demand left without room. The candidates stand in for the cluster:
// nodes that cannot take this pod rarely hold free devices anyway.
func (s *preScoreState) computeKinds(table []devices.DeviceKind, scarcity bool) {
	var total int64
	for k := range s.kinds {
		if s.kinds[k].free > 0 {
			total += s.kinds[k].free
			s.kinds[k].accept = s.workload.Acceptance(table[k].Resource, table[k].Device)
		}
	}
	if !scarcity {
		return
	}
	classes := s.workload.Classes()
	for i := range classes {
		if classes[i].Selector.IsEmpty() {
			continue
		}
		var supply int64
		for k := range s.kinds {
			if s.kinds[k].accept != nil && s.kinds[k].accept[i] {
				supply += s.kinds[k].free
			}
		}
		p := classes[i].Weight * float64(total) / float64(max(supply, 1))
		for k := range s.kinds {
			if s.kinds[k].accept != nil && s.kinds[k].accept[i] {
				s.kinds[k].pressure += p
			}
		}
	}
}

// value ranks a product: the first matching productValues entry, else its
// per-device memory (bigger devices are the ones to keep free).
func (pl *DevicePack) value(d devices.Device) int64 {
	for i := range pl.values {
		if pl.values[i].pattern.Matches(d.Product) {
			return pl.values[i].value
		}
	}
	return d.MemoryMiB
}
