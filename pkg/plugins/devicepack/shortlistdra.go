package devicepack

import (
	"context"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/dra"
	"github.com/devicefit/devicefit/pkg/plugins/shared"
	"github.com/devicefit/devicefit/pkg/plugins/upstream"
)

// DRA-backed extended resources in the shortlist (KEP-5004). Where a node
// does not advertise the resource and a DeviceClass serves it,
// NodeResourcesFit leaves the request to DynamicResources
// (shouldDelegateResourceToDRA), whose Filter makes the pod a claim asking
// an exact count of the class's devices, with no selectors, constraints or
// tolerations, and runs the allocator for it. Its Score gives that claim 0
// on every node. So the node fits iff the allocator finds that many of the
// class's devices free there, which for plain devices is the count the DRA
// view keeps (dra.View.CountsExactly says when it is exact): the devices
// the class selects that no claim holds, in-flight allocations included,
// from the same GatherAllocatedState.
//
// The view and DynamicResources' state are gathered at two PreFilter
// plugins, from the same DRA manager's claims. Upstream's claim tracker
// assumes the scheduler is the only one that allocates devices
// (isSchedulableAfterClaimChange), so between the two gatherings only a
// deallocation can land. With DeviceFit after DynamicResources, as
// multiPoint orders them, the view may then count one device more than
// DynamicResources: the node holding it may be listed and fail
// DynamicResources' Filter. Another listed node takes the pod, or the cycle
// fails and the deallocation requeues the pod (the hint returns Queue for
// it). DeviceFit's own candidate list, judged on the same view, has had the
// same window all along: the shortlist adds none. Ordering DeviceFit's
// PreFilter first would close it for deallocations, at a price: a PreFilter
// rejection that is UnschedulableAndUnresolvable stops the framework before
// the other plugins write their states, and preemption then fails reading
// them.

// draGates are the feature gates the count assumes: DRA-backed extended
// resources on, device taints honoured (the view, like the allocator for a
// claim without tolerations, leaves NoSchedule and NoExecute devices out),
// and no node-allocatable check beside the allocation
// (DRANodeAllocatableResources, alpha).
type draGates struct {
	extendedResource, deviceTaints, nodeAllocatable bool
}

// draFit is DynamicResources' Filter for the pod's DRA-served resource, on
// the nodes that do not advertise it.
type draFit struct {
	resource v1.ResourceName
	count    int64
	view     *dra.View
	class    *dra.Class
}

// fits reports whether node has count devices of the class free. The
// DRA integration tests (test/integration/dradevices_test.go) fail both
// ways: one device short and the 4 + 4 extended-resource test loses the
// node that fits exactly; taken devices counted as free and the selectors
// test's pending pod names DevicePack, not the products, for the node the
// list then names.
func (f *draFit) fits(node *v1.Node) bool {
	_, free := f.view.Count(f.view.Node(node.Name), f.class.Name)
	return free >= f.count
}

// draShortlist returns the check of the pod's DRA-served request, nil when
// it has none. ok is false when the shortlist cannot judge it exactly: more
// than one DRA-served resource (one claim, devices the classes may share),
// more devices than one allocation holds (DynamicResources errs), a claim
// left from an earlier attempt (DynamicResources judges it on every node),
// a profile or gates it does not assume, or a class whose free devices
// are not what the allocator counts.
func (pl *DevicePack) draShortlist(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, req upstream.PodRequest) (_ *draFit, ok bool) {
	scalars := req.GetScalarResources()
	if len(scalars) == 0 || !pl.draGates.extendedResource {
		return nil, true
	}
	m := pl.handle.SharedDRAManager()
	if m == nil || m.DeviceClassResolver() == nil {
		return nil, true
	}
	resolver := m.DeviceClassResolver()
	var fit *draFit
	for name, n := range scalars {
		if n <= 0 || resolver.GetDeviceClass(name) == nil {
			continue
		}
		if fit != nil {
			return nil, false
		}
		fit = &draFit{resource: name, count: n}
	}
	if fit == nil {
		return nil, true
	}
	if pl.profile.draWhy != "" || !pl.draGates.deviceTaints || pl.draGates.nodeAllocatable ||
		fit.count > resourceapi.AllocationResultsMaxSize || pod.Status.ExtendedResourceClaimStatus != nil {
		return nil, false
	}
	if v := shared.ReadVerdict(cs); v == nil || !v.DRAView {
		// DeviceFit gathered no DRA view for this pod.
		return nil, false
	}
	view, err := pl.draView(ctx, cs)
	if err != nil || view == nil {
		return nil, false
	}
	if fit.class = view.ClassFor(fit.resource); fit.class == nil || view.CountsExactly(fit.class) != "" {
		return nil, false
	}
	fit.view = view
	return fit, true
}
