package snapshot

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/devices"
)

// RefreshFor is Refresh for scheduling pod. In a pod-group cycle the pod's
// Cycle then weighs the free devices per kind (FreeByKind) as the pod's
// first refresh in the cycle counted them, whatever the placements assumed
// since: DevicePack compares a group's placements by its pods' scores,
// whose scarcity terms must weigh the same supply in every placement. The
// counts are kept in the PodGroupCycleState, with the kind table they
// index; a cache that started its kind table over counts anew.
func (t *Table) RefreshFor(cs fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) *Cycle {
	c := t.Refresh(cs, nodes)
	group, key := t.pinKey(cs, pod)
	if group == nil {
		return c
	}
	if p := readPin(group, key); p != nil && p.valid(c.Kinds) {
		// A Cycle of its own: the Table's other readers keep theirs.
		pinned := *c
		pinned.free = p.free
		return &pinned
	}
	group.Write(key, &firstFree{kinds: c.Kinds, free: c.free})
	return c
}

// Pinned returns, in a pod-group cycle, the cache's kind table and the
// free devices per kind that the pod's first refresh in the cycle counted
// (RefreshFor), without a refresh: a pod's later placements read the
// node objects' entries (Cache.Lookup) and those counts, and walking every
// node for each would cost a pod-group cycle a walk per pod and placement.
// False outside a pod-group cycle, before the pod's first refresh, or when
// the cache has started its kind table over since.
func (t *Table) Pinned(cs fwk.CycleState, pod *v1.Pod) ([]devices.DeviceKind, []int64, bool) {
	group, key := t.pinKey(cs, pod)
	if group == nil {
		return nil, nil, false
	}
	kinds := t.cache.Kinds()
	p := readPin(group, key)
	if p == nil || !p.valid(kinds) {
		return nil, nil, false
	}
	return kinds, p.free, true
}

// pinKey is the pod-group cycle state and the key of the pod's counts in
// it; nil outside a pod-group cycle.
func (t *Table) pinKey(cs fwk.CycleState, pod *v1.Pod) (fwk.PodGroupCycleState, fwk.StateKey) {
	if cs == nil || pod == nil || !cs.IsPodGroupSchedulingCycle() {
		return nil, ""
	}
	group := cs.GetPodGroupSchedulingCycle()
	if group == nil {
		return nil, ""
	}
	return group, fwk.StateKey(string(t.key) + "/free/" + string(pod.UID))
}

func readPin(group fwk.PodGroupCycleState, key fwk.StateKey) *firstFree {
	d, err := group.Read(key)
	if err != nil {
		return nil
	}
	p, _ := d.(*firstFree)
	return p
}

// firstFree is a pod's free devices per kind at its first refresh in a
// pod-group cycle, and the kind table they index (the cache's, which is
// only ever appended to until it starts over).
type firstFree struct {
	kinds []devices.DeviceKind
	free  []int64
}

// Clone implements fwk.StateData; firstFree is never modified.
func (p *firstFree) Clone() fwk.StateData { return p }

// valid: kinds still begins with the table the counts index.
func (p *firstFree) valid(kinds []devices.DeviceKind) bool {
	return len(kinds) >= len(p.kinds) && slices.Equal(kinds[:len(p.kinds)], p.kinds)
}
