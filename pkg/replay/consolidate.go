package replay

import (
	"cmp"
	"math"
	"slices"
)

// Consolidation looks at the consolidateNodes nodes stranding the most
// devices, and prices the destination of the consolidateCandidates pods
// whose moves free the most there.
const (
	consolidateNodes      = 16
	consolidateCandidates = 16
)

// consolidation finds the pod whose move lowers the fleet's stranded
// devices (FGD's measure for the trace's workload) the most, by at least
// opts.Consolidate: what its node strands without it, less what the node
// that would strand least with it (the capacity model's fit) strands more;
// -1 when none does.
func (d *defragger) consolidation(s *simulation) int {
	m := s.metrics
	nodes := make([]int, 0, len(s.nodes))
	for x := range s.nodes {
		if m.stranded[x] >= d.opts.Consolidate && len(d.onNode[x]) > 0 {
			nodes = append(nodes, x)
		}
	}
	slices.SortStableFunc(nodes, func(a, b int) int { return cmp.Compare(m.stranded[b], m.stranded[a]) })
	nodes = nodes[:min(len(nodes), consolidateNodes)]
	type candidate struct {
		idx  int
		gain float64
	}
	var cands []candidate
	for _, x := range nodes {
		for _, idx := range d.onNode[x] {
			if gain := m.stranded[x] - d.strandedWith(s, x, idx, false); gain >= d.opts.Consolidate {
				cands = append(cands, candidate{idx, gain})
			}
		}
	}
	slices.SortStableFunc(cands, func(a, b candidate) int { return cmp.Compare(b.gain, a.gain) })
	saved := s.request
	defer func() { s.request = saved }()
	best, bestNet := -1, d.opts.Consolidate
	for _, c := range cands[:min(len(cands), consolidateCandidates)] {
		if c.gain < bestNet {
			break
		}
		p := d.placed[c.idx]
		s.request = requestOf(p.spec, s.shares != nil)
		cost := math.Inf(1)
		for y := range s.nodes {
			if y == p.node || !acceptsModel(p.spec, s.models[y]) || s.canFit(y) != nil {
				continue
			}
			cost = min(cost, d.strandedWith(s, y, c.idx, true)-m.stranded[y])
		}
		if net := c.gain - cost; net >= bestNet+shareEpsilon {
			best, bestNet = c.idx, net
		}
	}
	return best
}

// strandedWith is what node i would strand with arrival idx added (its
// devices by first fit, as the allocator gives them) or taken off.
func (d *defragger) strandedWith(s *simulation, i, idx int, add bool) float64 {
	p := d.placed[idx]
	f := s.free[i]
	sign := int64(1)
	if add {
		sign = -1
	}
	cpu, mem, devs := f.milliCPU+sign*p.spec.MilliCPU, f.memory+sign*(p.spec.MemoryMiB<<20), f.devices+sign*p.spec.GPUs
	m := s.metrics
	if s.shares == nil {
		return m.strandedFree(i, devs, cpu, mem)
	}
	d.used = append(d.used[:0], s.shares.used[i]...)
	takeShares(d.used, p.spec, p.gpus, add)
	if !m.deviceNode[i] || m.workload == nil {
		return 0
	}
	return m.strandedShares(i, d.used, cpu, mem)
}
