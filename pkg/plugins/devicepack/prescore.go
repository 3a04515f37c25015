package devicepack

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/dra"
	"github.com/devicefit/devicefit/pkg/plugins/shared"
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
	// coarse: Score ranks by FGD's band (coarse.go).
	coarse bool
}

// kindInfo is what scoring needs of one kind of device, computed once per
// pod instead of once per node.
type kindInfo struct {
	value int64
	// accept is nil when no node has a free device of the kind (free is 0):
	// then nothing of it can be stranded (F = 0 before and after).
	accept []bool
	// pressure: expected devices of product-constrained demand left without
	// room per device of this kind a placement takes.
	pressure float64
	// free is the kind's free devices over the cluster (the node table's
	// count); for DRA devices without scarcity, over the candidates
	// (prepareDRA).
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
	if sl := readShortlist(cycleState); sl != nil {
		// PreFilter prepared the state over every feasible node and named
		// the nodes that can win; the framework filtered only those.
		pl.checkShortlist(ctx, pod, sl, nodes)
		cycleState.Write(preScoreStateKey, sl.state)
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
// scored on; Skip when there is nothing to pack for. note, when not nil,
// notes the nodes' device kinds as the candidates' (noteCandidates) from
// what the shortlist's walk found of them.
func (pl *DevicePack) prepare(ctx context.Context, cycleState fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo, note func(*preScoreState) bool) (*preScoreState, *fwk.Status) {
	s, claims, status := pl.podState(ctx, cycleState, pod)
	if s == nil {
		return nil, status
	}
	pl.scratchMu.Lock()
	defer pl.scratchMu.Unlock()
	table, free, err := pl.freeFor(cycleState, pod, nodes)
	if err != nil {
		return nil, fwk.AsStatus(fmt.Errorf("listing nodes: %w", err))
	}
	s.cache = pl.table.Cache()
	if note == nil {
		entries := pl.entriesOf(nodes)
		note = func(s *preScoreState) bool { return pl.noteCandidates(s, entries) }
	}
	var kindMap []int
	if claims.view != nil {
		table, kindMap = cycleKinds(s.cache, table, claims.view)
	}
	s.kinds = make([]kindInfo, len(table))
	withDevices := note(s)
	// Scarcity weighs the free devices of the whole cluster, not of the
	// candidates: the percentageOfNodesToScore sample (and PreFilter's
	// list) would make it an estimate that changes with where the search
	// started. Without scarcity the counts only say which kinds have free
	// devices at all (computeKinds): a kind with none on a candidate
	// strands nothing there, whatever the rest of the cluster holds.
	for k, n := range free {
		if k < len(s.kinds) {
			s.kinds[k].free += n
		}
	}
	scarcity := s.workload != nil && pl.weights.scarcity > 0 && s.devicePod
	if claims.view != nil && pl.prepareDRA(claims.view, claims.reqs, s, nodes, scarcity, kindMap) {
		withDevices = true
	}
	if !withDevices {
		// No candidate has devices: nothing to pack, nothing to strand.
		return nil, fwk.NewStatus(fwk.Skip)
	}
	if s.workload != nil {
		s.computeKinds(table, scarcity)
		pl.finishDRA(ctx, s)
		s.coarse = s.coarseOK(pl.weights.fragmentation)
	}
	// Domains single pods keep whole (podDomains). Not in a pod-group
	// cycle: there the placement's PlacementScore chooses the domain, and a
	// pod's candidates all lie in the one domain the placement tries.
	if len(s.demand) > 0 && !cycleState.IsPodGroupSchedulingCycle() {
		if key, shapes, _ := pl.groups.current(); key != "" {
			all, err := pl.snapshotNodes(nodes)
			if err != nil {
				return nil, fwk.AsStatus(fmt.Errorf("listing nodes: %w", err))
			}
			s.domains = pl.podDomains.refresh(pl, key, shapes, all)
			// The exact score where domains are weighed: a node that
			// breaks a whole domain loses tens of devices, one that costs
			// a used domain a group a few less, and FGD's band is 0 for
			// both past a loss of about 4.6 devices; the first name would
			// then choose, and break whole domains (TestDomainLossesBeyondTheBand).
			// FGD knows no domains: its traces never take this branch.
			s.coarse = s.coarse && s.domains == nil
		}
	}
	return s, nil
}

// podClaims are the pod's DRA requests and the cycle's view of the DRA
// devices (nil without DRA).
type podClaims struct {
	view *dra.View
	reqs []dra.Request
}

// podState starts the pod's preScoreState from its facts, its DRA requests
// and the workload; nil and the status (Skip: nothing to pack for) when
// the pod cannot be scored.
func (pl *DevicePack) podState(ctx context.Context, cycleState fwk.CycleState, pod *v1.Pod) (*preScoreState, podClaims, *fwk.Status) {
	facts := shared.ReadPod(cycleState, pod, pl.resources, pl.resourcesKey)
	demand, err := facts.Demand, facts.Err
	if err != nil {
		// DeviceFit reports this; scoring a malformed pod helps no one.
		return nil, podClaims{}, fwk.NewStatus(fwk.Skip)
	}
	view, err := pl.draView(ctx, cycleState)
	if err != nil {
		return nil, podClaims{}, fwk.AsStatus(fmt.Errorf("DRA devices: %w", err))
	}
	reqs, err := dra.PodRequestsFor(cycleState, view, pod, demand)
	if err != nil {
		// DynamicResources keeps a pod whose claims are missing from being
		// scheduled; without its demand there is nothing to pack for.
		return nil, podClaims{}, fwk.NewStatus(fwk.Skip)
	}
	wl, err := pl.workload.snapshot()
	if err != nil {
		return nil, podClaims{}, fwk.AsStatus(fmt.Errorf("workload snapshot: %w", err))
	}
	// devicePod: the pod takes devices, through a device plugin or DRA.
	s := &preScoreState{demand: demand, devicePod: len(demand) > 0 || len(reqs) > 0, workload: wl, maxValue: 1}
	s.milliCPU, s.memoryBytes = facts.MilliCPU, facts.MemoryBytes
	return s, podClaims{view: view, reqs: reqs}, nil
}

// freeFor is the node table's kind table and free devices per kind over
// the cluster, for the pod (pkg/plugins/snapshot): those of the Cycle this
// cycle's PreFilter refreshed (DeviceFit's, or the shortlist's); in a
// pod-group cycle, those the pod's first refresh counted; else those of a
// refresh now, to every node of the snapshot.
func (pl *DevicePack) freeFor(cycleState fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) ([]devices.DeviceKind, []int64, error) {
	if c := pl.table.Current(cycleState); c != nil {
		return c.Kinds, c.FreeByKind(), nil
	}
	if kinds, free, ok := pl.table.Pinned(cycleState, pod); ok {
		return kinds, free, nil
	}
	all, err := pl.snapshotNodes(nodes)
	if err != nil {
		return nil, nil, err
	}
	c := pl.table.RefreshFor(cycleState, pod, all)
	return c.Kinds, c.FreeByKind(), nil
}

// entriesOf are the nodes' entries in the node table's cache, which a
// refresh in this cycle (or, in a pod-group cycle, the pod's first) brought
// up to every node.
func (pl *DevicePack) entriesOf(nodes []fwk.NodeInfo) []*devices.NodeDevices {
	cache := pl.table.Cache()
	entries := pl.scratch[:0]
	for _, n := range nodes {
		entries = append(entries, pl.entryOf(cache, n.Node()))
	}
	pl.scratch = entries
	return entries
}

// entryOf is node's entry in cache; a node the cache lacks (one no refresh
// saw) is read directly, allocating, its devices without kind ids.
func (pl *DevicePack) entryOf(cache *devices.NodeCache, node *v1.Node) *devices.NodeDevices {
	if e := cache.Lookup(node); e != nil {
		return e
	}
	return devices.ReadNodeDevices(node, pl.resources)
}

// noteCandidates notes the kinds of the candidates' devices (entries, nil
// for a node info without a node) and their product values; false when
// none of them has devices.
func (pl *DevicePack) noteCandidates(s *preScoreState, entries []*devices.NodeDevices) bool {
	var withDevices bool
	for _, e := range entries {
		if e == nil {
			continue
		}
		for i := range e.Devices {
			d := &e.Devices[i]
			if d.Allocatable > 0 {
				withDevices = true
				pl.candidateKind(s, d.Kind, d.Device)
			}
		}
	}
	return withDevices
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
