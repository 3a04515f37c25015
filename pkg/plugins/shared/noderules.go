package shared

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// NodeRules are the pod's own rules for where it may run that upstream's
// Filter plugins judge from the node object alone: NodeAffinity
// (spec.nodeSelector and the required node affinity, metadata.name
// included), TaintToleration (NoSchedule and NoExecute taints) and
// NodeUnschedulable (a cordoned node, unless the pod tolerates
// node.kubernetes.io/unschedulable). A node that fails them is one the pod
// itself rules out; a node that passes them is one the user expects the
// scheduler's message to say something about. DeviceFit reads them to keep
// its messages exact, DevicePack to know which nodes its shortlist may name.
type NodeRules struct {
	affinity    nodeaffinity.RequiredNodeAffinity
	tolerations []v1.Toleration
	// comparisonOperators: the TaintTolerationComparisonOperators gate,
	// as TaintToleration reads it.
	comparisonOperators bool
	logger              klog.Logger
	// pod is the pod they are of, key their Key (computed on first use).
	pod *v1.Pod
	key string
}

// NewNodeRules returns the pod's own node rules.
func NewNodeRules(logger klog.Logger, pod *v1.Pod, comparisonOperators bool) NodeRules {
	return NodeRules{
		affinity:            nodeaffinity.GetRequiredNodeAffinity(pod),
		tolerations:         pod.Spec.Tolerations,
		comparisonOperators: comparisonOperators,
		logger:              logger,
		pod:                 pod,
	}
}

// Key names the rules: two pods whose rules have the same key get the same
// verdicts on every node object (the node selector, the required node
// affinity and the tolerations, as written, and the gate). Pods of one
// workload share it, so a verdict on an unchanged node can be remembered
// between their cycles (snapshot.Cycle.Judge).
func (r *NodeRules) Key() string {
	if r.key != "" {
		return r.key
	}
	var b strings.Builder
	b.WriteString(strconv.FormatBool(r.comparisonOperators))
	for _, k := range slices.Sorted(maps.Keys(r.pod.Spec.NodeSelector)) {
		b.WriteString("\x00s")
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(r.pod.Spec.NodeSelector[k])
	}
	if a := r.pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		b.WriteString("\x00a")
		b.WriteString(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.String())
	}
	for i := range r.tolerations {
		b.WriteString("\x00t")
		b.WriteString(r.tolerations[i].String())
	}
	r.key = b.String()
	return r.key
}

// unschedulableTaint is the taint a cordoned node implies (NodeUnschedulable).
var unschedulableTaint = v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}

// Admit reports whether NodeAffinity, TaintToleration and NodeUnschedulable
// would all pass the node. A required affinity that does not parse matches
// no node, as NodeAffinity's Filter treats it.
func (r *NodeRules) Admit(node *v1.Node) bool {
	if node == nil {
		return false
	}
	if ok, err := r.affinity.Match(node); !ok || err != nil {
		return false
	}
	if r.untolerated(node.Spec.Taints, v1.TaintEffectNoSchedule, v1.TaintEffectNoExecute) {
		return false
	}
	return !node.Spec.Unschedulable ||
		corev1helpers.TolerationsTolerateTaint(r.logger, r.tolerations, &unschedulableTaint, r.comparisonOperators)
}

// PreferAvoided reports whether the node has a PreferNoSchedule taint the
// pod does not tolerate: TaintToleration's Score then tells it apart.
func (r *NodeRules) PreferAvoided(node *v1.Node) bool {
	return r.untolerated(node.Spec.Taints, v1.TaintEffectPreferNoSchedule, v1.TaintEffectPreferNoSchedule)
}

// untolerated reports whether some taint of one of the two effects is not
// tolerated: FindMatchingUntoleratedTaint with TaintToleration's filter
// (NoSchedule and NoExecute for Filter), without the filtered copy it
// allocates for every tainted node.
func (r *NodeRules) untolerated(taints []v1.Taint, a, b v1.TaintEffect) bool {
	for i := range taints {
		t := &taints[i]
		if (t.Effect == a || t.Effect == b) && !corev1helpers.TolerationsTolerateTaint(r.logger, r.tolerations, t, r.comparisonOperators) {
			return true
		}
	}
	return false
}
