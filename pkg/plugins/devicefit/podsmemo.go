package devicefit

import (
	"math"
	"slices"

	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/devices"
)

// podsMemo is what the candidate list needs of the pods on one node: the
// free devices of each of the node's device resources (allocatable minus
// the pods' requests, not clamped: the comparison is the same as with the
// request map) and the lowest priority among the pods. Reading them costs a
// few cache misses per node (the request map) and per pod (its priority),
// on every node that is full, for every pod: most of PreFilter's walk.
//
// Both are functions of the node object (allocatable) and of the set of
// pods on the node: the node info's requests are the sum of its pods'
// (NodeInfo.update, v1.37.2), a pod's priority and device requests are
// immutable (in-place resize changes CPU and memory only, and the cache
// gives a resized pod a new PodInfo anyway). So the memo is keyed on
// exactly those: the cache entry (one per node object) and the identity of
// every PodInfo on the node, compared element by element. The node info's
// generation is not used: the snapshot's AssumePod/ForgetPod (pod-group
// scheduling) change the pods but restore the old generation
// (snapshot.NodeState); they do change the pod list, which the comparison
// sees (TestPreFilterAcrossPlacements).
type podsMemo struct {
	// entry is the cache entry's ID (NodeDevices.ID: the node object's,
	// without holding on to it).
	entry uint64
	pods  []fwk.PodInfo
	// free is aligned with entry.Devices.
	free []int64
	// minPriority is the lowest priority of the pods, MaxInt32 for none.
	minPriority int32
}

// memoFor returns the memo of node info ni at position j of the cycle's
// nodes, whose cache entry is e, computing it when the node object or its
// pods changed since it was last computed at that position. PreFilter only
// (pl.memos is under scratchMu).
func (s *preFilterState) memoFor(j int, ni fwk.NodeInfo, e *devices.NodeDevices) *podsMemo {
	m := &s.memos[j]
	pods := ni.GetPods()
	if m.entry == e.ID() && m.entry != 0 && slices.Equal(m.pods, pods) {
		return m
	}
	m.entry = e.ID()
	m.pods = append(m.pods[:0], pods...)
	// Past the end, the pods of an earlier, fuller node: not kept alive.
	clear(m.pods[len(m.pods):cap(m.pods)])
	m.free = slices.Grow(m.free[:0], len(e.Devices))[:len(e.Devices)]
	requested := ni.GetRequested().GetScalarResources()
	for i := range e.Devices {
		d := &e.Devices[i]
		m.free[i] = d.Allocatable - requested[d.Resource]
	}
	m.minPriority = math.MaxInt32
	for _, pi := range pods {
		m.minPriority = min(m.minPriority, corev1helpers.PodPriority(pi.GetPod()))
	}
	return m
}

// mayPreempt reports whether preemption could free anything on the node
// for the pod: some pod there has a lower priority. A superset of what
// DefaultPreemption would find (PDBs and the devices those pods hold aside).
func (p preemptor) mayPreempt(m *podsMemo) bool {
	return p.canPreempt && m.minPriority < p.priority
}
