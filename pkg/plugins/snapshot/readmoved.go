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
	if n == 0 || n != len(t.rows) || len(t.marks) != n || len(t.entries) != n || t.cache.Len() > n ||
		len(t.shapes) >= maxShapesPerRow*n+spareShapes || len(t.free) != len(t.cache.Kinds()) {
		return false
	}
	for j, ni := range nodes {
		// Pointers compared, not interfaces: an interface comparison is
		// a runtime call per node (ifaceeq, efaceeq).
		m := &t.marks[j]
		fi, ok := ni.(*framework.NodeInfo)
		if ok && fi == m.info && fi.Node() == m.obj && len(fi.Pods) == m.pods {
			if m.pods == 0 {
				continue
			}
			if pi, ok := fi.Pods[m.pods-1].(*framework.PodInfo); ok && pi == m.last {
				continue
			}
		}
		if !t.readRow(j, ni) {
			return false
		}
	}
	return true
}

// readRow reads row j again from ni if its state or node object moved;
// false when the node cache has no entry for the node object (readAll
// must refresh it). Under Table.mu.
func (t *Table) readRow(j int, ni fwk.NodeInfo) bool {
	r := &t.rows[j]
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
	return true
}

// mark is what readMoved compares of a row: the scheduler's node info and
// the node object it was read from, its pod count and last pod. A row
// without a cache entry, read from another NodeInfo implementation or
// whose last pod is another PodInfo implementation has the zero mark and
// is compared in full (readRow). The marks are kept apart from the rows
// because readMoved streams them in every cycle beside a line of every
// node info: 32 bytes a node against the two or three lines of a 176-byte
// Row it read before. With pointers compared instead of interfaces, that
// took a refresh at 15,000 nodes from about 400 to 250 µs with the caches
// cold (BenchmarkRefresh, docs/performance.md).
type mark struct {
	info *framework.NodeInfo
	obj  *v1.Node
	pods int
	last *framework.PodInfo
}

// mark is the row's mark, as it was just read.
func (r *Row) mark() mark {
	fi, ok := r.Info.(*framework.NodeInfo)
	if r.entryID == 0 || !ok {
		return mark{}
	}
	m := mark{info: fi, obj: r.obj, pods: r.key.Pods}
	if m.pods > 0 {
		if m.last, ok = r.key.Last.(*framework.PodInfo); !ok {
			return mark{}
		}
	}
	return m
}
