package devicepack

import (
	"context"
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/devices"
)

const preScoreStateKey fwk.StateKey = "PreScore" + Name

// preScoreState is computed once per pod; Score reads it for every node.
type preScoreState struct {
	demand      devices.Demand
	milliCPU    int64
	memoryBytes int64
	workload    *devices.Workload
	// labels describe each device resource present on the candidate nodes.
	labels map[v1.ResourceName]*devices.DeviceLabels
	// nodes holds, per candidate node, its device resources as the labels
	// describe them: read once here, so Score neither parses nor matches.
	nodes map[string][]nodeDevice
	// maxValue is the largest product value among the candidates (> 0).
	maxValue int64
}

// nodeDevice is one device resource of a candidate node.
type nodeDevice struct {
	resource v1.ResourceName
	device   devices.Device
	value    int64
	// kind is nil when the node has no free device of the resource: then
	// nothing can be stranded there (F = 0 before and after).
	kind *kindInfo
}

type kindInfo struct {
	accept []bool
	// pressure: expected devices of product-constrained demand left without
	// room per device of this kind a placement takes.
	pressure float64
}

// deviceKind is a device resource and what the node labels say about it.
type deviceKind struct {
	resource v1.ResourceName
	device   devices.Device
}

// Clone implements fwk.StateData; the state is never modified.
func (s *preScoreState) Clone() fwk.StateData { return s }

// PreFilter records the pod in the observed workload, once per pod. It never
// rejects and returns Skip: DevicePack has no Filter.
func (pl *DevicePack) PreFilter(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if !pl.workload.observed {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	demand, err := devices.PodDemand(pod, pl.resources)
	if err != nil || len(demand) == 0 {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	sel, err := devices.ParseSelector(pod.Annotations)
	if err != nil {
		// DeviceFit rejects the pod; a malformed class is no evidence.
		return nil, fwk.NewStatus(fwk.Skip)
	}
	cpu, mem := requests(pod)
	pl.workload.observe(string(pod.UID), demand, cpu, mem, selectorKey(pod.Annotations), sel)
	return nil, fwk.NewStatus(fwk.Skip)
}

// PreFilterExtensions returns nil: DevicePack keeps no per-node filter state.
func (pl *DevicePack) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

func requests(pod *v1.Pod) (milliCPU, memoryBytes int64) {
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	cpu, mem := reqs[v1.ResourceCPU], reqs[v1.ResourceMemory]
	return cpu.MilliValue(), mem.Value()
}

// PreScore prepares the pod's demand, the workload snapshot and the label
// keys of the device resources on the candidate nodes, so Score neither
// parses nor allocates.
func (pl *DevicePack) PreScore(_ context.Context, cycleState fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) *fwk.Status {
	demand, err := devices.PodDemand(pod, pl.resources)
	if err != nil {
		// DeviceFit reports this; scoring a malformed pod helps no one.
		return fwk.NewStatus(fwk.Skip)
	}
	wl, err := pl.workload.snapshot()
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("workload snapshot: %w", err))
	}
	s := &preScoreState{
		demand: demand, workload: wl, maxValue: 1,
		labels: map[v1.ResourceName]*devices.DeviceLabels{},
		nodes:  make(map[string][]nodeDevice, len(nodes)),
	}
	s.milliCPU, s.memoryBytes = requests(pod)
	for _, n := range nodes {
		node := n.Node()
		if node == nil {
			continue
		}
		for name, a := range n.GetAllocatable().GetScalarResources() {
			if a <= 0 || !pl.resources.Contains(name) {
				continue
			}
			l, ok := s.labels[name]
			if !ok {
				keys := devices.NewDeviceLabels(name)
				l = &keys
				s.labels[name] = l
			}
			d := l.Describe(node.Labels)
			v := pl.value(d)
			s.maxValue = max(s.maxValue, v)
			s.nodes[node.Name] = append(s.nodes[node.Name], nodeDevice{resource: name, device: d, value: v})
		}
	}
	if len(s.nodes) == 0 {
		// No candidate has devices: nothing to pack, nothing to strand.
		return fwk.NewStatus(fwk.Skip)
	}
	if wl != nil {
		s.computeKinds(nodes, pl.weights.scarcity > 0 && len(demand) > 0)
	}
	cycleState.Write(preScoreStateKey, s)
	return nil
}

// computeKinds groups the candidates' free devices by kind (what the labels
// say about them; a fleet has few kinds) and computes, once per kind, which
// workload classes accept it and its scarcity pressure. Score then looks the
// kind up instead of matching every class selector on every node.
//
// Pressure is what fragmentation alone does not see: to FGD a free T4 is
// usable whoever takes it, so 1-GPU jobs without a selector happily fill the
// small T4 nodes and the jobs that accept only T4 find none left. For each
// class with a product selector, taking one device it accepts costs
// weight · (free devices) / (free devices it accepts): the expected devices
// of its demand left without room. The candidates stand in for the cluster:
// nodes that cannot take this pod rarely hold free devices anyway.
func (s *preScoreState) computeKinds(nodes []fwk.NodeInfo, scarcity bool) {
	free := map[deviceKind]int64{}
	var total int64
	for _, n := range nodes {
		node := n.Node()
		if node == nil {
			continue
		}
		alloc, req := n.GetAllocatable().GetScalarResources(), n.GetRequested().GetScalarResources()
		for _, nd := range s.nodes[node.Name] {
			if f := alloc[nd.resource] - req[nd.resource]; f > 0 {
				total += f
				free[deviceKind{resource: nd.resource, device: nd.device}] += f
			}
		}
	}
	kinds := make(map[deviceKind]*kindInfo, len(free))
	for k := range free {
		kinds[k] = &kindInfo{accept: s.workload.Acceptance(k.resource, k.device)}
	}
	for name, nds := range s.nodes {
		for i := range nds {
			nds[i].kind = kinds[deviceKind{resource: nds[i].resource, device: nds[i].device}]
		}
		s.nodes[name] = nds
	}
	if !scarcity {
		return
	}
	classes := s.workload.Classes()
	for i := range classes {
		if classes[i].Selector.IsEmpty() {
			continue
		}
		var supply int64
		for k, f := range free {
			if kinds[k].accept[i] {
				supply += f
			}
		}
		p := classes[i].Weight * float64(total) / float64(max(supply, 1))
		for _, info := range kinds {
			if info.accept[i] {
				info.pressure += p
			}
		}
	}
}

// value ranks a product: the first matching productValues entry, else its
// per-device memory (bigger devices are the ones to keep free).
func (pl *DevicePack) value(d devices.Device) int64 {
	for i := range pl.values {
		if pl.values[i].pattern.Matches(d.Product) {
			return pl.values[i].value
		}
	}
	return d.MemoryMiB
}

// Score is, in thousandths of a device (terms weighted by the args):
//
//   - fragmentation: -(growth of expected stranded devices), summed over the
//     node's device resources (CPU pods can strand devices too);
//   - best fit: how full the requested devices are after the placement;
//   - product value: 1000 - value/maxValue·1000 for the devices taken;
//   - device-node penalty for device-free pods (deviceNodePolicy Prefer).
//
// Each term is rounded to an integer before summing, so the result does not
// depend on map iteration order. NormalizeScore maps it to [0, 100].
func (pl *DevicePack) Score(_ context.Context, cycleState fwk.CycleState, _ *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	c, err := cycleState.Read(preScoreStateKey)
	if err != nil {
		return 0, fwk.AsStatus(fmt.Errorf("reading %q from cycleState: %w", preScoreStateKey, err))
	}
	s := c.(*preScoreState)
	return pl.score(s, nodeInfo), nil
}

func (pl *DevicePack) score(s *preScoreState, nodeInfo fwk.NodeInfo) int64 {
	alloc, req := nodeInfo.GetAllocatable(), nodeInfo.GetRequested()
	freeCPU := alloc.GetMilliCPU() - req.GetMilliCPU()
	freeMem := alloc.GetMemory() - req.GetMemory()
	nds := s.nodes[nodeInfo.Node().Name]

	var frag, fit, value, scarcity int64
	for i := range nds {
		nd := &nds[i]
		a := alloc.GetScalarResources()[nd.resource]
		used := req.GetScalarResources()[nd.resource]
		take := s.demand.Count(nd.resource)
		if nd.kind != nil {
			delta := s.workload.StrandedDeltaWith(nd.kind.accept, devices.NodeFree{
				Resource: nd.resource, Devices: a - used, MilliCPU: freeCPU, MemoryBytes: freeMem, Device: nd.device,
			}, take, s.milliCPU, s.memoryBytes)
			frag -= int64(math.Round(delta * 1000))
		}
		if take > 0 {
			fit += (used + take) * 1000 / a
			value += 1000 - nd.value*1000/s.maxValue
			if nd.kind != nil {
				scarcity -= int64(math.Round(nd.kind.pressure * float64(take) * 1000))
			}
		}
	}
	score := pl.weights.fragmentation*frag + pl.weights.bestFit*fit + pl.weights.productValue*value + pl.weights.scarcity*scarcity
	if len(nds) > 0 && len(s.demand) == 0 {
		score -= pl.weights.deviceNodePenalty * 1000
	}
	return score
}

// ScoreExtensions returns the plugin: it normalises its own scores.
func (pl *DevicePack) ScoreExtensions() fwk.ScoreExtensions { return pl }

// NormalizeScore maps raw scores linearly onto [0, MaxNodeScore]; equal raw
// scores (no preference) all get MaxNodeScore.
func (pl *DevicePack) NormalizeScore(_ context.Context, _ fwk.CycleState, _ *v1.Pod, scores fwk.NodeScoreList) *fwk.Status {
	if len(scores) == 0 {
		return nil
	}
	lo, hi := scores[0].Score, scores[0].Score
	for _, s := range scores[1:] {
		lo, hi = min(lo, s.Score), max(hi, s.Score)
	}
	for i := range scores {
		if hi == lo {
			scores[i].Score = fwk.MaxNodeScore
			continue
		}
		scores[i].Score = normalize(scores[i].Score, lo, hi)
	}
	return nil
}

// normalize computes (v-lo)·MaxNodeScore/(hi-lo) in float64: the raw range
// can exceed what an int64 product could hold.
func normalize(v, lo, hi int64) int64 {
	return int64(math.Round(float64(v-lo) * float64(fwk.MaxNodeScore) / float64(hi-lo)))
}
