package replay

import (
	"math"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/internal/nvdra"
	"github.com/devicefit/devicefit/pkg/devices"
)

// tracker keeps the device metrics of a replay. Stranded devices are kept
// per node and recomputed only for the node a pod lands on. Capacity,
// arrived and allocated demand are in milli-GPU (FGD's unit; whole devices
// are 1000 each).
type tracker struct {
	capacity             int64
	arrived, allocated   int64
	failed, failedDevice int
	workload             *devices.Workload
	labels               devices.DeviceLabels
	device               []devices.Device // per node, from its labels
	stranded             []float64        // per node
	deviceNode           []bool
	// moves counts the pods the defragmenter moved.
	moves int
	// gpus is each node's devices (in DRA mode no node advertises them).
	gpus []int64
	// shares models the shared GPUs in dra-shares mode (nil otherwise);
	// accept is each node's acceptance per class, need each class's share
	// of one GPU (1 for whole devices), partial a scratch slice.
	shares  *shareTracker
	accept  [][]bool
	need    []float64
	partial []float64
}

func newTracker(fleet []NodeSpec, nodes []*v1.Node, wl *devices.Workload) *tracker {
	t := &tracker{
		capacity:   Capacity(fleet) * 1000,
		workload:   wl,
		labels:     devices.NewDeviceLabels(DeviceResource),
		device:     make([]devices.Device, len(nodes)),
		stranded:   make([]float64, len(nodes)),
		deviceNode: make([]bool, len(nodes)),
		gpus:       make([]int64, len(nodes)),
	}
	for i, n := range nodes {
		t.device[i] = t.labels.Describe(n.Labels)
		t.deviceNode[i] = fleet[i].GPUs > 0
		t.gpus[i] = fleet[i].GPUs
	}
	return t
}

// withShares makes t measure shared GPUs (dra-shares mode) by st.
func (t *tracker) withShares(st *shareTracker) {
	t.shares = st
	if t.workload == nil {
		return
	}
	t.accept = make([][]bool, len(t.device))
	for i := range t.device {
		if t.deviceNode[i] {
			t.accept[i] = t.workload.Acceptance(DeviceResource, t.device[i])
		}
	}
	classes := t.workload.Classes()
	t.need = make([]float64, len(classes))
	for i := range classes {
		t.need[i] = 1
		if milli, ok := classes[i].Capacity.Amount(nvdra.Shares); ok {
			t.need[i] = float64(milli) / 1000 / sharesPerGPU
		}
	}
}

// update recomputes node i's stranded devices from its NodeInfo (and, in
// dra-shares mode, the shares model: FGD's measure on partial GPUs).
func (t *tracker) update(i int, ni fwk.NodeInfo) {
	if t.workload == nil || !t.deviceNode[i] {
		return
	}
	alloc, req := ni.GetAllocatable(), ni.GetRequested()
	t.stranded[i] = t.strandedFree(i, t.gpus[i]-req.GetScalarResources()[DeviceResource], alloc.GetMilliCPU()-req.GetMilliCPU(), alloc.GetMemory()-req.GetMemory())
}

// strandedFree is node i's stranded devices with devices (or, in dra-shares
// mode, its GPUs' shares as the model has them), milliCPU and memory left.
func (t *tracker) strandedFree(i int, devs, milliCPU, memory int64) float64 {
	if t.workload == nil || !t.deviceNode[i] {
		return 0
	}
	if t.shares != nil {
		return t.strandedShares(i, t.shares.used[i], milliCPU, memory)
	}
	return t.workload.Stranded(devices.NodeFree{
		Resource:    DeviceResource,
		Devices:     max(devs, 0),
		MilliCPU:    max(milliCPU, 0),
		MemoryBytes: max(memory, 0),
		Device:      t.device[i],
	})
}

// strandedShares is the expected GPU capacity of node i that a job of the
// workload could not use there (FGD's measure on partial GPUs) with its
// GPUs' shares used as given and milliCPU, memory left: the fragmentation
// metric in dra-shares mode, and the fgd device choice's cost.
func (t *tracker) strandedShares(i int, used []int64, milliCPU, memory int64) float64 {
	untouched, partial := freeShares(used, t.partial[:0])
	t.partial = partial[:0]
	capacity := float64(untouched)
	for _, p := range partial {
		capacity += p
	}
	return t.workload.StrandedDRA([]devices.DRAFree{{
		Resource: DeviceResource, Free: untouched, Size: 1, Accept: t.accept[i], Partial: partial, Need: t.need,
	}}, capacity, max(milliCPU, 0), max(memory, 0))
}

// point returns the current state after pods pods were tried.
func (t *tracker) point(pods int) Point {
	var stranded float64
	for _, s := range t.stranded {
		stranded += s
	}
	c := float64(t.capacity)
	arrived := round2(100 * float64(t.arrived) / c)
	return Point{
		ArrivedPct:       arrived,
		ArrivedExactPct:  arrived,
		AllocatedPct:     round2(100 * float64(t.allocated) / c),
		UnallocatedPct:   round2(100 * float64(t.capacity-t.allocated) / c),
		FragmentedPct:    round2(100 * stranded * 1000 / c),
		FailedPods:       t.failed,
		FailedDevicePods: t.failedDevice,
		Pods:             pods,
		Moves:            t.moves,
	}
}

// at makes p the grid point at a whole arrived percent.
func (p Point) at(pct int64) Point {
	p.ArrivedPct = float64(pct)
	return p
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }
