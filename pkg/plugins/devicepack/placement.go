package devicepack

import (
	"context"
	"fmt"
	"math"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/devices"
)

var (
	_ fwk.PlacementScorePlugin     = &DevicePack{}
	_ fwk.PlacementScoreExtensions = &DevicePack{}
)

// podsPlaced is what one more pod placed adds to a placement's raw score:
// more than the other terms can differ by. With weights of at most 100
// (validation), fragmentation and best fit stay below 2000·100 per device
// resource and product value below 1000·100 per device taken: a group of
// 10^4 devices stays below 10^9 ≈ 2^30.
const podsPlaced = 1 << 40

// domainsStateKey holds, in the PodGroupCycleState, the cluster's domains as
// the pod-group cycle found them (domainsState).
const domainsStateKey fwk.StateKey = "PlacementScore" + Name

// domainsState is what every placement of one pod-group cycle is scored
// against: the snapshot's nodes split by the group's topology key, with
// their free devices, brought up to the cycle once (by the first
// ScorePlacement of the cycle: the framework calls ScorePlacement for all
// placements in parallel; podDomains keeps it from cycle to cycle). When
// ScorePlacement runs, the scheduler has forgotten every pod it assumed
// while trying the placements (schedule_one_podgroup.go,
// podGroupSchedulingPlacementAlgorithm), so the snapshot is the same for all.
type domainsState struct {
	// key is the topology key ("" when the group has none: no domains).
	key string
	// shapes are the arriving groups (groupShapes), this one included.
	shapes []devices.GroupShape
	// resources are the device resources the shapes ask for.
	resources []v1.ResourceName
	// domains[r] are the domains of resources[r], in names order.
	domains [][]devices.Domain
	names   []string
	// index: domain name → position in names; node: node name → its
	// domain's position and its own within the domain.
	index map[string]int
	node  map[string]nodeAt
	// value: per node name, the product value of its devices of each of
	// resources (0: none); maxValue per resource over the cluster.
	value    map[string][]int64
	maxValue []int64
}

type nodeAt struct{ domain, pos int }

// Clone implements fwk.StateData: the state is not modified while a cycle
// reads it (podDomains updates it before the next cycle's readers).
func (s *domainsState) Clone() fwk.StateData { return s }

// ScorePlacement scores a placement of a pod group (a topology domain and
// the nodes proposed for the group's pods in it), in thousandths, with
// Score's terms and weights (terms.go; no scarcity), computed over the
// placement:
//
//   - fragmentation: -(whole + stranded)·1000, devices.GroupLoss over the
//     arriving group shapes: the share of the whole domains they could use
//     that the placement breaks, and the growth of the free devices in the
//     domain that they could no longer use, as a share of all free devices;
//   - best fit: the domain's devices in use after the placement, per mille;
//   - product value: valueTerm per device taken.
//
// A group without a topology key, or a placement spanning several domains,
// scores 0 on fragmentation and best fit (no domain to keep whole).
//
// Above all terms, a placement that places more of the group's pods ranks
// higher (podsPlaced per pod): a gang of minCount 4 with 6 pods would
// otherwise look less fragmenting with 4 of them placed than with 6, and
// DevicePack's weight would outvote PodGroupPodsCount, which counts them.
func (pl *DevicePack) ScorePlacement(ctx context.Context, state fwk.PlacementCycleState, podGroup fwk.PodGroupInfo, placement *fwk.PodGroupAssignments) (int64, *fwk.Status) {
	if placement == nil || placement.Placement == nil {
		return 0, nil
	}
	ds, err := pl.domainsFor(state.GetPodGroupSchedulingCycle(), podGroup, placement)
	if err != nil {
		return 0, fwk.AsStatus(err)
	}
	take := placementTake(placement, pl.resources)
	t := ds.score(placement, take)
	score := pl.weights.weighted(&t) + int64(len(placement.ProposedAssignments))*podsPlaced
	if logger := klog.FromContext(ctx).V(5); logger.Enabled() {
		logger.Info("Placement terms", "podGroup", klog.KRef(podGroup.GetNamespace(), podGroup.GetName()),
			"placement", placement.Name, "fragmentation", t.frag, "bestFit", t.fit, "productValue", t.value, "score", score)
	}
	return score, nil
}

// PlacementScoreExtensions returns the plugin: it normalises its own scores.
func (pl *DevicePack) PlacementScoreExtensions() fwk.PlacementScoreExtensions { return pl }

// NormalizePlacementScore maps raw scores linearly onto [MinScore, MaxScore],
// as NormalizeScore does for nodes; equal raw scores all get MaxScore.
func (pl *DevicePack) NormalizePlacementScore(_ context.Context, _ fwk.PodGroupCycleState, _ fwk.PodGroupInfo, scores []fwk.PlacementScore) *fwk.Status {
	rescale(scores, func(s *fwk.PlacementScore) *int64 { return &s.Score })
	return nil
}

// placementTake is, per node name, the devices of each resource the
// placement's pods take there.
func placementTake(placement *fwk.PodGroupAssignments, set devices.ResourceSet) map[string]devices.Demand {
	take := map[string]devices.Demand{}
	for _, a := range placement.ProposedAssignments {
		demand, err := devices.PodDemand(a.GetPod(), set)
		if err != nil || len(demand) == 0 {
			continue
		}
		node := a.GetNodeName()
		take[node] = addDemand(take[node], demand)
	}
	return take
}

func addDemand(to, d devices.Demand) devices.Demand {
	for _, r := range d {
		i := slices.IndexFunc(to, func(x devices.Request) bool { return x.Name == r.Name })
		if i < 0 {
			to = append(to, r)
			continue
		}
		to[i].Count += r.Count
	}
	return to
}

// groupShape is the shape of the group being placed: its pods, and the
// largest device request among them (the one that needs whole nodes).
func groupShape(podGroup fwk.PodGroupInfo, set devices.ResourceSet) devices.GroupShape {
	var s devices.GroupShape
	for _, pod := range podGroup.GetUnscheduledPods() {
		demand, err := devices.PodDemand(pod, set)
		if err != nil {
			continue
		}
		s.Pods++
		for _, r := range demand {
			if r.Count > s.PerPod {
				s.Resource, s.PerPod = r.Name, r.Count
			}
		}
	}
	if s.PerPod == 0 {
		s.Pods = 0
	}
	return s
}

// topologyKey is the PodGroup's schedulingConstraints.topology[0].key, the
// one key upstream allows (v1beta1 PodGroupSchedulingConstraints).
func topologyKey(podGroup fwk.PodGroupInfo) string {
	pg := podGroup.GetPodGroup()
	if pg == nil || pg.Spec.SchedulingConstraints == nil || len(pg.Spec.SchedulingConstraints.Topology) == 0 {
		return ""
	}
	return pg.Spec.SchedulingConstraints.Topology[0].Key
}

// domainsFor returns the cycle's domainsState, bringing it up to the cycle
// on the first call: the placements are scored in parallel, so
// pl.placementMu makes one of them do it and the others wait.
func (pl *DevicePack) domainsFor(cycle fwk.PodGroupCycleState, podGroup fwk.PodGroupInfo, placement *fwk.PodGroupAssignments) (*domainsState, error) {
	pl.placementMu.Lock()
	defer pl.placementMu.Unlock()
	if cycle != nil {
		if c, err := cycle.Read(domainsStateKey); err == nil {
			if ds, ok := c.(*domainsState); ok {
				return ds, nil
			}
		}
	}
	nodes, err := pl.snapshotNodes(placement.Nodes)
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	key := topologyKey(podGroup)
	shapes := pl.groups.observe(podGroup.GetKey(), key, groupShape(podGroup, pl.resources))
	ds := pl.groupDomains.refresh(pl, key, shapes, nodes)
	if cycle != nil {
		cycle.Write(domainsStateKey, ds)
	}
	return ds, nil
}

// snapshotNodes are all the snapshot's nodes (a placement holds one domain,
// a pod's candidates a few: the other domains are what they keep whole),
// or fallback when there is no handle (unit tests build the plugin without
// one).
func (pl *DevicePack) snapshotNodes(fallback []fwk.NodeInfo) ([]fwk.NodeInfo, error) {
	if pl.listNodes != nil {
		return pl.listNodes()
	}
	if pl.handle != nil && pl.handle.SnapshotSharedLister() != nil {
		return pl.handle.SnapshotSharedLister().NodeInfos().List()
	}
	return fallback, nil
}

// buildDomains splits nodes by key and counts, per domain and node, the free
// devices of each resource the shapes ask for; withValues: and the product
// value of each node's devices (placements; single pods have theirs).
func (pl *DevicePack) buildDomains(key string, shapes []devices.GroupShape, nodes []fwk.NodeInfo, withValues bool) *domainsState {
	ds := &domainsState{key: key, shapes: shapes, index: map[string]int{}}
	for _, s := range shapes {
		if !slices.Contains(ds.resources, s.Resource) {
			ds.resources = append(ds.resources, s.Resource)
		}
	}
	ds.maxValue = make([]int64, len(ds.resources))
	if key == "" || len(ds.resources) == 0 {
		return ds
	}
	ds.node = make(map[string]nodeAt, len(nodes))
	ds.nameDomains(nodes)
	ds.domains = make([][]devices.Domain, len(ds.resources))
	for r := range ds.resources {
		ds.domains[r] = make([]devices.Domain, len(ds.names))
	}
	// Product values come from the node cache (a node's labels are read
	// when its object changes), one value per kind of device.
	var entries []*devices.NodeDevices
	var backing []int64
	kindValue := map[int]int64{}
	if withValues {
		pl.scratchMu.Lock()
		defer pl.scratchMu.Unlock()
		entries = pl.table.Refresh(nil, nodes).Entries
		ds.value = make(map[string][]int64, len(nodes))
		backing = make([]int64, len(nodes)*len(ds.resources))
	}
	for j, ni := range nodes {
		n := ni.Node()
		if n == nil {
			continue
		}
		v, ok := n.Labels[key]
		if !ok {
			continue
		}
		d := ds.index[v]
		alloc, req := ni.GetAllocatable().GetScalarResources(), ni.GetRequested().GetScalarResources()
		var values []int64
		if withValues {
			values = backing[j*len(ds.resources) : (j+1)*len(ds.resources)]
			ds.value[n.Name] = values
		}
		for r, name := range ds.resources {
			dom := &ds.domains[r][d]
			a := alloc[name]
			if r == 0 {
				ds.node[n.Name] = nodeAt{domain: d, pos: len(dom.Free)}
			}
			dom.Free = append(dom.Free, max(a-req[name], 0))
			dom.Total += a
			if a > 0 && withValues && entries[j] != nil {
				if dev := entries[j].Find(name); dev != nil {
					val, ok := kindValue[dev.Kind]
					if !ok || dev.Kind < 0 {
						val = pl.value(dev.Device)
						kindValue[dev.Kind] = val
					}
					values[r] = val
					ds.maxValue[r] = max(ds.maxValue[r], val)
				}
			}
		}
	}
	return ds
}

// nameDomains numbers the domains of nodes, the values of the key, in
// name order.
func (ds *domainsState) nameDomains(nodes []fwk.NodeInfo) {
	for _, ni := range nodes {
		if n := ni.Node(); n != nil {
			if v, ok := n.Labels[ds.key]; ok {
				if _, seen := ds.index[v]; !seen {
					ds.index[v] = -1
					ds.names = append(ds.names, v)
				}
			}
		}
	}
	slices.Sort(ds.names)
	for i, name := range ds.names {
		ds.index[name] = i
	}
}

// nodeLoss is, in expected devices, what taking demand on node costs the
// arriving groups in the node's domain (devices.GroupLossDevices): the
// devices of the domain when it was whole and is no longer, times the share
// of the shapes that lose it, plus the growth of the devices they cannot
// use there. 0 for a node in no domain.
func (ds *domainsState) nodeLoss(node string, demand devices.Demand) float64 {
	at, ok := ds.node[node]
	if !ok {
		return 0
	}
	var loss float64
	for r, name := range ds.resources {
		c := demand.Count(name)
		before := ds.domains[r][at.domain]
		if c <= 0 || before.Total == 0 {
			continue
		}
		after := devices.Domain{Free: slices.Clone(before.Free), Total: before.Total}
		after.Free[at.pos] = max(after.Free[at.pos]-c, 0)
		whole, stranded := devices.GroupLossDevices(ds.shapes, name, ds.domains[r], at.domain, after)
		loss += whole*float64(before.Total) + stranded
	}
	return loss
}

// score computes the placement's terms (see ScorePlacement).
func (ds *domainsState) score(placement *fwk.PodGroupAssignments, take map[string]devices.Demand) terms {
	var t terms
	for r, name := range ds.resources {
		for node, demand := range take {
			if c := demand.Count(name); c > 0 {
				if v, max := ds.value[node], ds.maxValue[r]; v != nil && max > 0 {
					t.value += c * valueTerm(v[r], max)
				}
			}
		}
	}
	d, ok := ds.domainOf(placement)
	if !ok {
		return t
	}
	for r, name := range ds.resources {
		before := ds.domains[r][d]
		after := devices.Domain{Free: slices.Clone(before.Free), Total: before.Total}
		var used bool
		for node, demand := range take {
			at, ok := ds.node[node]
			if c := demand.Count(name); ok && at.domain == d && c > 0 {
				after.Free[at.pos] = max(after.Free[at.pos]-c, 0)
				used = true
			}
		}
		if !used || before.Total == 0 {
			continue
		}
		whole, stranded := devices.GroupLoss(ds.shapes, name, ds.domains[r], d, after)
		t.frag -= int64(math.Round((whole + stranded) * 1000))
		t.fit += (after.Total - after.FreeDevices()) * 1000 / after.Total
	}
	return t
}

// domainOf is the position of the placement's domain: the key's value
// shared by all its nodes; false when they do not share one.
func (ds *domainsState) domainOf(placement *fwk.PodGroupAssignments) (int, bool) {
	if ds.key == "" || len(ds.names) == 0 {
		return 0, false
	}
	d := -1
	for _, ni := range placement.Nodes {
		n := ni.Node()
		if n == nil {
			continue
		}
		at, ok := ds.node[n.Name]
		if !ok || (d >= 0 && at.domain != d) {
			return 0, false
		}
		d = at.domain
	}
	return d, d >= 0
}
