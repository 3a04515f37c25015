package replay

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
)

// The scheduling cycle of one pod, as pkg/scheduler/schedule_one.go runs it
// (filter, score, select), over the replay's snapshot.

// numFeasibleNodesToFind is upstream's rule (Scheduler.numFeasibleNodesToFind).
func numFeasibleNodesToFind(percentage int32, numAllNodes int) int {
	n := int32(numAllNodes)
	if n < minFeasibleNodesToFind {
		return numAllNodes
	}
	if percentage == 0 {
		percentage = int32(50) - n/125
		if percentage < minFeasibleNodesPercentageToFind {
			percentage = minFeasibleNodesPercentageToFind
		}
	}
	num := n * percentage / 100
	if num < minFeasibleNodesToFind {
		return minFeasibleNodesToFind
	}
	return int(num)
}

// outcome of one pod.
type outcome struct {
	node int // fleet index, -1 when the pod failed
	// gpu is the GPU an oracle device choice gave a share claim; -1 for
	// first fit (the allocator's own choice).
	gpu int
	// rejectedBy names the plugins that turned the pod (or some node) away.
	rejectedBy []string
}

// schedule runs one scheduling cycle for pod, the way schedule_one.go's
// schedulePod does, deterministically:
//
//   - PreFilter on all nodes; a rejection fails the pod (no PostFilter:
//     no preemption, and a failed pod is never retried);
//   - Filter over the nodes (or PreFilter's subset) in fleet order, starting
//     where the previous pod's search stopped; it stops once
//     numFeasibleNodesToFind nodes fit, counting in that order (upstream
//     counts in completion order of its parallel workers, which is not
//     reproducible);
//   - one feasible node is taken as is; otherwise PreScore and Score (with
//     NormalizeScore and the profile's weights) run on the feasible nodes
//     and the highest total wins, ties going to the lowest fleet index
//     (upstream takes whichever its heap yields);
//   - Reserve on the chosen node, then the pod is assumed in the snapshot
//     (no Permit, PreBind or Bind: nothing runs and nothing departs).
func (s *simulation) schedule(ctx context.Context, pod *v1.Pod) (outcome, error) {
	state := framework.NewCycleState()
	preRes, status, _ := s.fw.RunPreFilterPlugins(ctx, state, pod)
	if !status.IsSuccess() {
		if !status.IsRejected() {
			return outcome{}, fmt.Errorf("PreFilter: %w", status.AsError())
		}
		return outcome{node: -1, rejectedBy: []string{status.Plugin() + " (PreFilter)"}}, nil
	}
	s.order = s.order[:0]
	if preRes.AllNodes() {
		for i := range s.nodes {
			s.order = append(s.order, i)
		}
	} else {
		for i := range s.nodes {
			if preRes.NodeNames.Has(s.nodes[i].Node().Name) {
				s.order = append(s.order, i)
			}
		}
	}
	// In DRA mode the allocator's Filter dominates a replay: upstream runs
	// it on every node tried, for ~500 nodes per pod at the trace's scale.
	// Where the pre-screen's device model is exact (free devices per node,
	// or per GPU the shares first fit leaves, and the claim's models), it
	// decides DynamicResources' verdict on the nodes tried and the
	// allocator runs on the chosen node alone, before Reserve, which needs
	// its result. Should the allocator refuse a node the model accepted,
	// the replay fails (allocatorAgrees); --no-prescreen runs it everywhere.
	skip := state.GetSkipFilterPlugins()
	byModel := s.draByModel && !skip.Has(names.DynamicResources)
	if byModel {
		state.SetSkipFilterPlugins(skip.Clone().Insert(names.DynamicResources))
	}
	// Upstream counts the nodes PreFilter left (findNodesThatPassFilters).
	toFind := numFeasibleNodesToFind(s.percent, len(s.order))
	if !s.fw.HasScorePlugins() {
		toFind = 1
	}
	feasible, rejectedBy, err := s.filter(ctx, state, pod, toFind)
	if err != nil {
		return outcome{}, err
	}
	if len(feasible) == 0 {
		if len(s.order) == 0 {
			rejectedBy = append(rejectedBy, "PreFilter result")
		}
		return outcome{node: -1, rejectedBy: rejectedBy}, nil
	}
	chosen := feasible[0]
	if len(feasible) > 1 {
		if chosen, err = s.score(ctx, state, pod, feasible); err != nil {
			return outcome{}, err
		}
	}
	if byModel {
		state.SetSkipFilterPlugins(skip)
		if err := s.allocatorAgrees(ctx, state, pod, chosen); err != nil {
			return outcome{}, err
		}
	}
	name := s.nodes[chosen].Node().Name
	pod.Spec.NodeName = name
	if st := s.fw.RunReservePluginsReserve(ctx, state, pod, name); !st.IsSuccess() {
		s.fw.RunReservePluginsUnreserve(ctx, state, pod, name)
		pod.Spec.NodeName = ""
		if !st.IsRejected() {
			return outcome{}, fmt.Errorf("Reserve on %s: %w", name, st.AsError())
		}
		return outcome{node: -1, rejectedBy: []string{st.Plugin() + " (Reserve)"}}, nil
	}
	pi, err := framework.NewPodInfo(pod)
	if err != nil {
		return outcome{}, err
	}
	if s.bound {
		// As the scheduler's cache adds a bound pod (the soak).
		s.nodes[chosen].(*framework.NodeInfo).AddPodInfo(pi)
	} else if err := s.snap.AssumePod(pi); err != nil {
		return outcome{}, err
	}
	gpu, firstFit := -1, -1
	if s.choice != ChoiceFirstFit && s.request.share > 0 {
		// The oracle's device replaces the allocator's first fit in the
		// claim's allocation, as if the allocator had chosen it.
		gpu = s.oracleGPU(chosen, nil)
		if gpu < 0 {
			return outcome{}, fmt.Errorf("the %s device choice finds no GPU of node %s with %d shares left, yet the allocator placed the pod there", s.choice, name, s.request.share)
		}
		if firstFit = s.shares.firstFit(chosen, s.request.share); gpu != firstFit {
			s.moved++
		}
	}
	if s.dra != nil {
		if err := s.dra.claims.commit(pod.UID, pod.Name, moveShareTo(name, gpu, firstFit)); err != nil {
			return outcome{}, err
		}
	}
	s.refresh(chosen)
	return outcome{node: chosen, gpu: gpu}, nil
}

// allocatorAgrees runs every Filter plugin, DynamicResources' allocator
// included, on the node the replay chose by its device model: the
// allocation Reserve commits is the allocator's own, and a model that
// strays from it stops the replay.
func (s *simulation) allocatorAgrees(ctx context.Context, state fwk.CycleState, pod *v1.Pod, chosen int) error {
	st := s.fw.RunFilterPlugins(ctx, state, pod, s.nodes[chosen])
	if !st.IsSuccess() {
		return fmt.Errorf("the replay's device model found node %s feasible, Filter did not (%s: %s)",
			s.nodes[chosen].Node().Name, st.Plugin(), st.Message())
	}
	return nil
}

// filter runs the Filter plugins in rotation order, in parallel chunks,
// until toFind nodes fit or every candidate was tried.
func (s *simulation) filter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, toFind int) ([]int, []string, error) {
	n := len(s.order)
	if n == 0 {
		return nil, nil, nil
	}
	start := s.nextStart % n
	var feasible []int
	var rejectedBy []string
	processed := 0
	for off := 0; off < n && len(feasible) < toFind; {
		chunk := n - off
		if toFind < n {
			chunk = min(chunk, max(toFind-len(feasible), 8*s.par))
		}
		s.fw.Parallelizer().Until(ctx, chunk, func(k int) {
			idx := s.order[(start+off+k)%n]
			if s.prescreen {
				if st := s.canFit(idx); st != nil {
					s.statuses[off+k] = st
					return
				}
			}
			s.statuses[off+k] = s.fw.RunFilterPlugins(ctx, state, pod, s.nodes[idx])
		}, "Filter")
		for k := off; k < off+chunk; k++ {
			st := s.statuses[k]
			s.statuses[k] = nil
			if len(feasible) >= toFind {
				continue // only clearing the buffer
			}
			processed = k + 1
			switch {
			case st.IsSuccess():
				feasible = append(feasible, s.order[(start+k)%n])
			case st.IsRejected():
				if p := st.Plugin(); !slices.Contains(rejectedBy, p) {
					rejectedBy = append(rejectedBy, p)
				}
			default:
				return nil, nil, fmt.Errorf("Filter on %s: %w", s.nodes[s.order[(start+k)%n]].Node().Name, st.AsError())
			}
		}
		off += chunk
	}
	s.nextStart = (s.nextStart + processed) % len(s.nodes)
	slices.Sort(rejectedBy)
	return feasible, rejectedBy, nil
}

// score returns the feasible node with the highest weighted total score,
// the lowest fleet index among equals.
func (s *simulation) score(ctx context.Context, state fwk.CycleState, pod *v1.Pod, feasible []int) (int, error) {
	if !s.fw.HasScorePlugins() {
		return slices.Min(feasible), nil
	}
	infos := make([]fwk.NodeInfo, len(feasible))
	for i, idx := range feasible {
		infos[i] = s.nodes[idx]
	}
	if st := s.fw.RunPreScorePlugins(ctx, state, pod, infos); !st.IsSuccess() {
		return 0, fmt.Errorf("PreScore: %w", st.AsError())
	}
	scores, st := s.fw.RunScorePlugins(ctx, state, pod, infos)
	if !st.IsSuccess() {
		return 0, fmt.Errorf("Score: %w", st.AsError())
	}
	best := -1
	var bestScore int64
	for i := range scores {
		idx := feasible[i]
		if best < 0 || scores[i].TotalScore > bestScore || scores[i].TotalScore == bestScore && idx < best {
			best, bestScore = idx, scores[i].TotalScore
		}
	}
	return best, nil
}
