package dra

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/resourceclaim"

	"github.com/devicefit/devicefit/pkg/devices"
)

// Request is one device request a pod makes of DRA: an extended resource a
// DeviceClass serves (on nodes that do not advertise it as allocatable),
// or a request of one of its unallocated ResourceClaims.
type Request struct {
	// Resource is the class's Resource (the extended resource name, or the
	// class name): what the workload and the metrics call the devices.
	Resource v1.ResourceName
	Class    *Class
	Count    int64
	// Extended: from the pod's extended resources (KEP-5004). The
	// scheduler's claim for them carries only the class's selectors, so the
	// pod's devicefit.io annotations are the only say the pod has in which
	// devices it gets; a claim's own requests speak in CEL instead.
	Extended bool
	// Capacity is a claim request's capacity.requests (KEP-5075): what it
	// consumes of each shared device it gets.
	Capacity devices.CapacityRequest
	// selectors are a claim request's own CEL selectors.
	selectors []resourceapi.DeviceSelector
}

// PodRequests returns what the pod asks of DRA: its extended resources
// that a DeviceClass serves (demand is the pod's device demand as
// devices.PodDemand computed it) and the requests of its claims that are
// not allocated yet (an allocated claim holds its devices already; a
// shared claim is allocated once for all its pods).
//
// A claim that does not exist yet is an error: DynamicResources keeps such
// a pod out of scheduling (PreEnqueue) until it does. Requests with
// allocationMode All take every device their selectors find on the node,
// so they leave nothing to pack and are left out; of a request with
// firstAvailable alternatives, the first is counted (the allocator's
// preference).
func (v *View) PodRequests(pod *v1.Pod, demand devices.Demand) ([]Request, error) {
	if v == nil {
		return nil, nil
	}
	var out []Request
	for _, r := range demand {
		if c := v.ClassFor(r.Name); c != nil {
			out = append(out, Request{Resource: r.Name, Class: c, Count: r.Count, Extended: true})
		}
	}
	for i := range pod.Spec.ResourceClaims {
		pc := &pod.Spec.ResourceClaims[i]
		name, _, err := resourceclaim.Name(pod, pc)
		if err != nil {
			return nil, err
		}
		if name == nil {
			// A template the pod does not need (resourceclaim.Name's contract).
			continue
		}
		claim, err := v.claims.Get(pod.Namespace, *name)
		if err != nil {
			return nil, fmt.Errorf("pod claim %s: ResourceClaim %s: %w", pc.Name, *name, err)
		}
		if claim.Status.Allocation != nil {
			continue
		}
		for _, dr := range claim.Spec.Devices.Requests {
			r := requestOf(dr)
			if r == nil || r.AllocationMode == resourceapi.DeviceAllocationModeAll {
				continue
			}
			c := v.byName[r.DeviceClassName]
			if c == nil {
				return nil, fmt.Errorf("ResourceClaim %s request %s: DeviceClass %q not found", claim.Name, dr.Name, r.DeviceClassName)
			}
			count := r.Count
			if count <= 0 {
				count = 1 // the API default for ExactCount
			}
			out = append(out, Request{Resource: c.Resource, Class: c, Count: count, Capacity: devices.NewCapacityRequest(r.Capacity), selectors: r.Selectors})
		}
	}
	return out, nil
}

// exactRequest is what the two request forms share.
type exactRequest struct {
	DeviceClassName string
	Selectors       []resourceapi.DeviceSelector
	AllocationMode  resourceapi.DeviceAllocationMode
	Count           int64
	Capacity        *resourceapi.CapacityRequirements
}

func requestOf(dr resourceapi.DeviceRequest) *exactRequest {
	switch {
	case dr.Exactly != nil:
		e := dr.Exactly
		return &exactRequest{e.DeviceClassName, e.Selectors, e.AllocationMode, e.Count, e.Capacity}
	case len(dr.FirstAvailable) > 0:
		s := dr.FirstAvailable[0]
		return &exactRequest{s.DeviceClassName, s.Selectors, s.AllocationMode, s.Count, s.Capacity}
	}
	return nil
}

// Pick is a device first fit gives request Request (an index of the
// requests passed to Picks).
type Pick struct {
	Device  *devices.DRADevice
	Request int
}

// Picks returns the devices of node the allocator would give the pod's
// requests, in order, each request seeing the devices of the ones before
// it taken; ok is false when some request finds too few. Only the requests
// that apply on the node count: extended ones where the node does not
// advertise the resource as allocatable (served reports that).
func (v *View) Picks(node string, reqs []Request, served func(Request) bool, out []Pick) (_ []Pick, ok bool) {
	return v.NodePicks(v.inv.Nodes[node], reqs, served, out)
}

// NodePicks is Picks for a node Node returned (nil: none).
func (v *View) NodePicks(n *devices.DRANode, reqs []Request, served func(Request) bool, out []Pick) (_ []Pick, ok bool) {
	ok = true
	out = out[:0]
	held := v.scratch[:0]
	// holding: an earlier request's picks are held, so the usage is not
	// the view's own.
	holding := false
	// The picks of every request but the last are held while the later
	// ones are placed: out[:nheld].
	nheld := 0
	defer func() {
		v.release(out[:nheld], reqs)
		v.scratch = held[:0]
	}()
	for i, r := range reqs {
		if !served(r) {
			continue
		}
		match := r.Class.Selects
		if len(r.selectors) > 0 {
			match = func(d *devices.DRADevice) bool {
				if !r.Class.Selects(d) {
					return false
				}
				v.tracker.mu.Lock()
				defer v.tracker.mu.Unlock()
				return v.tracker.allMatch(v.ctx, r.selectors, d) == celMatch
			}
		}
		var found, memoised bool
		if !holding && n != nil && r.Count >= 0 && len(r.selectors) == 0 && r.Capacity.Empty() {
			// Nothing taken yet: the memoised first fit of the class, whose
			// first Count devices are what FirstFit would give.
			var order []*devices.DRADevice
			if order, memoised = v.firstFree(n, r.Class); memoised {
				found = int64(len(order)) >= r.Count
				held = append(held[:0], order[:min(int64(len(order)), r.Count)]...)
			}
		}
		if !memoised {
			held, found = v.choose(n, match, r.Count, r.Capacity, held[:0])
		}
		if !found {
			ok = false
			continue
		}
		for _, d := range held {
			out = append(out, Pick{Device: d, Request: i})
		}
		if i < len(reqs)-1 {
			v.usage.Hold(held, r.Capacity)
			holding = holding || len(held) > 0
			nheld = len(out)
		}
	}
	return out, ok
}

// hold takes picks as the claims of reqs would; release gives them back.
func (v *View) hold(picks []Pick, reqs []Request) {
	for _, p := range picks {
		v.usage.Hold([]*devices.DRADevice{p.Device}, reqs[p.Request].Capacity)
	}
}

func (v *View) release(picks []Pick, reqs []Request) {
	for i := len(picks) - 1; i >= 0; i-- {
		v.usage.Release([]*devices.DRADevice{picks[i].Device}, reqs[picks[i].Request].Capacity)
	}
}

// Devices returns the picked devices, appended to out.
func Devices(picks []Pick, out []*devices.DRADevice) []*devices.DRADevice {
	for _, p := range picks {
		out = append(out, p.Device)
	}
	return out
}
