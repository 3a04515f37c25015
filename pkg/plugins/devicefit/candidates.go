package devicefit

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/plugins/shared"
	"github.com/devicefit/devicefit/pkg/plugins/upstream"
)

// candidates returns the PreFilterResult naming the nodes that can take the
// pod as far as its devices tell, or nil (all nodes). It is a superset of
// the feasible nodes, never a guess: a node is left out only when DeviceFit's
// Filter would reject it (selector, MIG setup, broken status, or devices on
// a node a device-free pod must avoid) or when it can never hold the count,
// or when its free devices are too few and preemption cannot free them
// there. The framework treats a left-out node as UnschedulableAndUnresolvable,
// so DefaultPreemption never considers it: a node that is full only of pods
// the pod may preempt stays in.
//
// nil when no node qualifies, so that Filter and NodeResourcesFit explain
// per node why the pod does not fit; when no node that qualifies is one the
// pod's own node rules admit (shared.NodeRules), for the same reason; and when
// nearly all qualify: the set and the framework's look-up of each name then
// cost more than the filters saved. The names are kept in the state, so
// that PostFilter can say why on the nodes left out when the pod fails on
// the others.
func (pl *DeviceFit) candidates(logger klog.Logger, s *preFilterState, pod *v1.Pod, nodes []fwk.NodeInfo) *fwk.PreFilterResult {
	if len(nodes) == 0 || s.admitted == nil {
		return nil
	}
	admitted, n, left := s.admitted, s.numAdmitted, &s.left
	if n == 0 || n*10 > len(nodes)*9 {
		return nil
	}
	if rules := shared.NewNodeRules(logger, pod, pl.taintComparisonOperators); !anyAdmitted(&rules, nodes, admitted) {
		// The pod's node selector, affinity or tolerations admit none of
		// the nodes named: the pod is unschedulable, and the list would
		// hide why on exactly the nodes the user meant. All nodes, so
		// that every plugin's Filter says why on each.
		return nil
	}
	// Filter will not see the nodes left out: count the rejections it would
	// have made there, so devicefit_filter_rejections_total keeps meaning
	// "nodes turned away, per reason" whichever phase turned them away.
	for m := range mismatchMetric {
		if c := left[exclusion(m)]; m != int(devices.Match) && c > 0 {
			pl.mismatchRejections[m].Add(float64(c))
		}
	}
	if c := left[excludedAboveCapacity]; c > 0 {
		pl.capacityRejections.Add(float64(c))
	}
	if c := left[excludedDeviceNode]; c > 0 {
		pl.deviceNodeRejections.Add(float64(c))
	}
	names := s.keptNames
	if names == nil {
		names = pl.listNames(listKey(s, pod, newPreemptor(pod)), nodes, s.entries, admitted)
	}
	s.listed = names
	return upstream.KeptResult(names)
}

// offer is the largest allocatable of a requested resource on any node, and
// on any node whose devices the selector accepts (checkOffers); own and
// ownMatching are the same over the nodes the pod's own rules admit
// (shared.NodeRules); fromSlices: some node serves it from ResourceSlices.
type offer struct {
	largest, largestMatching int64
	own, ownMatching         int64
	fromSlices               bool
}

// add counts a node's offer a; own says whether the pod's own rules admit
// the node, asked only when a could raise o.own (a fleet has few sizes:
// most nodes raise nothing).
func (o *offer) add(a int64, own *nodeAdmit) {
	if a > o.largest {
		o.largest = a
	}
	if a > o.own && own.ok() {
		o.own = a
	}
}

// raisesMatching reports whether a could raise a maximum over the nodes the
// selector accepts: only then is the selector asked.
func (o *offer) raisesMatching(a int64) bool {
	return a > o.largestMatching || a > o.ownMatching
}

// addMatching counts the offer a of a node whose devices the selector
// accepts.
func (o *offer) addMatching(a int64, own *nodeAdmit) {
	o.largestMatching = max(o.largestMatching, a)
	if a > o.ownMatching && own.ok() {
		o.ownMatching = a
	}
}

// nodeAdmit is the pod's own rules' verdict on one node, judged at most
// once and only when asked (the node object too: reading it through the
// node info is a cache miss per node, for every pod).
type nodeAdmit struct {
	rules   *shared.NodeRules
	ni      fwk.NodeInfo
	verdict int8 // 0 unknown, 1 admitted, -1 not
}

func (n *nodeAdmit) ok() bool {
	if n.verdict == 0 {
		n.verdict = -1
		if n.rules == nil || n.rules.Admit(n.ni.Node()) {
			n.verdict = 1
		}
	}
	return n.verdict > 0
}

// scan walks the nodes once: the offers of each request and, per node,
// whether candidates admits it and, if not, why. rules are the pod's own
// node rules (nil: every node counts as admitted).
func (s *preFilterState) scan(pod *v1.Pod, nodes []fwk.NodeInfo, rules *shared.NodeRules) {
	p := newPreemptor(pod)
	s.offers = make([]offer, len(s.demand))
	s.found = make([]int, len(s.demand))
	s.admitted = make([]bool, len(nodes))
	var dn []draNode
	if s.dra != nil {
		dn = make([]draNode, len(s.demand))
	}
	for j, ni := range nodes {
		e := s.entries[j]
		var draNode *devices.DRANode
		if dn != nil {
			draNode = s.view.Node(ni.Node().Name)
		}
		own := nodeAdmit{rules: rules, ni: ni}
		for i := range s.demand {
			if s.draServedOn(ni, i) {
				n, ok := s.judgeDRA(draNode, i)
				dn[i] = n
				if !ok {
					continue
				}
				o := &s.offers[i]
				o.fromSlices = true
				o.add(n.total, &own)
				if n.verdict == devices.Match {
					o.addMatching(n.total, &own)
				} else {
					s.setDRAVerdict(ni.Node().Name, i, n.verdict)
				}
				continue
			}
			a, d := s.allocatable(ni, e, i)
			o := &s.offers[i]
			o.add(a, &own)
			if o.raisesMatching(a) && s.matchesNode(ni.Node(), d, i, &s.labels[i]) {
				o.addMatching(a, &own)
			}
		}
		why := s.admits(j, ni, e, p, dn)
		if why == admitted_ {
			s.admitted[j] = true
			s.numAdmitted++
		}
		s.left[why]++
	}
}

// allocatable is demand[i]'s allocatable on node ni, whose entry is e,
// and its device in the entry (nil when the entry lacks it, or for a node
// info without an entry). It sets found[i], which admits reads.
func (s *preFilterState) allocatable(ni fwk.NodeInfo, e *devices.NodeDevices, i int) (int64, *devices.NodeDevice) {
	if e == nil {
		return ni.GetAllocatable().GetScalarResources()[s.demand[i].Name], nil
	}
	if s.found[i] = e.Index(s.demand[i].Name); s.found[i] >= 0 {
		d := &e.Devices[s.found[i]]
		return d.Allocatable, d
	}
	return 0, nil
}

// exclusion says why candidates leaves a node out: below numMismatches it is
// the selector's devices.Mismatch, so the reasons line up with Filter's.
type exclusion uint8

const (
	// admitted_ shares devices.Match's value: no mismatch, no exclusion.
	admitted_ exclusion = exclusion(devices.Match)
	// numMismatches follows the last devices.Mismatch.
	numMismatches         = exclusion(len(mismatchMetric))
	excludedAboveCapacity = numMismatches
	excludedDeviceNode    = numMismatches + 1
	// excludedRoom: too few devices, allocatable or free; NodeResourcesFit's
	// reason, not DeviceFit's, so it is not counted as a DeviceFit rejection.
	excludedRoom  = numMismatches + 2
	numExclusions = numMismatches + 3
)

// admits says whether the node may take the pod: DeviceFit's Filter passes,
// the allocatable of each requested device resource covers the count, and
// the free devices do too unless the node runs a pod of lower priority that
// preemption could evict. A node the cache did not see is admitted: Filter
// judges it.
//
// A DRA-served request is judged from dn, what scan found on the node: the
// class's devices there (none: DynamicResources rejects the node), the
// selector's verdict on those the pod would get, and the free ones.
func (s *preFilterState) admits(j int, ni fwk.NodeInfo, e *devices.NodeDevices, p preemptor, dn []draNode) exclusion {
	// The cycle's entries are nil exactly for node infos without a node:
	// the node object is read only then, or for a device-free pod.
	if e == nil && ni.Node() == nil {
		return excludedRoom
	}
	if s.deviceFree && hasDRADevices(s.view, ni.Node()) {
		if s.draDeviceNodes == nil {
			s.draDeviceNodes = sets.New[string]()
		}
		s.draDeviceNodes.Insert(ni.Node().Name)
		return excludedDeviceNode
	}
	if e == nil {
		return admitted_
	}
	if s.deviceFree {
		if e.HasDevices() {
			return excludedDeviceNode
		}
		return admitted_
	}
	row := &s.rows[j]
	for i, r := range s.demand {
		if s.draServedOn(ni, i) {
			n := dn[i]
			switch {
			case n.total < r.Count:
				return excludedRoom
			case n.verdict != devices.Match:
				return exclusion(n.verdict)
			case n.free < r.Count && !p.mayPreempt(row):
				return excludedRoom
			}
			continue
		}
		x := s.found[i]
		if x < 0 {
			return excludedRoom
		}
		d := &e.Devices[x]
		// Filter's order: a broken status first, then the selector.
		if d.AboveCapacity() {
			return excludedAboveCapacity
		}
		if m := s.verdict(i, d); m != devices.Match {
			return exclusion(m)
		}
		if d.Allocatable < r.Count {
			return excludedRoom
		}
		// The row's free count, unclamped: the comparison is the request
		// map's.
		if d.Allocatable-row.Used[x] < r.Count && !p.mayPreempt(row) {
			return excludedRoom
		}
	}
	return admitted_
}
