package devicefit

import (
	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/helper"
)

// ownRules are the pod's own rules for where it may run that upstream's
// Filter plugins judge from the node object alone: NodeAffinity
// (spec.nodeSelector and the required node affinity, metadata.name
// included), TaintToleration (NoSchedule and NoExecute taints) and
// NodeUnschedulable (a cordoned node, unless the pod tolerates
// node.kubernetes.io/unschedulable). A node that fails them is one the pod
// itself rules out; a node that passes them is one the user expects the
// scheduler's message to say something about.
type ownRules struct {
	affinity    nodeaffinity.RequiredNodeAffinity
	tolerations []v1.Toleration
	// comparisonOperators: the TaintTolerationComparisonOperators gate,
	// as TaintToleration reads it.
	comparisonOperators bool
	logger              klog.Logger
}

func newOwnRules(logger klog.Logger, pod *v1.Pod, comparisonOperators bool) ownRules {
	return ownRules{
		affinity:            nodeaffinity.GetRequiredNodeAffinity(pod),
		tolerations:         pod.Spec.Tolerations,
		comparisonOperators: comparisonOperators,
		logger:              logger,
	}
}

// PodRules returns whether the pod's own node rules (ownRules: node
// selector, required node affinity, tolerations) admit a node, under this
// process's feature gates: the nodes on which a pending pod's message gives
// the real reason. For tools that explain the scheduler's messages.
func PodRules(logger klog.Logger, pod *v1.Pod) func(*v1.Node) bool {
	r := newOwnRules(logger, pod, enabled(features.TaintTolerationComparisonOperators))
	return r.admit
}

// unschedulableTaint is the taint a cordoned node implies (NodeUnschedulable).
var unschedulableTaint = v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}

// admit reports whether NodeAffinity, TaintToleration and NodeUnschedulable
// would all pass the node. A required affinity that does not parse matches
// no node, as NodeAffinity's Filter treats it.
func (r *ownRules) admit(node *v1.Node) bool {
	if node == nil {
		return false
	}
	if ok, err := r.affinity.Match(node); !ok || err != nil {
		return false
	}
	if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(r.logger, node.Spec.Taints, r.tolerations,
		helper.DoNotScheduleTaintsFilterFunc(), r.comparisonOperators); untolerated {
		return false
	}
	return !node.Spec.Unschedulable ||
		corev1helpers.TolerationsTolerateTaint(r.logger, r.tolerations, &unschedulableTaint, r.comparisonOperators)
}

// anyAdmitted reports whether some node the list admits (admitted, aligned
// with nodes) is one the pod's own rules admit too. When none is, the list
// would hide the real reason on every node the pod could otherwise use: the
// framework writes only "didn't satisfy plugin(s) [DeviceFit]" for a node
// left out. A pod without node rules passes at the first admitted node.
func (r *ownRules) anyAdmitted(nodes []fwk.NodeInfo, admitted []bool) bool {
	for j, ni := range nodes {
		if admitted[j] && r.admit(ni.Node()) {
			return true
		}
	}
	return false
}
