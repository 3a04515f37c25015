// Package upstream is the one door through which devicefit reads what the
// scheduler framework does not export: another plugin's PreFilter state,
// and the framework's own plugin lists and placements. DevicePack's
// shortlist needs the first two to reproduce NodeResourcesFit's and
// NodeDeclaredFeatures' verdicts and to know which plugins a profile runs;
// DeviceFit the placement's nodes to judge whether a pod group still fits
// there (Placement). DeviceFit also counts on one thing the framework
// does without promising it: it copies the node names a PreFilter returns
// (KeptResult). All are correct on v1.37.2 and nothing upstream promises
// them across releases, so they live here and only here, and
// upstream_test.go runs the real framework and snapshot of the pinned
// release: the day a bump renames a state key, reshapes a state or stops
// handing plugins the framework or the snapshot itself, that test fails
// instead of the shortlist or the placement check quietly turning itself
// off (every accessor degrades to "not known", which makes them stand
// aside).
package upstream

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
)

const (
	// fitStateKey is NodeResourcesFit's PreFilter state ("PreFilter" +
	// its name, noderesources/fit.go): the pod's request, as its Filter
	// compares it with each node.
	fitStateKey fwk.StateKey = "PreFilterNodeResourcesFit"
	// featuresStateKey is NodeDeclaredFeatures' PreFilter state, written
	// only for a pod that needs node features some nodes may not declare
	// (its PreFilter skips the others).
	featuresStateKey fwk.StateKey = "PreFilterNodeDeclaredFeatures"
)

// PodRequest is what NodeResourcesFit's PreFilter state exposes: the
// getters of the framework.Resource it embeds.
type PodRequest interface {
	GetMilliCPU() int64
	GetMemory() int64
	GetEphemeralStorage() int64
	GetScalarResources() map[v1.ResourceName]int64
}

// FitRequest is the pod's request as NodeResourcesFit's PreFilter wrote it
// in this cycle; false when it wrote none (not in the profile, skipped) or
// its state no longer has that shape.
func FitRequest(state fwk.CycleState) (PodRequest, bool) {
	d, err := state.Read(fitStateKey)
	if err != nil {
		return nil, false
	}
	req, ok := d.(PodRequest)
	return req, ok
}

// NeedsNodeFeatures: NodeDeclaredFeatures' PreFilter found node features
// the pod needs in this cycle, so its Filter judges each node on them.
func NeedsNodeFeatures(state fwk.CycleState) bool {
	_, err := state.Read(featuresStateKey)
	return err == nil
}

// Plugins are the profile's plugins by extension point, through the
// framework's ListPlugins: the handle a plugin's factory receives is the
// framework itself (frameworkruntime.NewFramework), though fwk.Handle does
// not say so. Nil when the handle cannot list them.
func Plugins(h fwk.Handle) *schedconfig.Plugins {
	lister, ok := h.(interface{ ListPlugins() *schedconfig.Plugins })
	if !ok {
		return nil
	}
	return lister.ListPlugins()
}

// KeptResult is the PreFilterResult naming names, a set the plugin keeps
// and changes in later cycles (DeviceFit's candidate lists, which it
// updates by the few names that moved rather than hashing thousands per
// pod). No copy is made: the framework merges every plugin's result into
// one of its own (PreFilterResult.Merge, in RunPreFilterPlugins), which
// copies the names and never changes the plugin's set, and it reads the
// result only within the cycle. A copy here cost a fifth of a millisecond
// per pod at 15,000 nodes.
func KeptResult(names sets.Set[string]) *fwk.PreFilterResult {
	return &fwk.PreFilterResult{NodeNames: names}
}

// Placement is the placement the scheduler is trying in this pod-group
// cycle, its name ("" outside one) and nodes (all the snapshot's nodes
// outside one), through the snapshot's GetPlacement and
// ListNodesInPlacement: the lister a plugin's handle gives is the
// scheduler's snapshot itself (cache.Snapshot), though fwk.SharedLister
// does not say so, and PreFilter is handed every node, not the
// placement's. False when the handle's lister cannot say.
func Placement(h fwk.Handle) (string, []fwk.NodeInfo, bool) {
	if h == nil {
		return "", nil, false
	}
	l, ok := h.SnapshotSharedLister().(interface {
		GetPlacement() *fwk.Placement
		ListNodesInPlacement() ([]fwk.NodeInfo, error)
	})
	if !ok {
		return "", nil, false
	}
	nodes, err := l.ListNodesInPlacement()
	if err != nil {
		return "", nil, false
	}
	var name string
	if p := l.GetPlacement(); p != nil {
		name = p.Name
	}
	return name, nodes, true
}
