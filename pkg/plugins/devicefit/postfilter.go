package devicefit

import (
	"context"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/devicefit/devicefit/pkg/plugins/shared"
)

// PostFilter gives the reasons the candidate list hid. For every node
// PreFilter left out, the framework records only "node(s) didn't satisfy
// plugin(s) [DeviceFit]". When the pod then fails on the nodes it named
// (another plugin turned them down: CPU, host ports, pod affinity, ...),
// PostFilter runs the profile's Filter plugins on each node left out that
// the pod's own node selector, affinity and tolerations admit (shared.NodeRules)
// and records their verdict, so that the pod's PodScheduled message counts
// those nodes under the reasons the scheduler would have given had it
// filtered them. (When no named node is one the pod's rules admit,
// PreFilter names all nodes instead, and the framework filters them all.)
// When DevicePack returned the list (carry.go), the framework names it for
// the rest; PostFilter names DeviceFit again.
//
// It never makes a pod schedulable. Enabled at multiPoint it runs after
// DefaultPreemption, which has read the statuses by then; it costs one
// Filter pass over those nodes, only for a pod found unschedulable.
func (pl *DeviceFit) PostFilter(ctx context.Context, cycleState fwk.CycleState, pod *v1.Pod, statuses fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	s, err := getPreFilterState(cycleState)
	if err != nil || s.listed == nil || pl.handle == nil || pl.handle.SnapshotSharedLister() == nil {
		// DeviceFit skipped the pod or named all nodes: nothing is hidden.
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	nodes, err := pl.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return nil, fwk.AsStatus(fmt.Errorf("listing the snapshot's nodes: %w", err))
	}
	m, ownMap := statuses.(*framework.NodeToStatus)
	if ownMap {
		m.SetAbsentNodesStatus(OwnAbsentStatus(cycleState, m.AbsentNodesStatus()))
	}
	logger := klog.FromContext(ctx)
	hidden := pl.filterHidden(ctx, cycleState, s, pod, nodes, explicitNodes(statuses))
	if len(hidden) == 0 {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	// The scheduler's own map takes a status per node, and FitError counts
	// the reasons from it. Another caller's map (an embedder's) gets the
	// histogram in this plugin's status, which the framework appends to the
	// PostFilter message.
	if ownMap {
		for name, status := range hidden {
			m.Set(name, status)
		}
		logger.V(5).Info("Filtered the nodes the candidate list left out", "pod", klog.KObj(pod), "nodes", len(hidden))
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	return nil, fwk.NewStatus(fwk.Unschedulable, histogram(Name+" on the nodes it left out: ", hidden))
}

// explicitNodes are the nodes some Filter judged (the list's, and a
// nominated node the framework tried first).
func explicitNodes(statuses fwk.NodeToStatusReader) sets.Set[string] {
	m, ok := statuses.(*framework.NodeToStatus)
	if !ok {
		return nil
	}
	out := sets.New[string]()
	m.ForEachExplicitNode(func(name string, _ *fwk.Status) { out.Insert(name) })
	return out
}

// filterHidden runs the profile's Filter plugins on each node the list left
// out, no Filter judged and the pod's own rules admit, and returns their
// rejections by node. DeviceFit's Filter runs on a copy of the state that
// keeps it from counting rejections again: candidates counted them.
func (pl *DeviceFit) filterHidden(ctx context.Context, cycleState fwk.CycleState, s *preFilterState, pod *v1.Pod, nodes []fwk.NodeInfo, judged sets.Set[string]) map[string]*fwk.Status {
	logger := klog.FromContext(ctx)
	rules := shared.NewNodeRules(logger, pod, pl.taintComparisonOperators)
	quiet := *s
	quiet.quiet = true
	state := cycleState.Clone()
	state.Write(preFilterStateKey, &quiet)
	out := map[string]*fwk.Status{}
	for _, ni := range nodes {
		node := ni.Node()
		if node == nil || s.listed.Has(node.Name) || judged.Has(node.Name) || !rules.Admit(node) {
			continue
		}
		status := pl.handle.RunFilterPlugins(ctx, state, pod, ni)
		if status.IsSuccess() {
			// The list is a superset of the feasible nodes: a node left out
			// that passes is a defect of candidates, worth a log line.
			logger.Error(nil, "The candidate list left out a node that passes every Filter", "pod", klog.KObj(pod), "node", klog.KObj(node))
			continue
		}
		out[node.Name] = status
	}
	return out
}

// histogram formats statuses' reasons as FitError does: "3 reason, 1
// other", sorted.
func histogram(prefix string, statuses map[string]*fwk.Status) string {
	counts := map[string]int{}
	for _, s := range statuses {
		for _, r := range s.Reasons() {
			counts[r]++
		}
	}
	parts := make([]string, 0, len(counts))
	for r, n := range counts {
		parts = append(parts, fmt.Sprintf("%d %s", n, r))
	}
	sort.Strings(parts)
	return prefix + strings.Join(parts, ", ") + "."
}
