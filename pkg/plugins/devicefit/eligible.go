package devicefit

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"

	"github.com/devicefit/devicefit/pkg/plugins/shared"
)

// PodRules returns whether the pod's own node rules (shared.NodeRules: node
// selector, required node affinity, tolerations) admit a node, under this
// process's feature gates: the nodes on which a pending pod's message gives
// the real reason. For tools that explain the scheduler's messages.
func PodRules(logger klog.Logger, pod *v1.Pod) func(*v1.Node) bool {
	r := shared.NewNodeRules(logger, pod, enabled(features.TaintTolerationComparisonOperators))
	return r.Admit
}

// anyAdmitted reports whether some node the list admits (admitted, aligned
// with nodes) is one the pod's own rules admit too. When none is, the list
// would hide the real reason on every node the pod could otherwise use: the
// framework writes only "didn't satisfy plugin(s) [DeviceFit]" for a node
// left out. A pod without node rules passes at the first admitted node.
func anyAdmitted(r *shared.NodeRules, nodes []fwk.NodeInfo, admitted []bool) bool {
	for j, ni := range nodes {
		if admitted[j] && r.Admit(ni.Node()) {
			return true
		}
	}
	return false
}
