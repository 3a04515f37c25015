package devicepack

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/internal/scratch"
	"github.com/devicefit/devicefit/pkg/plugins/shared"
	"github.com/devicefit/devicefit/pkg/plugins/snapshot"
)

// The shortlist's walk over every node (feasibleRows) is kept between
// cycles like DeviceFit's (devicefit/keptscan.go): whether a node is
// feasible for a pod is a function of the pod's class (DeviceFit's verdict
// class, its requests, node rules and images) and of the node's row in the
// node table, so a kept result is brought up to the next pod of the class
// by redoing the rows the table read since (snapshot.Cycle.Moved). What
// the shortlist needs of the feasible nodes is then kept per row shape:
// each shape's feasible nodes in name order (the score is the shape's, the
// first name breaks ties), and the device kinds among them (the pod's
// candidate kinds). A pod's shortlist then costs a score per shape and the
// rows that moved, not a walk over the fleet.
//
// The kept walk applies where the score is the shape's alone and no
// feasible node needs its name read: the pod has a DeviceFit verdict class
// and no DRA request, no pod-group domains are scored, and every feasible
// row has a shape and none holds the pod's images while ImageLocality
// scores (then the walk runs in full, as before).

// keptFeasible is the kept walk of one class.
type keptFeasible struct {
	mark snapshot.Mark
	// used is when the walk was last asked for (DevicePack.keptStamp).
	used uint64
	// Per row: done, counted below; feasible and the flags, shape and
	// device kinds it was counted with; name, its node's name while
	// feasible. The row itself may hold newer figures when it is taken
	// out (the table read it again).
	done     []bool
	feasible []bool
	avoided  []bool
	images   []bool
	shape    []int
	name     []string
	rowKinds [][]int
	// Over the feasible rows.
	numFeasible, numAvoided, numImages, numNoShape int
	// kinds counts, per device kind, the feasible rows with allocatable
	// devices of it.
	kinds map[int]int
	// groups are the feasible rows of each shape, in name order.
	groups map[int][]member
}

// member is a feasible row of a shape: its position and node name.
type member struct {
	name string
	j    int
}

// keptFeasibleKey is the pod's class for the shortlist's walk, "" when
// the walk cannot be kept: DeviceFit's verdict class (its verdicts and
// list) or noVerdict, whether DeviceFit named a list, the pod's
// NodeResourcesFit request, node rules, and the images ImageLocality
// would look up.
func keptFeasibleKey(v *shared.Verdict, fit *fitCheck, rules *shared.NodeRules, images []string) string {
	if fit.dra != nil {
		return ""
	}
	class, listed := noVerdict, false
	if v != nil {
		if v.Class == "" {
			return ""
		}
		class, listed = v.Class, v.Listed != nil
	}
	// Built by appends: it runs once per pod, in PreFilter.
	b := make([]byte, 0, 128)
	b = append(b, class...)
	b = append(b, 0)
	b = strconv.AppendBool(b, listed)
	for _, n := range []int64{fit.cpu, fit.mem, fit.storage} {
		b = append(b, 0)
		b = strconv.AppendInt(b, n, 10)
	}
	scalars := slices.SortedFunc(slices.Values(fit.scalars), func(a, b scalarRequest) int { return cmp.Compare(a.name, b.name) })
	for _, s := range scalars {
		b = append(b, 0)
		b = append(b, s.name...)
		b = append(b, '=')
		b = strconv.AppendInt(b, s.n, 10)
	}
	b = append(b, "\x00rules\x00"...)
	b = append(b, rules.Key()...)
	for _, name := range images {
		b = append(b, "\x00image\x00"...)
		b = append(b, name...)
	}
	return string(b)
}

// noVerdict is the verdict class of a pod DeviceFit wrote no verdict for
// (a device-free pod it skips, or a profile without it): its Filter
// passes every node, so the pod's feasible nodes follow from the rows
// alone, as for any class. A quarter of GPUFleet's pods are such.
const noVerdict = "\x01no verdict"

// keptFor returns the kept walk of key, brought up to cycle c, and
// whether it may be used: false when a feasible row has no shape or holds
// the pod's images (the walk then runs in full).
func (pl *DevicePack) keptFor(key string, c *snapshot.Cycle, nodes []fwk.NodeInfo, judge func(j int) rowVerdict) (*keptFeasible, bool) {
	pl.keptMu.Lock()
	defer pl.keptMu.Unlock()
	if pl.kept == nil {
		pl.kept = map[string]*keptFeasible{}
	}
	pl.keptStamp++
	k := pl.kept[key]
	moved, ok := []int(nil), false
	if k != nil && len(k.done) == len(c.Rows) {
		moved, ok = c.Moved(k.mark)
	}
	if !ok {
		if k == nil && len(pl.kept) >= maxKept {
			// The least recently used class makes room, and lends its
			// slices: a workload of many classes rebuilds without
			// allocating.
			old := scratch.LeastRecent(pl.kept, func(k *keptFeasible) uint64 { return k.used })
			k = pl.kept[old]
			delete(pl.kept, old)
		}
		if k == nil {
			k = &keptFeasible{kinds: map[int]int{}, groups: map[int][]member{}}
		}
		k.reset(len(c.Rows))
		pl.kept[key] = k
		moved = scratch.Positions(&pl.allRows, len(c.Rows))
	}
	k.used = pl.keptStamp
	// Take every moved row out first, then put each back: a node that
	// moved to another position must not lose the name its new position
	// enters.
	for _, j := range moved {
		if k.done[j] {
			k.done[j] = false
			k.count(j, -1)
		}
	}
	for _, j := range moved {
		if k.done[j] {
			continue
		}
		k.done[j] = true
		v := judge(j)
		k.feasible[j], k.avoided[j], k.images[j] = v.feasible, v.avoided, v.images
		k.shape[j] = c.Rows[j].Shape
		k.rowKinds[j] = k.rowKinds[j][:0]
		if v.feasible {
			k.name[j] = nodes[j].Node().Name
			k.rowKinds[j] = kindsOf(&c.Rows[j], k.rowKinds[j])
		}
		k.count(j, 1)
	}
	k.mark = c.Mark()
	return k, k.numNoShape == 0 && (pl.profile.imageWeight == 0 || k.numImages == 0)
}

// maxKept bounds the classes kept, as DeviceFit bounds its kept scans.
const maxKept = 32

// reset empties the walk for n rows, reusing its slices and maps.
func (k *keptFeasible) reset(n int) {
	k.mark = snapshot.Mark{}
	k.done = scratch.Resize(k.done, n)
	k.feasible = scratch.Resize(k.feasible, n)
	k.avoided = scratch.Resize(k.avoided, n)
	k.images = scratch.Resize(k.images, n)
	k.shape = scratch.Resize(k.shape, n)
	k.name = scratch.Resize(k.name, n)
	if cap(k.rowKinds) < n {
		k.rowKinds = make([][]int, n)
	}
	k.rowKinds = k.rowKinds[:n]
	for j := range k.rowKinds {
		k.rowKinds[j] = k.rowKinds[j][:0]
	}
	k.numFeasible, k.numAvoided, k.numImages, k.numNoShape = 0, 0, 0, 0
	clear(k.kinds)
	clear(k.groups)
}

// count adds feasible row j, sign times, to the totals: its flags, its
// shape's members and its device kinds, as it was counted.
func (k *keptFeasible) count(j int, sign int) {
	if !k.feasible[j] {
		return
	}
	k.numFeasible += sign
	if k.avoided[j] {
		k.numAvoided += sign
	}
	if k.images[j] {
		k.numImages += sign
	}
	if k.shape[j] == snapshot.NoShape {
		k.numNoShape += sign
	} else {
		k.enter(k.shape[j], member{k.name[j], j}, sign > 0)
	}
	for _, kind := range k.rowKinds[j] {
		if k.kinds[kind] += sign; k.kinds[kind] == 0 {
			delete(k.kinds, kind)
		}
	}
}

// kindsOf appends the kinds of the row's allocatable devices to kinds.
func kindsOf(r *snapshot.Row, kinds []int) []int {
	if e := r.Devices; e != nil {
		for i := range e.Devices {
			if d := &e.Devices[i]; d.Allocatable > 0 && d.Kind >= 0 {
				kinds = append(kinds, d.Kind)
			}
		}
	}
	return kinds
}

// enter adds m to (or removes it from) its shape's members, in name order.
func (k *keptFeasible) enter(shape int, m member, add bool) {
	g := k.groups[shape]
	i, found := slices.BinarySearchFunc(g, m, func(a, b member) int {
		return cmp.Or(strings.Compare(a.name, b.name), cmp.Compare(a.j, b.j))
	})
	switch {
	case add && !found:
		g = slices.Insert(g, i, m)
	case !add && found:
		g = slices.Delete(g, i, i+1)
	}
	if len(g) == 0 {
		delete(k.groups, shape)
		return
	}
	k.groups[shape] = g
}

// rowVerdict is the shortlist's verdict on one row.
type rowVerdict struct {
	feasible, avoided, images bool
}

// kindsNoter notes the kept walk's device kinds as the candidates' kinds
// (noteCandidates' for the feasible nodes' entries), of the cycle's kind
// table kinds.
func (pl *DevicePack) kindsNoter(k *keptFeasible, c *snapshot.Cycle) func(*preScoreState) bool {
	return func(s *preScoreState) bool {
		for kind := range k.kinds {
			if kind < len(c.Kinds) {
				pl.candidateKind(s, kind, c.Kinds[kind].Device)
			}
		}
		return len(k.kinds) > 0
	}
}

// bestOfShapes scores each shape with feasible rows once, through its
// first member, and returns the lowest and highest raw scores and the
// first name among the best.
func (pl *DevicePack) bestOfShapes(s *preScoreState, k *keptFeasible, c *snapshot.Cycle) (lo, hi int64, first string) {
	seen := false
	for _, g := range k.groups {
		raw := pl.scoreRow(s, &c.Rows[g[0].j])
		switch {
		case !seen:
			lo, hi, first, seen = raw, raw, g[0].name, true
		case raw > hi:
			hi, first = raw, g[0].name
		case raw == hi && g[0].name < first:
			first = g[0].name
		}
		lo = min(lo, raw)
	}
	return lo, hi, first
}

// podImagesIfScored are the pod's image names when ImageLocality scores,
// nil otherwise: only then do they tell feasible nodes apart.
func (pl *DevicePack) podImagesIfScored(pod *v1.Pod) []string {
	if pl.profile.imageWeight == 0 {
		return nil
	}
	return podImages(pod)
}

// shortlistKept is shortlist from the kept walk of the pod's class; done
// false when the walk cannot be kept for this pod (shortlist then walks
// every node).
func (pl *DevicePack) shortlistKept(ctx context.Context, cycleState fwk.CycleState, pod *v1.Pod, rj *rowJudge) (_ *fwk.PreFilterResult, done bool) {
	if key, _, _ := pl.groups.current(); key != "" {
		// Pod-group domains are scored node by node (podDomains).
		return nil, false
	}
	if view, err := pl.draView(ctx, cycleState); err != nil || view != nil {
		// DRA devices are scored node by node (prepareDRA).
		return nil, false
	}
	key := keptFeasibleKey(rj.verdict, &rj.fit, &rj.rules, rj.images)
	if key == "" || rj.verdict != nil && rj.verdict.Cache != rj.cycle.Cache() {
		return nil, false
	}
	k, ok := pl.keptFor(key, rj.cycle, rj.nodes, rj.judge)
	if !ok {
		return nil, false
	}
	if k.numAvoided > 0 || k.numFeasible == 0 {
		// As shortlist: TaintToleration's Score tells nodes apart, or no
		// node fits and every plugin says why on every node.
		return nil, true
	}
	s, status := pl.prepare(ctx, cycleState, pod, nil, pl.kindsNoter(k, rj.cycle))
	if !status.IsSuccess() {
		return nil, true
	}
	if s.domains != nil || len(s.dra) > 0 {
		return nil, false
	}
	lo, hi, first := pl.bestOfShapes(s, k, rj.cycle)
	// Without ImageLocality's slack (keptFor) only the best can win, the
	// first name's alone (winners).
	if len(pl.handle.NominatedPodsForNode(first)) > 0 || 10 > len(rj.nodes)*9 {
		return nil, true
	}
	sl := &shortlistState{state: s, lo: lo, hi: hi, first: first, listed: 1}
	klog.FromContext(ctx).V(5).Info("Shortlist", "pod", klog.KObj(pod), "listed", sl.listed, "feasible", k.numFeasible)
	cycleState.Write(shortlistStateKey, sl)
	return &fwk.PreFilterResult{NodeNames: sets.New(first)}, true
}
