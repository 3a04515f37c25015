package devicepack

import (
	"context"
	"math"
	"slices"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/dra"
)

// DRA devices are packed as device-plugin devices are: a node's entries
// (one per DeviceClass and kind of device, pkg/dra) stand for its device
// resources, their free count is what first fit could still give, and the
// pod's picks are the devices the upstream allocator would give it there.
// What a placement leaves is computed with those picks held, so a MIG
// slice that makes its GPU's whole-device offer zero counts as the
// stranding it is.

// draNode is what PreScore prepared for one candidate with DRA devices.
type draNode struct {
	entries []draEntry
	// capacity before and after the placement (dra.View.Capacity), the
	// node's free CPU and memory, and the fragmentation term, computed once
	// the kinds' acceptance is known (finishDRA).
	capBefore, capAfter float64
	freeCPU, freeMem    int64
	frag                int64
}

type draEntry struct {
	resource v1.ResourceName
	device   devices.Device
	// kind indexes preScoreState.kinds (DevicePack's kind table).
	kind int
	// total devices, free before and after the placement, and how many of
	// the pod's picks are of this entry.
	total, before, after, take int64
	size                       float64
	// partBefore and partAfter are the free shares of its partly used
	// shared devices (dra.Entry.Partial) before and after; sample is one
	// of its devices (dra.Entry.Sample).
	partBefore, partAfter []float64
	sample                *devices.DRADevice
	// usedAfter is the part of the entry's devices in use after the
	// placement, in thousandths (best fit).
	usedAfter int64
}

// draView returns the cycle's DRA view (nil without ResourceSlices).
func (pl *DevicePack) draView(ctx context.Context, cs fwk.CycleState) (*dra.View, error) {
	if pl.handle == nil {
		return nil, nil
	}
	return dra.ForCycle(ctx, cs, pl.dra, pl.handle.SharedDRAManager())
}

// claimShares is what a pod's claim asks of each shared device it gets
// (capacity.requests, KEP-5075), and the class Resource of that request.
type claimShares struct {
	resource v1.ResourceName
	capacity devices.CapacityRequest
}

// draDemand adds the device requests of the pod's unallocated claims (reqs,
// the pod's DRA requests) to demand, by class Resource, for the observed
// workload: claim pods are jobs of the workload as much as pods asking for
// nvidia.com/gpu. DRA-served extended resources are in demand already.
// shares is the first request that asks for capacity, if any: a pod
// asking for half a GPU is a job of its own class.
func draDemand(reqs []dra.Request, demand devices.Demand) (_ devices.Demand, shares *claimShares) {
	out := append(devices.Demand(nil), demand...)
	for _, r := range reqs {
		if r.Extended {
			continue
		}
		if shares == nil && !r.Capacity.Empty() {
			shares = &claimShares{resource: r.Resource, capacity: r.Capacity}
		}
		merged := false
		for i := range out {
			if out[i].Name == r.Resource {
				out[i].Count += r.Count
				merged = true
			}
		}
		if !merged {
			out = append(out, devices.Request{Name: r.Resource, Count: r.Count})
		}
	}
	return out, shares
}

// prepareDRA fills s.dra for the candidates with DRA devices and adds their
// kinds to s.kinds (sized for the cycle's kind table, cycleKinds). all, when
// not nil, is the whole cluster (scarcity on): free devices are counted
// over all DRA nodes then, else over the candidates. It reports whether a
// candidate has DRA devices.
func (pl *DevicePack) prepareDRA(v *dra.View, reqs []dra.Request, s *preScoreState, nodes []fwk.NodeInfo, all bool, kindMap []int) bool {
	var withDevices bool
	var picks []dra.Pick
	var after []dra.Entry
	s.dra = make(map[string]*draNode, len(nodes))
	for _, ni := range nodes {
		node := ni.Node()
		if node == nil {
			continue
		}
		n := v.Node(node.Name)
		before := v.NodeEntries(n)
		if len(before) == 0 {
			continue
		}
		alloc := ni.GetAllocatable().GetScalarResources()
		served := func(r dra.Request) bool { return !r.Extended || alloc[r.Resource] <= 0 }
		var ok bool
		picks, ok = v.NodePicks(n, reqs, served, picks)
		after = after[:0]
		dn := &draNode{entries: make([]draEntry, len(before)), capBefore: v.NodeCapacity(n)}
		dn.capAfter = dn.capBefore
		if ok && len(picks) > 0 {
			after, dn.capAfter = v.NodeEntriesAfter(n, picks, reqs, after)
		}
		a, r := ni.GetAllocatable(), ni.GetRequested()
		dn.freeCPU, dn.freeMem = a.GetMilliCPU()-r.GetMilliCPU(), a.GetMemory()-r.GetMemory()
		for i, e := range before {
			de := draEntry{resource: e.Resource, device: e.Device, kind: mapKind(kindMap, e.Kind), total: e.Total, before: e.Free, after: e.Free, size: e.Size,
				partBefore: e.Partial, partAfter: e.Partial, sample: e.Sample}
			if len(after) == len(before) {
				de.after, de.partAfter = after[i].Free, after[i].Partial
				for _, p := range picks {
					if reqs[p.Request].Class.Name == e.Class && p.Device.Facts == e.Device {
						de.take++
					}
				}
			}
			if e.Total > 0 {
				free := float64(de.after)
				for _, p := range de.partAfter {
					free += p
				}
				de.usedAfter = int64(math.Round((float64(e.Total) - free) * 1000 / float64(e.Total)))
			}
			dn.entries[i] = de
			if e.Total == 0 {
				continue
			}
			withDevices = true
			if k := pl.candidateKind(s, de.kind, e.Device); k != nil && !all {
				k.free += e.Free
			}
		}
		s.dra[node.Name] = dn
	}
	if all {
		for kind, free := range v.FreeByKind(nil) {
			if k := mapKind(kindMap, kind); k >= 0 && k < len(s.kinds) {
				s.kinds[k].free += free
			}
		}
	}
	return withDevices
}

// cycleKinds gives the view's kinds ids in this cycle's kind table: the
// node cache's id for a kind that node labels also describe (so both count
// toward its scarcity), a new id past the cache's table for the rest. The
// cache is the node table's (pkg/plugins/snapshot), which both plugins'
// verdicts and rows index, so it is only read: the extended table is this
// cycle's copy, never the cache's (Clip makes append copy instead of
// writing into the spare capacity of the cache's array).
func cycleKinds(cache *devices.NodeCache, table []devices.DeviceKind, v *dra.View) ([]devices.DeviceKind, []int) {
	vk := v.Kinds()
	out := make([]int, len(vk))
	table = slices.Clip(table)
	for i, k := range vk {
		if id, ok := cache.KindID(k); ok && id < len(table) {
			out[i] = id
			continue
		}
		out[i] = len(table)
		table = append(table, k)
	}
	return table, out
}

func mapKind(kindMap []int, k int) int {
	if k < 0 || k >= len(kindMap) {
		return devices.NoKind
	}
	return kindMap[k]
}

// finishDRA computes each DRA candidate's fragmentation term, once the
// kinds' acceptance is known (computeKinds): the growth of StrandedDRA
// from before the placement to after it. Here, not in Score, because it
// needs a slice per node. With every node scored this is most of
// PreScore's time, so the nodes are split over the framework's
// parallelizer, as upstream plugins do their per-node PreScore work; each
// chunk has its own slices and writes only its nodes' frag.
func (pl *DevicePack) finishDRA(ctx context.Context, s *preScoreState) {
	if s.workload == nil || len(s.dra) == 0 {
		return
	}
	nodes := make([]*draNode, 0, len(s.dra))
	for _, dn := range s.dra {
		nodes = append(nodes, dn)
		// need fills the kinds' cache on first use: fill it here, so the
		// parallel part below only reads it.
		for i := range dn.entries {
			s.need(&dn.entries[i])
		}
	}
	chunks := (len(nodes) + finishChunk - 1) / finishChunk
	work := func(c int) {
		var before, after []devices.DRAFree
		for _, dn := range nodes[c*finishChunk : min((c+1)*finishChunk, len(nodes))] {
			before, after = s.finishNode(dn, before[:0], after[:0])
		}
	}
	if pl.handle == nil || chunks == 1 {
		for c := range chunks {
			work(c)
		}
		return
	}
	pl.handle.Parallelizer().Until(ctx, chunks, work, Name)
}

// finishChunk: nodes per piece of finishDRA's parallel work.
const finishChunk = 64

// finishNode sets dn.frag; before and after are scratch, returned for reuse.
func (s *preScoreState) finishNode(dn *draNode, before, after []devices.DRAFree) ([]devices.DRAFree, []devices.DRAFree) {
	for i := range dn.entries {
		e := &dn.entries[i]
		var accept []bool
		if e.kind >= 0 && e.kind < len(s.kinds) {
			accept = s.kinds[e.kind].accept
		}
		if accept == nil && (e.before > 0 || e.after > 0 || len(e.partBefore) > 0 || len(e.partAfter) > 0) {
			accept = s.workload.Acceptance(e.resource, e.device)
		}
		need := s.need(e)
		before = append(before, devices.DRAFree{Resource: e.resource, Free: e.before, Size: e.size, Accept: accept, Partial: e.partBefore, Need: need})
		after = append(after, devices.DRAFree{Resource: e.resource, Free: e.after, Size: e.size, Accept: accept, Partial: e.partAfter, Need: need})
	}
	delta := s.workload.StrandedDRA(after, dn.capAfter, dn.freeCPU-s.milliCPU, dn.freeMem-s.memoryBytes) -
		s.workload.StrandedDRA(before, dn.capBefore, dn.freeCPU, dn.freeMem)
	dn.frag = -int64(math.Round(delta * 1000))
	return before, after
}

// need returns, per workload class, the share of one of e's devices a job
// takes (devices.DRAFree.Need), or nil when every class takes whole
// devices there: the devices are not shared and no class asks for
// capacity. Computed once per kind (kinds of one product share their
// capacities) and kept in the kind's info.
func (s *preScoreState) need(e *draEntry) []float64 {
	if e.sample == nil || (!e.sample.Shared() && !s.workloadShares()) {
		return nil
	}
	var k *kindInfo
	if e.kind >= 0 && e.kind < len(s.kinds) {
		k = &s.kinds[e.kind]
		if k.need != nil {
			return k.need
		}
	}
	classes := s.workload.Classes()
	need := make([]float64, len(classes))
	for i := range classes {
		if share, ok := e.sample.Share(classes[i].Capacity); ok {
			need[i] = share
		}
	}
	if k != nil {
		k.need = need
	}
	return need
}

// workloadShares reports whether a class of the workload asks for capacity.
func (s *preScoreState) workloadShares() bool {
	for _, c := range s.workload.Classes() {
		if !c.Capacity.Empty() {
			return true
		}
	}
	return false
}

// scoreDRA adds the node's DRA entries to Score's terms (terms.go).
func (pl *DevicePack) scoreDRA(s *preScoreState, dn *draNode, t *terms) {
	t.frag += dn.frag
	for i := range dn.entries {
		e := &dn.entries[i]
		if e.total <= 0 {
			continue
		}
		t.hasDevices = true
		t.full += e.usedAfter
		t.fullOf++
		if e.take == 0 {
			continue
		}
		var k *kindInfo
		if e.kind >= 0 && e.kind < len(s.kinds) {
			k = &s.kinds[e.kind]
		}
		t.fit += e.usedAfter
		t.taken(k, pl.kindValue(k, e.device), s.maxValue, e.take)
	}
}
