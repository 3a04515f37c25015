package devicefit

import (
	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/devicefit/devicefit/pkg/plugins/snapshot"
)

// preemptor is what the candidate list needs of the pod as a preemptor:
// a node whose devices are taken stays in the list only when preemption
// could free them there.
type preemptor struct {
	priority   int32
	canPreempt bool
}

func newPreemptor(pod *v1.Pod) preemptor {
	return preemptor{
		priority:   corev1helpers.PodPriority(pod),
		canPreempt: pod.Spec.PreemptionPolicy == nil || *pod.Spec.PreemptionPolicy != v1.PreemptNever,
	}
}

// mayPreempt reports whether preemption could free anything on the row's
// node for the pod: some pod there has a lower priority. A superset of
// what DefaultPreemption would find (PDBs and the devices those pods hold
// aside). The row keeps the lowest priority as the node's pods move
// (snapshot.Row.MinPriority): reading each pod's priority per cycle cost
// a cache miss per pod on every full node, for every pod.
func (p preemptor) mayPreempt(r *snapshot.Row) bool {
	return p.canPreempt && r.MinPriority < p.priority
}
