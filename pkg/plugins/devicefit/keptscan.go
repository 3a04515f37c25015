package devicefit

import (
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/internal/scratch"
	"github.com/devicefit/devicefit/pkg/plugins/shared"
	"github.com/devicefit/devicefit/pkg/plugins/snapshot"
)

// keptScan is scan's result for one pod shape and one set of node rules
// (keptScanKey), kept between cycles and brought up to the next by
// redoing only the rows the node table read since (snapshot.Cycle.Moved):
// every input of a row's verdict and offers is either the pod shape's
// (demand, selector, priority, node rules) or the row's (its node object,
// devices taken, lowest pod priority), and a row is read again exactly
// when one of its own moved. So a pod of a shape seen before costs what
// changed in the cluster, not a walk over the fleet.
//
// Pods with a DRA-served request, and device-free pods, are scanned in
// full (scan): their verdicts read the cycle's DRA view, which no row
// follows.
type keptScan struct {
	mark snapshot.Mark
	// used is when the scan was last asked for (DeviceFit.scanStamp).
	used uint64
	// Per row: done, the row's verdict is counted; why its exclusion;
	// at the name inserted while admitted; offered[j*len(demand)+i] its
	// offer of demand[i].
	done     []bool
	why      []exclusion
	admitted []bool
	at       []string
	offered  []rowOffer
	// What the result holds over all rows.
	names       sets.Set[string]
	numAdmitted int
	left        [numExclusions]int
	offers      []offerCounts
}

// rowOffer is what one row offers of one request: its allocatable, and
// whether the selector accepts its devices (match) and the pod's own node
// rules the node (own). Only rows with allocatable count.
type rowOffer struct {
	a          int64
	match, own bool
}

// offerCounts is, per request, how many rows offer each allocatable, in
// the four groups an offer's maxima range over: their maxima are the
// offer (a fleet has few device counts, so the maps are small).
type offerCounts struct {
	largest, largestMatching, own, ownMatching map[int64]int
}

func newOfferCounts() offerCounts {
	return offerCounts{largest: map[int64]int{}, largestMatching: map[int64]int{}, own: map[int64]int{}, ownMatching: map[int64]int{}}
}

func (c *offerCounts) add(o rowOffer, sign int) {
	if o.a <= 0 {
		return
	}
	count(c.largest, o.a, sign)
	if o.match {
		count(c.largestMatching, o.a, sign)
	}
	if o.own {
		count(c.own, o.a, sign)
	}
	if o.match && o.own {
		count(c.ownMatching, o.a, sign)
	}
}

func count(m map[int64]int, a int64, sign int) {
	if m[a] += sign; m[a] == 0 {
		delete(m, a)
	}
}

func largest(m map[int64]int) int64 {
	var l int64
	for a := range m {
		l = max(l, a)
	}
	return l
}

func (c *offerCounts) offer() offer {
	return offer{largest: largest(c.largest), largestMatching: largest(c.largestMatching), own: largest(c.own), ownMatching: largest(c.ownMatching)}
}

// keptScanKey is the pod's shape for scan: listKey's and the node rules'.
func keptScanKey(list string, rules *shared.NodeRules) string {
	return list + "\x00rules\x00" + rules.Key()
}

// keptScanFor returns the kept scan of key, a new one when there is none
// or it cannot be brought up to cycle c (then every row is redone).
func (pl *DeviceFit) keptScanFor(key string, c *snapshot.Cycle, demand int) (*keptScan, []int) {
	pl.scanStamp++
	k := pl.scans[key]
	if k != nil {
		k.used = pl.scanStamp
		if moved, ok := c.Moved(k.mark); ok && len(k.done) == len(c.Rows) {
			return k, moved
		}
	} else {
		if len(pl.scans) >= maxLists {
			// The least recently used shape makes room, and lends its
			// slices: a workload of many shapes (a trace's) rebuilds
			// without allocating.
			old := scratch.LeastRecent(pl.scans, func(s *keptScan) uint64 { return s.used })
			k = pl.scans[old]
			delete(pl.scans, old)
		} else {
			k = &keptScan{names: sets.New[string]()}
		}
		k.used = pl.scanStamp
		pl.scans[key] = k
	}
	k.reset(len(c.Rows), demand)
	return k, scratch.Positions(&pl.allRows, len(c.Rows))
}

// reset empties the scan for n rows and demand requests, reusing its
// slices and sets.
func (k *keptScan) reset(n, demand int) {
	k.mark = snapshot.Mark{}
	k.done = scratch.Resize(k.done, n)
	k.why = scratch.Resize(k.why, n)
	k.admitted = scratch.Resize(k.admitted, n)
	k.at = scratch.Resize(k.at, n)
	k.offered = scratch.Resize(k.offered, n*demand)
	clear(k.names)
	k.numAdmitted, k.left = 0, [numExclusions]int{}
	k.offers = scratch.Resize(k.offers, demand)
	for i := range k.offers {
		if k.offers[i].largest == nil {
			k.offers[i] = newOfferCounts()
		}
		clear(k.offers[i].largest)
		clear(k.offers[i].largestMatching)
		clear(k.offers[i].own)
		clear(k.offers[i].ownMatching)
	}
}

// scanKept is scan for a pod with no DRA-served request, from the kept
// result of its shape (keptScan): the same offers, verdicts, counts and
// candidate names.
func (pl *DeviceFit) scanKept(s *preFilterState, c *snapshot.Cycle, key string, nodes []fwk.NodeInfo, rules *shared.NodeRules, p preemptor) {
	k, moved := pl.keptScanFor(key, c, len(s.demand))
	s.found = make([]int, len(s.demand))
	// Take every moved row out first, then put each back: a node that
	// moved to another position must not lose the name its new position
	// inserts.
	for _, j := range moved {
		if !k.done[j] {
			continue
		}
		k.done[j] = false
		k.count(j, len(s.demand), -1)
		if k.admitted[j] {
			delete(k.names, k.at[j])
			k.at[j] = ""
		}
	}
	for _, j := range moved {
		if k.done[j] {
			continue
		}
		k.done[j] = true
		k.redoRow(s, j, nodes[j], rules, p)
		k.count(j, len(s.demand), 1)
		if k.admitted[j] {
			name := nodes[j].Node().Name
			k.names.Insert(name)
			k.at[j] = name
		}
	}
	k.mark = c.Mark()
	s.admitted, s.numAdmitted, s.left = k.admitted, k.numAdmitted, k.left
	s.offers = make([]offer, len(s.demand))
	for i := range s.offers {
		s.offers[i] = k.offers[i].offer()
	}
	s.keptNames, s.keptKey = k.names, key
}

// redoRow computes row j's offers and verdict, as scan does.
func (k *keptScan) redoRow(s *preFilterState, j int, ni fwk.NodeInfo, rules *shared.NodeRules, p preemptor) {
	e := s.entries[j]
	own := nodeAdmit{rules: rules, ni: ni}
	for i := range s.demand {
		a, d := s.allocatable(ni, e, i)
		o := rowOffer{a: a}
		if a > 0 {
			o.match = s.matchesNode(ni.Node(), d, i, &s.labels[i])
			o.own = own.ok()
		}
		k.offered[j*len(s.demand)+i] = o
	}
	k.why[j] = s.admits(j, ni, e, p, nil)
	k.admitted[j] = k.why[j] == admitted_
}

// count adds row j's verdict and offers, sign times, to the totals.
func (k *keptScan) count(j, demand int, sign int) {
	k.left[k.why[j]] += sign
	if k.admitted[j] {
		k.numAdmitted += sign
	}
	for i := range demand {
		k.offers[i].add(k.offered[j*demand+i], sign)
	}
}
