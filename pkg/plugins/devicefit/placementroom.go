package devicefit

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/metrics"
	"github.com/devicefit/devicefit/pkg/plugins/upstream"
)

// placementRoom rejects a pod group's member, in a pod-group cycle, when
// the placement being tried has fewer free devices of some resource than
// the group still needs there; nil when it has enough, or cannot tell.
//
// Why: the scheduler tries a pod group in every placement its generator
// makes (one per NVLink clique under TopologyPlacementGenerator), running
// the whole pod cycle, Filter, Score and an assume, for one member after
// another until GangScheduling's PlacementFeasible sees that minCount can
// no longer be met (schedule_one_podgroup.go). In a clique with room for
// two members of four, three pod cycles buy the certainty that the third
// fails. No other plugin may judge a placement before its pods: v1.37.2
// takes GangScheduling as the only PlacementFeasible plugin
// (frameworkruntime.NewFramework). So DeviceFit judges the placement at its
// first member's PreFilter, and the placement's other members read that
// verdict. It also rejects a placement that is the twin of one tried
// before it in the cycle (twins.go).
//
// The verdict compares, for each device resource, the free devices on the
// placement's nodes (allocatable minus requested, summed) with the least
// the group can still need: the smallest demands of its unscheduled
// members, as many as minCount still wants. Whole devices of an extended
// resource are never shared, so a group short of them cannot fit, and the
// verdict rejects only placements that would fail anyway; the framework
// then stops at that member (remaining + scheduled < minCount), and the
// placement stays open to the group's preemption (Unschedulable, not
// unresolvable). It stands aside for DRA: a claim's devices, and a
// resource a DeviceClass serves, are not in the nodes' allocatable.
func (pl *DeviceFit) placementRoom(cs fwk.CycleState, pod *v1.Pod) *fwk.Status {
	group := podGroupCycle(cs)
	if group == nil || pod.Spec.SchedulingGroup == nil || pod.Spec.SchedulingGroup.PodGroupName == nil || pl.handle == nil {
		return nil
	}
	placement := cs.GetPlacementCycleState()
	if placement == nil {
		return nil
	}
	name := *pod.Spec.SchedulingGroup.PodGroupName
	key := fwk.StateKey("PreFilter" + Name + "/placement/" + pod.Namespace + "/" + name)
	if d, err := placement.Read(key); err == nil {
		if v, ok := d.(*roomVerdict); ok {
			return v.status
		}
	}
	facts := pl.groupFacts(group, pod.Namespace, name)
	var status *fwk.Status
	if len(facts.need) > 0 {
		if placementName, nodes, ok := upstream.Placement(pl.handle); ok {
			if status = shortOf(facts.need, nodes); status != nil {
				pl.rejections[metrics.ReasonPlacementRoom].Inc()
			} else if facts.twins {
				status = pl.twinOf(group, pod.Namespace+"/"+name, facts, placementName, nodes)
			}
		}
	}
	placement.Write(key, &roomVerdict{status: status})
	return status
}

// roomVerdict is placementRoom's verdict on one placement for one group.
type roomVerdict struct{ status *fwk.Status }

func (v *roomVerdict) Clone() fwk.StateData { return v }

// groupFacts are what placementRoom reads of the pod group ns/name, once
// per pod-group cycle (the members and their demands stay through its
// placements): need, the least it still needs of each device resource
// (for each, the sum of the smallest demands of its unscheduled members,
// minCount less the scheduled ones of them), nil when it needs none or is
// out of reach of the check (no gang policy, claims, a resource a
// DeviceClass serves, a malformed request); its topology key; and whether
// its members may be placed in a placement's twin (twins.go).
type groupFacts struct {
	need        devices.Demand
	topologyKey string
	twins       bool
}

func (f *groupFacts) Clone() fwk.StateData { return f }

func (pl *DeviceFit) groupFacts(group fwk.PodGroupCycleState, ns, name string) *groupFacts {
	key := fwk.StateKey("PreFilter" + Name + "/group/" + ns + "/" + name)
	if d, err := group.Read(key); err == nil {
		if f, ok := d.(*groupFacts); ok {
			return f
		}
	}
	f := pl.computeGroupFacts(ns, name)
	group.Write(key, f)
	return f
}

func (pl *DeviceFit) computeGroupFacts(ns, name string) *groupFacts {
	f := &groupFacts{}
	lister := pl.handle.SnapshotSharedLister()
	if lister == nil {
		return f
	}
	pg, err := lister.PodGroups().Get(ns, name)
	if err != nil || pg == nil || pg.Spec.SchedulingPolicy.Gang == nil {
		return f
	}
	state, err := lister.PodGroupStates().Get(ns, name)
	if err != nil {
		return f
	}
	wanted := int(pg.Spec.SchedulingPolicy.Gang.MinCount) - state.ScheduledPodsCount()
	members := state.UnscheduledPods()
	if wanted <= 0 || wanted > len(members) {
		// Met already, or out of reach whatever the placement:
		// GangScheduling says so.
		return f
	}
	if c := pg.Spec.SchedulingConstraints; c != nil && len(c.Topology) > 0 {
		f.topologyKey = c.Topology[0].Key
	}
	f.twins = f.topologyKey != ""
	byResource := map[v1.ResourceName][]int64{}
	for _, p := range members {
		if len(p.Spec.ResourceClaims) > 0 {
			return f
		}
		demand, err := devices.PodDemand(p, pl.resources)
		if err != nil {
			return f
		}
		for _, r := range demand {
			byResource[r.Name] = append(byResource[r.Name], r.Count)
		}
		f.twins = f.twins && !tellsNodesApart(p, f.topologyKey)
	}
	var need devices.Demand
	for r, counts := range byResource {
		if pl.servedByDRA(r) {
			return f
		}
		// Members that ask for none of r need none: the smallest demands
		// are theirs first.
		counts = append(counts, make([]int64, len(members)-len(counts))...)
		slices.Sort(counts)
		var sum int64
		for _, c := range counts[:wanted] {
			sum += c
		}
		if sum > 0 {
			need = append(need, devices.Request{Name: r, Count: sum})
		}
	}
	slices.SortFunc(need, func(a, b devices.Request) int { return strings.Compare(string(a.Name), string(b.Name)) })
	f.need = need
	return f
}

// shortOf is the status rejecting a member in a placement of nodes that
// lacks the devices need asks for, nil when it has them.
func shortOf(need devices.Demand, nodes []fwk.NodeInfo) *fwk.Status {
	for _, r := range need {
		var free int64
		for _, ni := range nodes {
			free += max(ni.GetAllocatable().GetScalarResources()[r.Name]-ni.GetRequested().GetScalarResources()[r.Name], 0)
		}
		if free < r.Count {
			return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf(
				"the placement's %d nodes have %d free %s; the pod group still needs at least %d", len(nodes), free, r.Name, r.Count))
		}
	}
	return nil
}
