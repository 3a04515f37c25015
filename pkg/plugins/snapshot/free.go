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
	if cs == nil || pod == nil || !cs.IsPodGroupSchedulingCycle() {
		return c
	}
	group := cs.GetPodGroupSchedulingCycle()
	if group == nil {
		return c
	}
	key := fwk.StateKey(string(t.key) + "/free/" + string(pod.UID))
	if d, err := group.Read(key); err == nil {
		if p, ok := d.(*firstFree); ok && p.valid(c.Kinds) {
			// A Cycle of its own: the Table's other readers keep theirs.
			pinned := *c
			pinned.free = p.free
			return &pinned
		}
	}
	group.Write(key, &firstFree{kinds: c.Kinds, free: c.free})
	return c
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
