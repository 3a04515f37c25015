package devicefit

import (
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/devices"
)

// maxLists bounds the candidate lists kept between cycles: a fleet's pods
// come in a few dozen shapes (GPUFleet: 20), and each list costs a few
// hundred KB at 5000 nodes.
const maxLists = 32

// nameList is a candidate list kept from an earlier cycle, so that the next
// pod of the same shape inserts and deletes only the names of the nodes
// whose verdict or object changed since, instead of hashing thousands of
// names per pod (which cost as much as the walk that decides them).
//
// Correctness does not rest on the pod's shape or on any change signal of
// the node infos: names is kept equal to {name of entries[j] : admitted[j]}
// by comparing, position by position, the admitted verdicts and the cache
// entries (one per node object, so an unchanged entry means an unchanged
// name) of the cycle with those the list was last brought up to. The shape
// (listKey) only picks the list that is likely to need the fewest changes.
// The entries are remembered by ID, not by pointer: a list of a shape
// that stops coming would otherwise keep every node object it saw alive.
type nameList struct {
	entries  []uint64
	admitted []bool
	// at[j] is the name inserted for position j while admitted[j].
	at    []string
	names sets.Set[string]
}

// listKey is the pod's shape as far as the candidate list goes: its device
// demand, its devicefit.io annotations and whether and above which
// priority it may preempt.
func listKey(s *preFilterState, pod *v1.Pod, p preemptor) string {
	var b strings.Builder
	for _, r := range s.demand {
		b.WriteString(string(r.Name))
		b.WriteByte('=')
		b.WriteString(strconv.FormatInt(r.Count, 10))
		b.WriteByte(';')
	}
	for _, a := range devices.SelectorAnnotations(pod.Annotations) {
		b.WriteString(a)
		b.WriteByte('\n')
	}
	if s.deviceFree {
		b.WriteString("free;")
	}
	if p.canPreempt {
		b.WriteString(strconv.FormatInt(int64(p.priority), 10))
	}
	return b.String()
}

// listNames returns the names of the admitted nodes: the kept list for
// key, brought up to this cycle. The set is the list's own, changed by a
// later cycle: read it within this one, and hand it out only through
// upstream.KeptResult.
func (pl *DeviceFit) listNames(key string, nodes []fwk.NodeInfo, entries []*devices.NodeDevices, admitted []bool) sets.Set[string] {
	l := pl.lists[key]
	if l == nil || len(l.entries) != len(nodes) {
		if l == nil && len(pl.lists) >= maxLists {
			// Evict any: shapes that come back are rebuilt once.
			for k := range pl.lists {
				delete(pl.lists, k)
				break
			}
		}
		l = &nameList{
			entries:  make([]uint64, len(nodes)),
			admitted: make([]bool, len(nodes)),
			at:       make([]string, len(nodes)),
			names:    sets.New[string](),
		}
		pl.lists[key] = l
	}
	// Deletes first: a node that moved to another position must not lose
	// the name its new position inserts.
	for j := range nodes {
		if l.admitted[j] && (!admitted[j] || changed(l.entries[j], entries[j])) {
			delete(l.names, l.at[j])
			l.at[j] = ""
		}
	}
	for j, ni := range nodes {
		if admitted[j] && (!l.admitted[j] || changed(l.entries[j], entries[j])) {
			name := ni.Node().Name
			l.names.Insert(name)
			l.at[j] = name
		}
		l.admitted[j], l.entries[j] = admitted[j], entryID(entries[j])
	}
	return l.names
}

// changed reports whether position j holds another node object than when
// the list was last brought up to date (was: the entry's ID then). A nil
// entry, or one no cache built (ID 0), says nothing of the node object, so
// it counts as changed.
func changed(was uint64, now *devices.NodeDevices) bool {
	return now == nil || now.ID() == 0 || was != now.ID()
}

// entryID is e's ID, 0 for nil.
func entryID(e *devices.NodeDevices) uint64 {
	if e == nil {
		return 0
	}
	return e.ID()
}
