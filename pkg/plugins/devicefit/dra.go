package devicefit

import (
	"context"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/dra"
)

// DRA-backed extended resources (KEP-5004, GA in 1.37). A DeviceClass
// with spec.extendedResourceName serves the resource from ResourceSlices
// on every node that does not advertise it as allocatable; there the
// scheduler makes the pod a claim carrying only the class's selectors, and
// the allocator gives it the first devices in the slices' order that the
// class selects. So the devicefit.io annotations can have their way only
// by choosing the node, and the rule is:
//
//	a node passes the selector only if every device the class would give
//	the pod there is acceptable: the devices first fit picks now, or, when
//	too few are free for the count (preemption may free some), every
//	device of the class on the node.
//
// A node with two L40S listed before two A100s fails devicefit.io/products
// A100 for a 2-GPU pod while both L40S are free, though it has A100s: the
// pod would get the L40S. Pods with their own ResourceClaims say what they
// want in CEL; DeviceFit leaves those to DynamicResources.

// draRequest is what PreFilter knows of a DRA-served request.
type draRequest struct {
	class *dra.Class
	// request is the one-request form Picks takes.
	request []dra.Request
}

// draNode is PreFilter's finding on one node for a DRA-served request.
type draNode struct {
	// total devices of the class there, free ones, and the selector's verdict.
	total, free int64
	verdict     devices.Mismatch
}

// draServed returns, per request, the class that serves it from slices,
// and the cycle's view; nil when no request is DRA-served.
func (pl *DeviceFit) draServed(ctx context.Context, cs fwk.CycleState, demand devices.Demand) ([]*draRequest, *dra.View, error) {
	var any bool
	for _, r := range demand {
		if pl.servedByDRA(r.Name) {
			any = true
			break
		}
	}
	if !any {
		return nil, nil, nil
	}
	view, err := pl.draView(ctx, cs)
	if err != nil || view == nil {
		return nil, nil, err
	}
	out := make([]*draRequest, len(demand))
	for i, r := range demand {
		if c := view.ClassFor(r.Name); c != nil {
			out[i] = &draRequest{class: c, request: []dra.Request{{Resource: r.Name, Class: c, Count: r.Count, Extended: true}}}
		}
	}
	return out, view, nil
}

// draView returns the cycle's DRA view, shared with DevicePack (nil
// without ResourceSlices).
func (pl *DeviceFit) draView(ctx context.Context, cs fwk.CycleState) (*dra.View, error) {
	if pl.handle == nil {
		return nil, nil
	}
	return dra.ForCycle(ctx, cs, pl.dra, pl.handle.SharedDRAManager())
}

// judgeDRA finds what node offers of DRA-served request i and what the
// selector says of it (the rule above). ok is false when the class has no
// device there: the node does not serve the request from slices.
func (s *preFilterState) judgeDRA(node *devices.DRANode, i int) (draNode, bool) {
	dr := s.dra[i]
	var n draNode
	n.total, n.free = s.view.Count(node, dr.class.Name)
	if n.total == 0 {
		return n, false
	}
	picks, ok := s.view.NodePicks(node, dr.request, all, s.picks)
	s.picks = picks[:0]
	if ok {
		for _, p := range picks {
			if n.verdict = s.selector.Match(&s.labels[i], p.Device.Facts); n.verdict != devices.Match {
				return n, true
			}
		}
		return n, true
	}
	// Too few free for the count: which devices it would get once some are
	// freed is not known, so all of the class's devices there must do.
	for _, e := range s.view.NodeEntries(node) {
		if e.Class != dr.class.Name || e.Total == 0 {
			continue
		}
		if n.verdict = s.selector.Match(&s.labels[i], e.Device); n.verdict != devices.Match {
			return n, true
		}
	}
	return n, true
}

func all(dra.Request) bool { return true }

// draVerdict is PreFilter's verdict on node for DRA-served request i, for
// Filter: Match when PreFilter found nothing against it.
func (s *preFilterState) draVerdict(node string, i int) devices.Mismatch {
	if v := s.draVerdicts[node]; v != nil {
		return v[i]
	}
	return devices.Match
}

// setDRAVerdict records a mismatch for Filter.
func (s *preFilterState) setDRAVerdict(node string, i int, m devices.Mismatch) {
	if m == devices.Match {
		return
	}
	if s.draVerdicts == nil {
		s.draVerdicts = map[string][]devices.Mismatch{}
	}
	v := s.draVerdicts[node]
	if v == nil {
		v = make([]devices.Mismatch, len(s.demand))
		s.draVerdicts[node] = v
	}
	v[i] = m
}

// draServedOn reports whether request i comes from slices on the node: a
// class serves it and the node does not advertise it as allocatable.
func (s *preFilterState) draServedOn(ni fwk.NodeInfo, i int) bool {
	return s.dra != nil && s.dra[i] != nil && ni.GetAllocatable().GetScalarResources()[s.demand[i].Name] <= 0
}

// hasDRADevices reports whether the view publishes devices for node.
func hasDRADevices(v *dra.View, node *v1.Node) bool {
	return v != nil && node != nil && v.Node(node.Name) != nil
}
