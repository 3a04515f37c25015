package replay

import (
	"context"
	"fmt"
	"math"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// DefragOptions turn on the defragmenter in the replay's loop (issue 40,
// docs/defragmentation.md): pods that fit nowhere wait, and while the
// budget allows, the pods on one node whose move lets the most pending
// demand fit there move; the pending pods are retried and the moved pods
// placed again by the same profile. Every trace pod may move: the trace
// has neither priorities nor disruption budgets, and its pods are jobs and
// services a controller recreates.
type DefragOptions struct {
	// Budget is the most moves the replay may have made by any arrival, as
	// a fraction of the arrivals so far (0.01: one move per hundred pods);
	// 0 turns the defragmenter off.
	Budget float64
	// MaxMoves is the most pods moved at once (for the pods pending then).
	MaxMoves int
	// Consolidate, when above 0, also spends the budget with no pod
	// pending: the pod whose move lowers the fleet's stranded devices
	// (FGD's measure for the trace's workload) the most, by at least this
	// many devices, moves (consolidate.go).
	Consolidate float64
	// Until, when above 0, ends the moves once this percent of the fleet's
	// GPUs has arrived. FGD's figures are at 100% arrived; past it nearly
	// every arrival pends, and a search for each would only change the
	// later points.
	Until float64
	// Delay is how many arrivals a moved pod's replacement waits before it
	// is scheduled (0: at once, after the pending pods it made room for):
	// a controller that does not recreate it at once (a Job's backoff, a
	// workflow that resubmits it). Meanwhile it holds no devices, and the
	// arrivals may take the room it would have had.
	Delay int
}

// Validate reports a budget or move count that makes no sense.
func (o DefragOptions) Validate() error {
	switch {
	case math.IsNaN(o.Budget) || o.Budget < 0 || o.Budget > 1:
		return fmt.Errorf("move budget %v: want a fraction of the arrivals from 0 to 1", o.Budget)
	case math.IsNaN(o.Consolidate) || o.Consolidate < 0:
		return fmt.Errorf("consolidate %v: want the devices a move must free, 0 for none", o.Consolidate)
	case math.IsNaN(o.Until) || o.Until < 0:
		return fmt.Errorf("moves until %v: want an arrived percent, 0 for no end", o.Until)
	case o.Delay < 0:
		return fmt.Errorf("move delay %d: want a number of arrivals, 0 for none", o.Delay)
	case o.Budget > 0 && o.MaxMoves < 1:
		return fmt.Errorf("max moves %d: want at least 1 with a move budget", o.MaxMoves)
	}
	return nil
}

// placedPod is an arrival bound to a node, as the defragmenter may move it.
type placedPod struct {
	pod  *v1.Pod
	spec *PodSpec
	node int
	// gpus are the GPUs the shares model gave it (dra-shares mode).
	gpus []int
}

// defragger is the in-loop defragmenter's state over one simulation.
type defragger struct {
	opts DefragOptions
	// placed is, per arrival, the pod where it is bound (nil: not bound);
	// onNode the arrivals bound on each node; pending the arrivals that
	// fitted nowhere, in arrival order.
	placed  []*placedPod
	onNode  [][]int
	pending []pendingPod
	// delayed are the moved pods waiting out opts.Delay, in move order.
	delayed []delayedPod
	// placements, when set, are the replay's per-arrival nodes: a moved
	// pod has none until its replacement is placed.
	placements []string
	// changed: a pod became pending, or a pod moved, since bestMove last
	// found nothing. Otherwise only arrivals were placed, which take room
	// and cannot make a move worth more; the search waits.
	changed bool
	// lost counts the pods a move left pending (the profile placed them
	// nowhere again), rescued the pending pods placed after a move. The
	// moves themselves are counted in the metrics (tracker.moves).
	lost, rescued int
	// least is the least CPU and memory of the pending device pods
	// bestMove counts; used and group are scratch space.
	least podRequest
	used  []int64
	group []int
}

func newDefragger(opts DefragOptions, arrivals, nodes int) *defragger {
	return &defragger{opts: opts, placed: make([]*placedPod, arrivals), onNode: make([][]int, nodes)}
}

// bind records arrival idx bound on node with the shares model's GPUs.
func (d *defragger) bind(idx int, pod *v1.Pod, spec *PodSpec, node int, gpus []int) {
	d.placed[idx] = &placedPod{pod: pod, spec: spec, node: node, gpus: gpus}
	d.onNode[node] = append(d.onNode[node], idx)
}

// allowed is how many pods may move now, after arrival idx.
func (d *defragger) allowed(s *simulation, idx int) int {
	return int(d.opts.Budget*float64(idx+1)) - s.metrics.moves
}

// pendingPod is an arrival that fitted nowhere and waits, as an
// unschedulable pod waits in the scheduler's queue for a cluster event.
type pendingPod struct {
	idx  int
	pod  *v1.Pod
	spec *PodSpec
}

// delayedPod is a moved pod whose replacement is scheduled after arrival
// due.
type delayedPod struct {
	due, idx int
	pod      *v1.Pod
	spec     *PodSpec
}

// pend records an arrival that fitted nowhere.
func (d *defragger) pend(idx int, pod *v1.Pod, spec *PodSpec) {
	d.pending = append(d.pending, pendingPod{idx: idx, pod: pod, spec: spec})
	d.changed = true
}

// candidateMove is a set of pods on one node to move and what the pending
// pods gain from it.
type candidateMove struct {
	node  int
	moves []int
	// gain is the milli-GPU of the pending pods that fit the node once the
	// pods have left (the capacity model, the pods in queue order).
	gain int64
	// moved is the milli-GPU the moved pods hold.
	moved int64
}

// better orders moves: more gained per pod moved, then fewer devices moved
// (a device pod's move costs its job more), then fleet order.
func (c *candidateMove) better(o *candidateMove) bool {
	if o == nil {
		return true
	}
	if a, b := c.gain*int64(len(o.moves)), o.gain*int64(len(c.moves)); a != b {
		return a > b
	}
	if c.moved != o.moved {
		return c.moved < o.moved
	}
	return c.node < o.node || c.node == o.node && c.moves[0] < o.moves[0]
}

// bestMove finds the pods to move that let the most pending device demand
// fit their node per pod moved, by the replay's capacity model (canFit:
// the pod slot, CPU, memory, devices or shares, and the models the pods
// accept), at most limit of them, each moved pod fitting another node (or,
// scheduled after the pending pods, its own). The sets tried are each pod
// alone, and, in dra-shares mode, the share pods of one GPU together (the
// GPU left whole for a pod that needs one); nil when no set places
// anything.
func (d *defragger) bestMove(s *simulation, limit int) *candidateMove {
	var best *candidateMove
	// The least CPU and memory a pending device pod asks: a node with less
	// even after the move places none of them.
	d.least = podRequest{milliCPU: math.MaxInt64, memory: math.MaxInt64}
	for _, q := range d.pending[max(len(d.pending)-pendingWindow, 0):] {
		if q.spec.GPUs > 0 {
			d.least.milliCPU, d.least.memory = min(d.least.milliCPU, q.spec.MilliCPU), min(d.least.memory, q.spec.MemoryMiB<<20)
		}
	}
	one := make([]int, 1)
	for x := range s.nodes {
		for _, idx := range d.onNode[x] {
			one[0] = idx
			best = d.consider(s, x, one, best)
		}
		if s.shares == nil || limit < 2 {
			continue
		}
		for g := range s.shares.used[x] {
			d.group = d.group[:0]
			for _, idx := range d.onNode[x] {
				if p := d.placed[idx]; p.spec.Fractional() && p.gpus[0] == g {
					d.group = append(d.group, idx)
				}
			}
			if len(d.group) > 1 && len(d.group) <= limit {
				best = d.consider(s, x, d.group, best)
			}
		}
	}
	return best
}

// consider returns the better of best and moving the given pods off x.
func (d *defragger) consider(s *simulation, x int, moves []int, best *candidateMove) *candidateMove {
	gain, back := d.gainWithout(s, x, moves)
	if gain == 0 {
		return best
	}
	c := candidateMove{node: x, moves: moves, gain: gain}
	for _, m := range moves {
		c.moved += d.placed[m].spec.MilliGPUs()
	}
	if !c.better(best) || !back && !d.placeableElsewhere(s, x, moves) {
		return best
	}
	c.moves = slices.Clone(moves)
	return &c
}

// pendingWindow is how many of the latest pending pods a move's gain
// counts: the search looks at each pod of the fleet, and a move places a
// few pods at most.
const pendingWindow = 64

// gainWithout is the milli-GPU of the pending pods, taken in queue order,
// that fit node x by the capacity model once the given pods have left it;
// back says whether a single moved pod, scheduled after them, fits x
// again (its share on another GPU, by first fit).
func (d *defragger) gainWithout(s *simulation, x int, moves []int) (gain int64, back bool) {
	f, slots := s.free[x], s.slots[x]+len(moves)
	if s.shares != nil {
		d.used = append(d.used[:0], s.shares.used[x]...)
	}
	for _, m := range moves {
		p := d.placed[m]
		f.milliCPU += p.spec.MilliCPU
		f.memory += p.spec.MemoryMiB << 20
		f.devices += p.spec.GPUs
	}
	if f.milliCPU < d.least.milliCPU || f.memory < d.least.memory {
		return 0, false
	}
	for _, m := range moves {
		if p := d.placed[m]; s.shares != nil {
			takeShares(d.used, p.spec, p.gpus, false)
		}
	}
	for _, q := range d.pending[max(len(d.pending)-pendingWindow, 0):] {
		r := requestOf(q.spec, s.shares != nil)
		if !fitsModel(r, f, slots, d.used, s.shares != nil) || !acceptsModel(q.spec, s.models[x]) {
			continue
		}
		f.milliCPU -= r.milliCPU
		f.memory -= r.memory
		f.devices -= r.devices
		slots--
		if s.shares != nil {
			takeShares(d.used, q.spec, nil, true)
		}
		gain += q.spec.MilliGPUs()
	}
	if gain == 0 || len(moves) > 1 {
		return gain, false
	}
	return gain, fitsModel(requestOf(d.placed[moves[0]].spec, s.shares != nil), f, slots, d.used, s.shares != nil)
}

// fitsModel is canFit for a node with f and slots left and, in dra-shares
// mode, its GPUs used as given.
func fitsModel(r podRequest, f podRequest, slots int, used []int64, shares bool) bool {
	if slots <= 0 || r.milliCPU > f.milliCPU || r.memory > f.memory {
		return false
	}
	if shares {
		return sharesFit(used, r.devices, r.share)
	}
	return r.devices <= f.devices
}

// takeShares adds pod p's shares to a node's GPUs as the allocator's first
// fit gives them (add), or takes those it holds (gpus) off.
func takeShares(used []int64, p *PodSpec, gpus []int, add bool) {
	take := int64(sharesPerGPU)
	if p.Fractional() {
		take = p.GPUMilli
	}
	switch {
	case !add:
		for _, g := range gpus {
			used[g] -= take
		}
	case p.Fractional():
		for g, u := range used {
			if u+take <= sharesPerGPU {
				used[g] += take
				return
			}
		}
	default:
		need := p.GPUs
		for g, u := range used {
			if need > 0 && u == 0 {
				used[g], need = sharesPerGPU, need-1
			}
		}
	}
}

// acceptsModel reports whether a pod naming models accepts a node's GPUs.
func acceptsModel(spec *PodSpec, model string) bool {
	return spec.GPUs == 0 || len(spec.Products) == 0 || slices.Contains(spec.Products, model)
}

// placeableElsewhere reports whether the moved pods fit, by the capacity
// model, nodes other than x, one after another (each taking its room
// before the next is judged).
func (d *defragger) placeableElsewhere(s *simulation, x int, moves []int) bool {
	saved := s.request
	defer func() { s.request = saved }()
	// Each take saves the state it changes; undone last first, the node
	// two moved pods went to gets its state from before the first back.
	var taken []func()
	defer func() {
		for _, undo := range slices.Backward(taken) {
			undo()
		}
	}()
	for _, m := range moves {
		p := d.placed[m].spec
		s.request = requestOf(p, s.shares != nil)
		y := -1
		for j := range s.nodes {
			if j != x && acceptsModel(p, s.models[j]) && s.canFit(j) == nil {
				y = j
				break
			}
		}
		if y < 0 {
			return false
		}
		if len(moves) > 1 {
			taken = append(taken, d.take(s, y, p))
		}
	}
	return true
}

// take puts pod p's request on node y's free capacity and shares (for
// placeableElsewhere's next pod) and returns how to undo it.
func (d *defragger) take(s *simulation, y int, p *PodSpec) func() {
	f, slots := s.free[y], s.slots[y]
	var used []int64
	if s.shares != nil {
		used = slices.Clone(s.shares.used[y])
		takeShares(s.shares.used[y], p, nil, true)
	}
	s.free[y].milliCPU -= p.MilliCPU
	s.free[y].memory -= p.MemoryMiB << 20
	s.free[y].devices -= p.GPUs
	s.slots[y]--
	return func() {
		s.free[y], s.slots[y] = f, slots
		if used != nil {
			copy(s.shares.used[y], used)
		}
	}
}

// requestOf is what canFit checks of pod p; shares: p's share of one GPU
// is a claim (dra-shares mode).
func requestOf(p *PodSpec, shares bool) podRequest {
	r := podRequest{milliCPU: p.MilliCPU, memory: p.MemoryMiB << 20, devices: p.GPUs}
	if shares && p.Fractional() {
		r.devices, r.share, r.models = 0, p.GPUMilli, p.Products
	}
	return r
}

// evict takes arrival idx off its node, as its deletion does: the node
// info loses the pod, its claims are deallocated, the shares model and the
// metrics forget it.
func (d *defragger) evict(logger klog.Logger, s *simulation, idx int) error {
	p := d.placed[idx]
	if err := s.depart(logger, p.pod, p.node); err != nil {
		return err
	}
	if s.dra != nil {
		s.dra.claims.release(p.pod.UID)
	}
	if s.shares != nil {
		s.shares.remove(p.node, p.spec, p.gpus)
	}
	s.metrics.allocated -= p.spec.MilliGPUs()
	s.metrics.update(p.node, s.nodes[p.node])
	d.onNode[p.node] = slices.DeleteFunc(d.onNode[p.node], func(j int) bool { return j == idx })
	d.placed[idx] = nil
	if d.placements != nil {
		d.placements[idx] = ""
	}
	return nil
}

// step spends the budget after arrival idx: while it allows a move and a
// move lets pending pods fit, the pod moves; the pending pods are tried
// again, in queue order, as the scheduler retries them on the pod's
// deletion; the moved pod is scheduled after them, as its controller's new
// pod. With no pod pending, Consolidate may spend it instead.
func (d *defragger) step(ctx context.Context, s *simulation, idx int, record recordFunc) error {
	if err := d.release(ctx, s, idx, record); err != nil {
		return err
	}
	if m := s.metrics; d.opts.Until > 0 && 100*float64(m.arrived) > d.opts.Until*float64(m.capacity) {
		return nil
	}
	for d.changed {
		limit := min(d.opts.MaxMoves, d.allowed(s, idx))
		if limit <= 0 {
			break
		}
		c := d.bestMove(s, limit)
		if c == nil {
			d.changed = false
			break
		}
		if err := d.move(ctx, s, idx, c.moves, func() error { return d.retry(ctx, s, c.node, record) }, record); err != nil {
			return err
		}
		d.changed = true
	}
	if d.opts.Consolidate > 0 && len(d.pending) == 0 && d.allowed(s, idx) > 0 {
		if c := d.consolidation(s); c >= 0 {
			return d.move(ctx, s, idx, []int{c}, nil, record)
		}
	}
	return nil
}

// retry schedules again the pending pods that fit node x by the capacity
// model (nothing else changed for them), in queue order.
func (d *defragger) retry(ctx context.Context, s *simulation, x int, record recordFunc) error {
	saved := s.request
	defer func() { s.request = saved }()
	waiting := d.pending
	d.pending = nil
	for k, q := range waiting {
		s.request = requestOf(q.spec, s.shares != nil)
		if !acceptsModel(q.spec, s.models[x]) || s.canFit(x) != nil {
			d.pending = append(d.pending, q)
			continue
		}
		out, err := s.schedule(ctx, q.pod)
		if err != nil {
			d.pending = append(d.pending, waiting[k:]...)
			return err
		}
		if out.node < 0 {
			d.pending = append(d.pending, q)
			continue
		}
		d.rescued++
		if err := record(q.idx, q.pod, out, rescued); err != nil {
			return err
		}
	}
	return nil
}

// recordFunc books an outcome of arrival idx as the replay does.
type recordFunc func(idx int, pod *v1.Pod, out outcome, how outcomeOf) error

// outcomeOf says which schedule an outcome is of.
type outcomeOf int

const (
	// arrived: the pod's first try, on arrival.
	arrived outcomeOf = iota
	// moved: a moved pod's new try.
	moved
	// rescued: a pending pod placed on its retry after a move.
	rescued
)

// move moves the given arrivals after arrival idx: they leave their node,
// then (when not nil) then runs, then each is scheduled again by the
// profile as its controller's new pod, at once or, with opts.Delay, after
// that many more arrivals (release).
func (d *defragger) move(ctx context.Context, s *simulation, idx int, moves []int, then func() error, record recordFunc) error {
	gone := make([]*placedPod, len(moves))
	for k, m := range moves {
		gone[k] = d.placed[m]
		if err := d.evict(klog.FromContext(ctx), s, m); err != nil {
			return err
		}
	}
	s.metrics.moves += len(moves)
	if then != nil {
		if err := then(); err != nil {
			return err
		}
	}
	for k, p := range gone {
		again := p.pod.DeepCopy()
		again.Spec.NodeName = ""
		q := delayedPod{due: idx + d.opts.Delay, idx: moves[k], pod: again, spec: p.spec}
		if d.opts.Delay > 0 {
			d.delayed = append(d.delayed, q)
			continue
		}
		if err := d.reschedule(ctx, s, q, record); err != nil {
			return err
		}
	}
	return nil
}

// release schedules the moved pods due by arrival idx (every one with
// math.MaxInt, at the end of the replay).
func (d *defragger) release(ctx context.Context, s *simulation, idx int, record recordFunc) error {
	n := 0
	for n < len(d.delayed) && d.delayed[n].due <= idx {
		if err := d.reschedule(ctx, s, d.delayed[n], record); err != nil {
			return err
		}
		n++
	}
	d.delayed = d.delayed[n:]
	return nil
}

// reschedule schedules moved pod q's replacement; placed nowhere, it is
// lost and pends.
func (d *defragger) reschedule(ctx context.Context, s *simulation, q delayedPod, record recordFunc) error {
	saved := s.request
	defer func() { s.request = saved }()
	s.request = requestOf(q.spec, s.shares != nil)
	o, err := s.schedule(ctx, q.pod)
	if err != nil {
		return err
	}
	if o.node < 0 {
		d.lost++
	}
	return record(q.idx, q.pod, o, moved)
}
