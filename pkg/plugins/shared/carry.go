package shared

import fwk "k8s.io/kube-scheduler/framework"

// ListCarrier is the plugin that returns DeviceFit's candidate list when
// it runs PreFilter after DeviceFit in the profile: DevicePack, whose
// shortlist names a few nodes within that list.
//
// Why the list changes hands: the framework merges PreFilter results in
// profile order (PreFilterResult.Merge in RunPreFilterPlugins), and the
// first list it meets it copies whole, thousands of names per pod at
// 15,000 nodes; later lists it intersects with the merged one, walking the
// shorter. Returned by DeviceFit, the list was copied in every cycle,
// although the shortlist then kept one node of it: a third of the
// cycle's time and most of its garbage (docs/performance.md). Returned by
// the carrier, it is copied only when no shortlist narrows it.
//
// What changes with it is the framework's attribution: it names the
// plugins that returned lists, not DeviceFit, for the nodes a carried
// list leaves out. DeviceFit's PostFilter gives those nodes their
// reasons and names itself again in the rest's message, and the carrier
// registers DeviceFit's kinds of events, so that the queue requeues a pod
// its carried list left pending on the events DeviceFit's would
// (CarriedListEvents).
const ListCarrier = "DevicePack"

// CarriedListEvents are the events on which DeviceFit's node list of a pod
// may grow (DeviceFit's EventsToRegister registers them with its hints): a
// node that joins or whose device labels, allocatable or taints change,
// the pending pod's own update (an annotation change is a general Update
// of the target pod; resizes are included), a bound pod's departure. The
// carrier registers them without hints: a pod its carried list left
// pending is queued on each, at most one cycle too many. Lists with
// DRA-served requests never change hands, so no DRA event is needed.
func CarriedListEvents() []fwk.ClusterEventWithHint {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel | fwk.UpdateNodeAllocatable | fwk.UpdateNodeTaint}},
		{Event: fwk.ClusterEvent{Resource: fwk.TargetPod, ActionType: fwk.Update}},
		{Event: fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Delete}},
	}
}
