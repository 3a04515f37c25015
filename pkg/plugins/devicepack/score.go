package devicepack

import (
	"context"
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/plugins/snapshot"
)

// Score is the packing score of the pod on the node, raw (terms.go has
// its formula): the terms are summed per device resource here, per DRA
// entry in scoreDRA, and weighted in one place (weights.raw).
func (pl *DevicePack) Score(_ context.Context, cycleState fwk.CycleState, _ *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	c, err := cycleState.Read(preScoreStateKey)
	if err != nil {
		return 0, fwk.AsStatus(fmt.Errorf("reading %q from cycleState: %w", preScoreStateKey, err))
	}
	s := c.(*preScoreState)
	return pl.score(s, nodeInfo), nil
}

func (pl *DevicePack) score(s *preScoreState, nodeInfo fwk.NodeInfo) int64 {
	alloc, req := nodeInfo.GetAllocatable(), nodeInfo.GetRequested()
	e := pl.entryOf(s.cache, nodeInfo.Node())
	return pl.scoreOn(s, nodeInfo.Node().Name, e, nil, req.GetScalarResources(),
		alloc.GetMilliCPU()-req.GetMilliCPU(), alloc.GetMemory()-req.GetMemory())
}

// scoreRow is score on a node of the cycle's table (the shortlist's walk),
// whose row holds what score reads of the node info; its entry must be of
// s.cache.
func (pl *DevicePack) scoreRow(s *preScoreState, r *snapshot.Row) int64 {
	return pl.scoreOn(s, r.Info.Node().Name, r.Devices, r.Used, nil, r.MilliCPU, r.Memory)
}

// scoreShapes appends the raw scores of rows to raw, scoring each row
// shape once (snapshot.Row.Shape: all that scoreRow reads of a row but the
// name): tens of thousands of feasible nodes come in a few hundred shapes.
// A pod whose score has per-node terms (DRA devices, placement domains)
// is scored node by node.
func (pl *DevicePack) scoreShapes(s *preScoreState, rows []*snapshot.Row, shapes int, raw []int64) []int64 {
	if len(s.dra) > 0 || s.domains != nil {
		for _, r := range rows {
			raw = append(raw, pl.scoreRow(s, r))
		}
		return raw
	}
	if len(pl.shapeScores) < shapes {
		pl.shapeScores = make([]int64, shapes)
		pl.shapeStamps = make([]uint64, shapes)
	}
	pl.shapeStamp++
	for _, r := range rows {
		id := r.Shape
		if id == snapshot.NoShape || id >= shapes {
			raw = append(raw, pl.scoreRow(s, r))
			continue
		}
		if pl.shapeStamps[id] != pl.shapeStamp {
			pl.shapeScores[id], pl.shapeStamps[id] = pl.scoreRow(s, r), pl.shapeStamp
		}
		raw = append(raw, pl.shapeScores[id])
	}
	return raw
}

// scoreOn is score for node name with devices e, of which used (aligned
// with e.Devices), else requested by resource, are taken, and freeCPU and
// freeMem left.
func (pl *DevicePack) scoreOn(s *preScoreState, name string, e *devices.NodeDevices, usedOf []int64, requested map[v1.ResourceName]int64, freeCPU, freeMem int64) int64 {
	var t terms
	for i := range e.Devices {
		d := &e.Devices[i]
		// The entry's allocatable is the node info's: both are the node
		// object's status (SetNode), and a map look-up per node is what
		// scoring every node costs.
		a := d.Allocatable
		if a <= 0 {
			continue
		}
		t.hasDevices = true
		var k *kindInfo
		if d.Kind >= 0 && d.Kind < len(s.kinds) {
			k = &s.kinds[d.Kind]
		}
		var used int64
		if usedOf != nil {
			used = usedOf[i]
		} else {
			used = requested[d.Resource]
		}
		t.full += used * 1000 / a
		t.fullOf++
		take := s.demand.Count(d.Resource)
		accept := s.acceptance(k, d)
		if accept != nil {
			delta := s.workload.StrandedDeltaWith(accept, devices.NodeFree{
				Resource: d.Resource, Devices: a - used, MilliCPU: freeCPU, MemoryBytes: freeMem, Device: d.Device,
			}, take, s.milliCPU, s.memoryBytes)
			t.frag -= int64(math.Round(delta * 1000))
		}
		if take > 0 {
			t.fit += (used + take) * 1000 / a
			t.taken(k, pl.kindValue(k, d.Device), s.maxValue, take)
		}
	}
	if dn := s.dra[name]; dn != nil {
		pl.scoreDRA(s, dn, &t)
	}
	if s.domains != nil {
		t.frag -= int64(math.Round(s.domains.nodeLoss(name, s.demand) * 1000))
	}
	return pl.weights.raw(s, &t)
}

// acceptance is the workload's acceptance of the node's devices d: the
// kind's, computed in PreScore, or (devices past the kind bound) computed
// here, allocating.
func (s *preScoreState) acceptance(k *kindInfo, d *devices.NodeDevice) []bool {
	if s.workload == nil {
		return nil
	}
	if k != nil {
		return k.accept
	}
	if d.Allocatable <= 0 {
		return nil
	}
	return s.workload.Acceptance(d.Resource, d.Device)
}

// ScoreExtensions returns the plugin: it normalises its own scores.
func (pl *DevicePack) ScoreExtensions() fwk.ScoreExtensions { return pl }

// NormalizeScore maps raw scores linearly onto [0, MaxNodeScore]; of equal
// best raw scores, the lowest node name alone keeps MaxNodeScore
// (firstByName). After a shortlist, the range and the first name are the
// ones over every feasible node (PreFilter's), so that the listed nodes
// score what they would have scored among all.
func (pl *DevicePack) NormalizeScore(_ context.Context, cycleState fwk.CycleState, _ *v1.Pod, scores fwk.NodeScoreList) *fwk.Status {
	if s := readShortlist(cycleState); s != nil {
		for i := range scores {
			scores[i].Score = s.normalized(scores[i].Score, scores[i].Name)
		}
		return nil
	}
	rescale(scores, func(s *fwk.NodeScore) *int64 { return &s.Score })
	firstByName(scores)
	return nil
}

// rescale maps the raw scores score(&list[i]) linearly onto [MinScore,
// MaxScore] in place (normalized; MinNodeScore and MaxNodeScore are the
// same bounds); equal raw scores all get MaxScore.
//
// The distance from the best is rounded up, so that MaxScore is the best
// raw score's alone: DevicePack is a greedy packer, and its choice is the
// node it ranks first. Rounded to nearest, every node within half a step
// of the best tied with it, a step being a hundredth of the range between
// the best and the worst node scored; with every node scored a few
// stranded devices apart, that merged nodes 0.03 device apart and left the
// choice to the order of the nodes (the default Alibaba trace, round-up,
// seeds 42-46: 81 pods failed on average, against 25 with the best alone
// at the top; docs/placement.md).
func rescale[T any](list []T, score func(*T) *int64) {
	if len(list) == 0 {
		return
	}
	lo, hi := *score(&list[0]), *score(&list[0])
	for i := range list[1:] {
		v := *score(&list[i+1])
		lo, hi = min(lo, v), max(hi, v)
	}
	for i := range list {
		v := score(&list[i])
		*v = normalized(*v, lo, hi)
	}
}
