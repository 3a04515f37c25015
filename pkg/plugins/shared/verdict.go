// Package shared holds what one devicefit plugin computes in a scheduling
// cycle that the other reads: DeviceFit's Filter verdict (Verdict) and the
// pod's own node rules (NodeRules), which DevicePack's shortlist reads to
// know the nodes the pod fits, and the pod's facts (Pod: its demand and
// requests), which the first of them to need it writes. The nodes, their
// devices and the free devices per kind are neither plugin's: both read
// them from the node table (pkg/plugins/snapshot). Every entry is written
// once, by one plugin, and only read by the other.
package shared

import (
	"slices"
	"strings"

	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/devices"
)

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
	// Class, when not empty, names the pod's verdicts: two pods of one
	// Class get the same Admits, and the same Listed, on every node whose
	// row in the node table did not move between their cycles (DeviceFit's
	// kept scan, keptscan.go). Empty: the verdicts may read more than the
	// node's row (the cycle's DRA view).
	Class string
	// DRAView: DeviceFit's PreFilter read the cycle's DRA view
	// (dra.ForCycle) for a DRA-served request, so the view's allocated
	// state was gathered there.
	DRAView bool
	// List, when not nil, is the candidate list DeviceFit's PreFilter named
	// and did not return: ListCarrier returns it, or a list of its own
	// within it (carry.go).
	List *fwk.PreFilterResult
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
