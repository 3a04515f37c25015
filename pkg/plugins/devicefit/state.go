package devicefit

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/dra"
	"github.com/devicefit/devicefit/pkg/plugins/snapshot"
)

const preFilterStateKey fwk.StateKey = "PreFilter" + Name

// preFilterState is computed once per pod and read by Filter for every node.
// It is never modified after PreFilter, so Clone can share it.
type preFilterState struct {
	demand devices.Demand
	// labels[i] holds the label keys describing demand[i].Name's devices.
	labels   []devices.DeviceLabels
	selector devices.Selector
	// verdicts[i][k] is the selector's verdict on kind k (the kind table of
	// DeviceFit's node cache in this cycle) for demand[i], on nodes whose
	// labels describe the devices (device plugins).
	verdicts [][]devices.Mismatch
	// deviceFree marks a pod without devices under deviceNodePolicy Require.
	deviceFree bool
	// cache is the plugin's node cache, refreshed by this PreFilter; kinds
	// is its kind table then (the index of verdicts[i]).
	cache *devices.NodeCache
	kinds []devices.DeviceKind
	// entries and rows are the node table's entries and rows of
	// PreFilter's nodes, in their order; PreFilter only (nil afterwards).
	entries []*devices.NodeDevices
	rows    []snapshot.Row
	// What PreFilter's walk over the nodes found (scan): the offers per
	// request, the nodes admitted (aligned with the nodes), their number,
	// and how many were left out for each exclusion.
	offers   []offer
	admitted []bool
	// found[i] is the index of demand[i] in the entry of the node scan is
	// at (-1: none), for admits.
	found       []int
	numAdmitted int
	left        [numExclusions]int
	// listed is the PreFilterResult's node names when candidates returned
	// one (nil for all nodes); PostFilter reads it, in the same cycle: the
	// set is a kept list (lists.go), which the next cycle changes.
	listed sets.Set[string]
	// handed: the list went to shared.ListCarrier (carry.go), which
	// returned it or a list within it.
	handed bool
	// keptNames are the admitted nodes' names when the kept scan found
	// them (keptscan.go): candidates lists them.
	keptNames sets.Set[string]
	// keptKey is the kept scan's key (its pod shape and node rules), empty
	// when PreFilter walked every node: the Verdict's Class.
	keptKey string
	// quiet: Filter runs only to give reasons (PostFilter, on a copy of the
	// state) and counts no rejections, which candidates counted already.
	quiet bool

	// dra[i] is the class serving demand[i] from ResourceSlices (nil when
	// none, or dra nil when no request is DRA-served); view is the cycle's
	// DRA view and picks a scratch slice, for PreFilter only (nil
	// afterwards).
	dra  []*draRequest
	view *dra.View
	// classServed[i]: a DeviceClass serves demand[i] (DRAExtendedResource).
	classServed []bool
	picks       []dra.Pick
	// draVerdicts holds, per node, the selector's mismatch on the devices a
	// DRA-served request would get there (only nodes with one); Filter
	// reads it.
	draVerdicts map[string][]devices.Mismatch
	// draDeviceNodes: the nodes with DRA devices, for a device-free pod
	// under deviceNodePolicy Require.
	draDeviceNodes sets.Set[string]
}

// matchesNode reports whether node's devices of demand[i] pass the
// selector and the MIG checks: d is the node's cached device, or nil when
// the cache does not hold it (then the labels are read).
func (s *preFilterState) matchesNode(node *v1.Node, d *devices.NodeDevice, i int, labels *devices.DeviceLabels) bool {
	if d != nil {
		return s.verdict(i, d) == devices.Match
	}
	return node != nil && s.selector.Match(labels, labels.Describe(node.Labels)) == devices.Match
}

// verdict is the selector's verdict on device d of a node for demand[i]:
// looked up by kind, matched directly when d was not interned.
func (s *preFilterState) verdict(i int, d *devices.NodeDevice) devices.Mismatch {
	if v := s.verdicts[i]; d.Kind >= 0 && d.Kind < len(v) {
		return v[d.Kind]
	}
	return s.selector.Match(&s.labels[i], d.Device)
}

// Clone implements fwk.StateData.
func (s *preFilterState) Clone() fwk.StateData { return s }

func getPreFilterState(cycleState fwk.CycleState) (*preFilterState, error) {
	c, err := cycleState.Read(preFilterStateKey)
	if err != nil {
		return nil, fmt.Errorf("reading %q from cycleState: %w", preFilterStateKey, err)
	}
	s, ok := c.(*preFilterState)
	if !ok {
		return nil, fmt.Errorf("%+v convert to devicefit.preFilterState error", c)
	}
	return s, nil
}
