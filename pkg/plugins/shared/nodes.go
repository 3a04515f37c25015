// Package shared holds what one devicefit plugin computes in a scheduling
// cycle for another: DeviceFit's PreFilter walks every node of the
// snapshot anyway, and DevicePack's PreScore, in the same cycle, needs the
// free devices of every node (scarcity) and each node's devices. Reading
// them from the cycle state spares DevicePack a second walk over the
// cluster (docs/performance.md, "One walk for both plugins"). DeviceFit's
// Filter verdict (Verdict) and the pod's own node rules (NodeRules) are
// what DevicePack's shortlist reads to know the nodes the pod fits. Every
// entry is written by one plugin and only read by the other, but Pod (the
// pod's demand and requests), which the first of them to need it writes.
package shared

import (
	"slices"
	"strings"

	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/devices"
)

// Key is the cycle state key of Nodes.
const Key fwk.StateKey = "devicefit.io/nodes"

// Nodes is what DeviceFit's PreFilter found over all nodes. In a pod-group
// cycle it is the first placement's (DeviceFit keeps its state across the
// placements), which the node table, refreshed per placement, is not.
type Nodes struct {
	// Cache is the node table's cache DeviceFit reads (pkg/plugins/snapshot),
	// refreshed to every node this cycle; its kind table is what Free
	// indexes.
	Cache *devices.NodeCache
	// Resources names the device resources Cache reads (ResourcesKey):
	// only a plugin with the same ones may use it.
	Resources string
	// Free[k] is the free devices (allocatable minus requested, per node,
	// never negative) of kind k over all nodes.
	Free []int64
}

// Clone implements fwk.StateData; Nodes is never modified once written.
func (n *Nodes) Clone() fwk.StateData { return n }

// Read returns the cycle's Nodes, or nil when DeviceFit wrote none (not in
// the profile, or it skipped the pod).
func Read(cs fwk.CycleState) *Nodes { return ReadAs[*Nodes](cs, Key) }

// ReadAs returns the cycle state's entry under key as a T, the zero T when
// there is none (or no cycle state, or another type).
func ReadAs[T fwk.StateData](cs fwk.CycleState, key fwk.StateKey) T {
	var zero T
	if cs == nil {
		return zero
	}
	d, err := cs.Read(key)
	if err != nil {
		return zero
	}
	v, _ := d.(T)
	return v
}

// VerdictKey is the cycle state key of Verdict.
const VerdictKey fwk.StateKey = "devicefit.io/verdict"

// Verdict is DeviceFit's Filter as a read: whether it passes a node,
// counting no rejection. DeviceFit writes it whenever its Filter runs in
// the cycle (no Verdict: DeviceFit skipped the pod, or is not in the
// profile, and its Filter passes every node).
type Verdict struct {
	// Admits takes the node info and its entry in Cache (nil: DeviceFit
	// looks it up); an entry of another cache would index another kind
	// table.
	Admits func(fwk.NodeInfo, *devices.NodeDevices) bool
	Cache  *devices.NodeCache
	// Listed, when DeviceFit's PreFilter named candidate nodes, says which
	// of PreFilter's nodes (aligned with them) it named; nil otherwise.
	Listed []bool
	// DRAView: DeviceFit's PreFilter read the cycle's DRA view
	// (dra.ForCycle) for a DRA-served request, so the view's allocated
	// state was gathered there.
	DRAView bool
}

// Clone implements fwk.StateData; Verdict is never modified once written.
func (v *Verdict) Clone() fwk.StateData { return v }

// ReadVerdict returns the cycle's Verdict, nil when DeviceFit wrote none.
func ReadVerdict(cs fwk.CycleState) *Verdict { return ReadAs[*Verdict](cs, VerdictKey) }

// ResourcesKey is a canonical form of device resource patterns.
func ResourcesKey(patterns []string) string {
	p := slices.Clone(patterns)
	slices.Sort(p)
	return strings.Join(slices.Compact(p), ",")
}
