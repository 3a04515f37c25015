package snapshot

import (
	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// readMoved brings the rows up to nodes reading again only the node infos
// that moved, and reports whether it could; false leaves the rows to
// readAll (some may have been read already, which it tolerates: every
// row's contribution to the sums is taken out when it is read again).
//
// Why: readAll reads every node info of the cluster in every cycle (its
// node object, its pod list and last pod, its generation) and the node
// cache's entry of each, four cache misses per node; at 15,000 nodes it
// was most of what a pod's PreFilter cost (docs/performance.md), though a
// cycle usually follows one assumed pod. The framework gives a plugin no
// list of the node infos that changed, and a generation alone is no
// signal (NodeState). But what a row holds is of the node object and the
// pods alone, and a node info's pods change only by pods added, which
// come last as new PodInfos (AddPodInfo appends; the cache's update of a
// pod removes it and adds the new one; a PodInfo the row holds cannot be
// freed and its address reused), and by pods removed, which lower the
// count. So a row whose node info, node object, pod count and last pod
// are as it read them is skipped on two cache misses (the node info's
// first line, its last pod's) instead of four and the cache's
// bookkeeping; the others are read as readAll reads them. Pod-group
// cycles, whose snapshot assumes and forgets pods between PreFilters, and
// the cycle after one, read every row.
//
// It declines when positions may not line up or the Table must start
// something over: another number of nodes, a node cache due to start its
// kind table over or holding names no longer in the list (only readAll
// drops them), a full shape table.
func (t *Table) readMoved(nodes []fwk.NodeInfo) bool {
	n := len(nodes)
	if n == 0 || n != len(t.rows) || len(t.entries) != n || t.cache.Len() > n ||
		len(t.shapes) >= maxShapesPerRow*n+spareShapes || len(t.free) != len(t.cache.Kinds()) {
		return false
	}
	for j, ni := range nodes {
		r := &t.rows[j]
		if ni != nil && r.Info == ni && r.entryID != 0 && !r.movedQuick(ni) {
			continue
		}
		var node *v1.Node
		key := NodeState{}
		if ni != nil {
			node, key = ni.Node(), StateOf(ni)
		}
		e, ok := t.cache.Entry(node)
		if !ok {
			return false
		}
		t.entries[j] = e
		if key, moved := r.moved(ni, key, e); moved {
			// A new node object may bring a new device kind.
			if k := len(t.cache.Kinds()); k > len(t.free) {
				t.free = append(t.free, make([]int64, k-len(t.free))...)
			}
			t.reread(j, ni, key, e, false)
		}
	}
	return true
}

// movedQuick reports whether the row's node info (the one the row was read
// from) moved: another node object, pod count or last pod (readMoved says
// why that suffices).
func (r *Row) movedQuick(ni fwk.NodeInfo) bool {
	// The scheduler's own node infos are read without dynamic calls: this
	// runs once per node and cycle.
	if fi, ok := ni.(*framework.NodeInfo); ok {
		return fi.Node() != r.obj || r.podsMoved(fi.Pods)
	}
	return ni.Node() != r.obj || r.podsMoved(ni.GetPods())
}

func (r *Row) podsMoved(pods []fwk.PodInfo) bool {
	n := len(pods)
	return n != r.key.Pods || n > 0 && any(pods[n-1]) != r.key.Last
}
