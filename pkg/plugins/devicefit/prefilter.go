package devicefit

import (
	"context"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/devicefit/devicefit/pkg/apis/config"
	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/metrics"
	"github.com/devicefit/devicefit/pkg/plugins/shared"
	"github.com/devicefit/devicefit/pkg/plugins/snapshot"
)

// PreFilter validates the pod's device requests and selector once per cycle,
// and names the nodes that can take the pod (PreFilterResult), so that every
// plugin's Filter and Score run on those only. Every rejection of the
// pod's own request here is UnschedulableAndUnresolvable: no preemption and
// no other pod's departure can fix a malformed request; the pod must change
// (or, for a count above every node, a bigger node must join, which the
// node queueing hints catch). A placement's rejection in a pod-group cycle
// (placementRoom) is Unschedulable: the group's preemption may make room.
//
// In a pod-group cycle the scheduler runs PreFilter for every pod once per
// placement (schedule_one_podgroup.go), on all nodes, and filters only the
// placement's. The state is then kept in the PodGroupCycleState (by pod
// UID) and reused for the pod's later placements (groupState), and no
// node list is named. A placement without the devices the group still
// needs is rejected at its first member (placementRoom).
func (pl *DeviceFit) PreFilter(ctx context.Context, cycleState fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	group := podGroupCycle(cycleState)
	if status := pl.placementRoom(cycleState, pod); status != nil {
		return nil, status
	}
	if s := groupState(group, pod); s != nil && s.kindsValid() {
		pl.writeState(cycleState, s, nil, nil)
		// All nodes: the list was exact for the placement it was made in,
		// not for the others (their nodes now hold the group's other pods);
		// Filter judges the placement's nodes.
		return nil, nil
	}
	// The cycle's walks over all nodes share one slice of cache entries,
	// aligned with nodes; cycles are serial, the lock only guards misuse.
	pl.scratchMu.Lock()
	defer pl.scratchMu.Unlock()
	s, status, reason := pl.computeState(ctx, cycleState, pod, nodes)
	if reason != "" {
		pl.rejections[reason].Inc()
	}
	if !status.IsSuccess() {
		return nil, status
	}
	// No list in a pod-group cycle: upstream runs no per-pod PostFilter
	// there, so the nodes a list left out would read only "didn't satisfy
	// plugin(s) [DeviceFit]" in the pending pod's message; Filter, run on
	// every node of the placement, says why on each.
	var res *fwk.PreFilterResult
	if group == nil {
		res = pl.candidates(klog.FromContext(ctx), s, pod, nodes)
	}
	var listed []bool
	if res != nil {
		// The nodes outside the list are never filtered: DevicePack's
		// shortlist skips them on the same walk (aligned with nodes).
		listed = s.admitted
	}
	res, handed := pl.handOver(s, res)
	pl.writeState(cycleState, s, listed, handed)
	// Filter must not use the entries: the next cycle reuses the slice.
	s.entries, s.rows, s.admitted, s.view, s.picks = nil, nil, nil, nil, nil
	if group != nil && len(s.demand) > 0 && s.dra == nil {
		group.Write(groupStateKey(pod), s)
	}
	return res, nil
}

// writeState writes the pod's state, and what DevicePack reads of it, into
// the cycle state, once; listed is the candidate list's verdicts, aligned
// with the cycle's nodes (nil: no list), handed the list when it goes to
// the carrier (carry.go).
func (pl *DeviceFit) writeState(cycleState fwk.CycleState, s *preFilterState, listed []bool, handed *fwk.PreFilterResult) {
	cycleState.Write(preFilterStateKey, s)
	cycleState.Write(shared.VerdictKey, &shared.Verdict{Admits: func(ni fwk.NodeInfo, e *devices.NodeDevices) bool {
		if e == nil {
			e = s.cache.Lookup(ni.Node())
		}
		r, _ := s.rejectCached(pl, ni, e)
		return r == rejectNone
	}, Cache: s.cache, Listed: listed, Class: s.keptKey, DRAView: s.dra != nil, List: handed})
}

// podGroupCycle is the cycle's PodGroupCycleState, nil outside a pod-group
// cycle.
func podGroupCycle(cycleState fwk.CycleState) fwk.PodGroupCycleState {
	if cycleState == nil || !cycleState.IsPodGroupSchedulingCycle() {
		return nil
	}
	return cycleState.GetPodGroupSchedulingCycle()
}

// kindsValid reports whether the node cache's kind table still begins with
// the one the state's verdicts are indexed by: the cache starts its table
// over when kinds pile up (devices.MaxKinds), and a kept state must not
// read another kind's verdict.
func (s *preFilterState) kindsValid() bool {
	kinds := s.cache.Kinds()
	return len(kinds) >= len(s.kinds) && slices.Equal(kinds[:len(s.kinds)], s.kinds)
}

// groupStateKey keys a pod's state in the PodGroupCycleState.
func groupStateKey(pod *v1.Pod) fwk.StateKey {
	return fwk.StateKey("PreFilter" + Name + "/" + string(pod.UID))
}

// groupState is the state PreFilter computed for pod in an earlier
// placement of the same pod-group cycle, or nil. Within one cycle the
// snapshot's node objects stay; only the pods the scheduler assumes for a
// placement, and forgets after it, change. What the state holds of nodes
// is of their objects (the selector's verdicts, the offers). Only device-plugin requests are kept: a DRA-served request's
// verdicts read the claims, which a placement's pods allocate.
func groupState(group fwk.PodGroupCycleState, pod *v1.Pod) *preFilterState {
	if group == nil {
		return nil
	}
	c, err := group.Read(groupStateKey(pod))
	if err != nil {
		return nil
	}
	s, _ := c.(*preFilterState)
	return s
}

// refresh brings the node table up to the cycle's nodes (the table's
// Cycle for pod) and gives the state its cache's kind table and the nodes'
// entries (the table's slice).
func (pl *DeviceFit) refresh(cs fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo, s *preFilterState) *snapshot.Cycle {
	c := pl.table.RefreshFor(cs, pod, nodes)
	s.kinds, s.entries, s.rows = c.Kinds, c.Entries, c.Rows
	return c
}

// computeState builds the pod's preFilterState, or the status that rejects
// or skips it; a rejection comes with its metrics reason.
func (pl *DeviceFit) computeState(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (*preFilterState, *fwk.Status, metrics.Reason) {
	facts := shared.ReadPod(cs, pod, pl.resources, pl.resourcesKey)
	demand, err := facts.Demand, facts.Err
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error()), metrics.ReasonInvalidRequest
	}
	if len(demand) == 0 {
		// A pod with ResourceClaims takes devices through DRA: no device-free
		// pod to keep off device nodes, and its claims speak in CEL.
		if pl.policy == config.DeviceNodePolicyRequire && len(pod.Spec.ResourceClaims) == 0 {
			s := &preFilterState{deviceFree: true, cache: pl.cache}
			view, err := pl.draView(ctx, cs)
			if err != nil {
				return nil, fwk.AsStatus(err), ""
			}
			s.view = view
			pl.refresh(cs, pod, nodes, s)
			s.scan(pod, nodes, nil)
			return s, nil, ""
		}
		// CPU pods pay nothing: Filter does not run for them.
		return nil, fwk.NewStatus(fwk.Skip), ""
	}
	selector, err := facts.Selector, facts.SelectorErr
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error()), metrics.ReasonInvalidAnnotation
	}
	s := &preFilterState{
		demand: demand, selector: selector, cache: pl.cache,
		labels:   make([]devices.DeviceLabels, len(demand)),
		verdicts: make([][]devices.Mismatch, len(demand)),
	}
	cycle := pl.refresh(cs, pod, nodes, s)
	s.dra, s.view, err = pl.draServed(ctx, cs, demand)
	if err != nil {
		return nil, fwk.AsStatus(err), ""
	}
	s.classServed = make([]bool, len(demand))
	for i, r := range demand {
		s.classServed[i] = pl.servedByDRA(r.Name)
	}
	for i, r := range demand {
		s.labels[i] = devices.NewDeviceLabels(r.Name)
		if len(pl.allowedCounts) > 0 && !slices.Contains(pl.allowedCounts, r.Count) {
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
				fmt.Sprintf("requests %d %s; allowedCounts are %s", r.Count, r.Name, pl.allowedText)), metrics.ReasonCountNotAllowed
		}
		// A fleet has few kinds: match the selector once per kind, and
		// Filter and the scan below look the verdict up.
		v := make([]devices.Mismatch, len(s.kinds))
		for k := range s.kinds {
			if s.kinds[k].Resource == r.Name {
				v[k] = selector.Match(&s.labels[i], s.kinds[k].Device)
			}
		}
		s.verdicts[i] = v
	}
	// One walk over the nodes gathers what checkOffers and candidates need:
	// over the rows that moved since the last pod of the same shape, when
	// no request is DRA-served (keptscan.go).
	rules := shared.NewNodeRules(klog.FromContext(ctx), pod, pl.taintComparisonOperators)
	if s.dra == nil && !pl.scanInFull {
		p := newPreemptor(pod)
		pl.scanKept(s, cycle, keptScanKey(listKey(s, pod, p), &rules), nodes, &rules, p)
	} else {
		s.scan(pod, nodes, &rules)
	}
	for i := range demand {
		if status, reason := s.checkOffers(i); status != nil {
			return nil, status, reason
		}
		if status := pl.checkUnserved(s, i); status != nil {
			return nil, status, metrics.ReasonUnservedResource
		}
	}
	return s, nil, ""
}

// servedByDRA reports whether a DeviceClass maps the extended resource name
// (DRAExtendedResource). The resolver returns nil when the feature is off.
func (pl *DeviceFit) servedByDRA(name v1.ResourceName) bool {
	if pl.handle == nil {
		return false
	}
	m := pl.handle.SharedDRAManager()
	if m == nil {
		return false
	}
	r := m.DeviceClassResolver()
	return r != nil && r.GetDeviceClass(name) != nil
}

// checkOffers rejects the pod when no node in the cluster could ever serve
// request i: the largest offer of the resource is below the count, or no
// node offering it has devices the selector (or the MIG setup) accepts, or
// those that do are all too small. A typo in a product name then reads as
// such, not as "Insufficient nvidia.com/gpu" on the nodes that are full.
//
// A DRA-served resource counts the devices its class selects on nodes that
// do not advertise it (dra.go). When no node offers the resource at all,
// the pod is left to NodeResourcesFit ("Insufficient") or DynamicResources:
// a node may join, and a DeviceClass or ResourceSlice may not be synced
// yet.
func (s *preFilterState) checkOffers(i int) (*fwk.Status, metrics.Reason) {
	r := s.demand[i]
	largest, largestMatching := s.offers[i].largest, s.offers[i].largestMatching
	own, ownMatching := s.offers[i].own, s.offers[i].ownMatching
	switch {
	case largest == 0:
		return nil, ""
	case s.classServed[i] && !s.offers[i].fromSlices:
		// A DeviceClass serves the resource but no slice offers it yet: the
		// nodes' allocatable is not the limit, and DynamicResources says why.
		return nil, ""
	case r.Count > largest:
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
			fmt.Sprintf("requests %d %s; the largest node offers %d", r.Count, r.Name, largest)), metrics.ReasonExceedsLargestNode
	case largestMatching == 0 && s.selector.IsEmpty():
		// Only the MIG checks can refuse a pod without selector.
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
			fmt.Sprintf("no node offering %s has a MIG setup that can serve it", r.Name)), metrics.ReasonNoMatchingNode
	case largestMatching == 0:
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
			fmt.Sprintf("no node offering %s matches the pod's devicefit.io annotations", r.Name)), metrics.ReasonNoMatchingNode
	case r.Count > largestMatching:
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
			fmt.Sprintf("requests %d %s; the largest node matching the pod's devicefit.io annotations offers %d", r.Count, r.Name, largestMatching)), metrics.ReasonNoMatchingNode
	// The pod's own node selector, affinity and tolerations rule out the
	// nodes big enough: every node it may use is too small, which no
	// preemption changes ("Insufficient" there would send the scheduler
	// looking for victims). None admitted offering it at all is left to
	// NodeAffinity and TaintToleration, whose reasons say so per node.
	case own > 0 && r.Count > own:
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
			fmt.Sprintf("requests %d %s; the largest node the pod's node selector, affinity and tolerations admit offers %d", r.Count, r.Name, own)), metrics.ReasonExceedsLargestNode
	case ownMatching > 0 && r.Count > ownMatching:
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
			fmt.Sprintf("requests %d %s; the largest node the pod's node selector, affinity, tolerations and devicefit.io annotations admit offers %d", r.Count, r.Name, ownMatching)), metrics.ReasonNoMatchingNode
	}
	return nil, ""
}

// UnservedText is in the message of a pod whose extended resource a
// DeviceClass names but no class serves in the scheduler (checkUnserved);
// kubectl devicefit finds such pods by it.
const UnservedText = "no DeviceClass serves it in this scheduler"

// checkUnserved rejects request i when no node offers its resource as
// allocatable and a DeviceClass names it in spec.extendedResourceName, but
// the framework's resolver maps it to no class: kube-scheduler's extended
// resource cache forgets a name when any class naming it is deleted, even
// while another still names it (dynamic-resource-allocation v0.37.2,
// removeResourceName2class), until that class is updated or the scheduler
// restarts. "Insufficient" would hide that; the DeviceClass queueing hint
// retries the pod when the class is updated.
func (pl *DeviceFit) checkUnserved(s *preFilterState, i int) *fwk.Status {
	r := s.demand[i]
	if s.offers[i].largest > 0 || s.classServed[i] || pl.handle == nil || pl.handle.SharedDRAManager() == nil {
		return nil
	}
	classes, err := pl.handle.SharedDRAManager().DeviceClasses().List()
	if err != nil {
		return nil
	}
	var named []string
	for _, c := range classes {
		if ptr.Deref(c.Spec.ExtendedResourceName, "") == string(r.Name) {
			named = append(named, c.Name)
		}
	}
	if len(named) == 0 {
		return nil
	}
	slices.Sort(named)
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf(
		"requests %d %s; %s, though DeviceClass %s names it: kube-scheduler forgets the name when a class naming it is deleted; update DeviceClass %s or restart the scheduler",
		r.Count, r.Name, UnservedText, strings.Join(named, ", "), named[0]))
}

// PreFilterExtensions returns nil: DeviceFit's verdict on a node does not
// depend on the other pods there.
func (pl *DeviceFit) PreFilterExtensions() fwk.PreFilterExtensions { return nil }
