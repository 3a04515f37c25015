package replay

import (
	"fmt"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/devicefit/devicefit/internal/nvdra"
	"github.com/devicefit/devicefit/pkg/devices"
)

// An oracle device choice (--device-choice best-fit or fgd, dra-shares
// mode) measures what upstream's first fit on the node costs: the policy
// chooses the node as always, the allocator allocates there (Reserve needs
// its result, and it checks that the node fits), and the replay, doing
// PreBind's bookkeeping (committedclaims.go), moves the share to the GPU
// the oracle picks on the same node before the allocation is committed.
// The shares model (shareTracker) places it there too, so checkShares
// still compares every GPU's shares with the allocator's state. A node
// fits a share under any choice exactly when some GPU has the room, so the
// pre-screen's verdicts (shareTracker.fits) and the allocator's agree.

// oracleGPU returns the GPU of node i the device choice gives the current
// share request (s.request), among allowed (nil: any) GPUs with room, or
// -1. The fgd cost is the node's stranded capacity with the pod placed:
// its CPU and memory taken from what the node has left without it (s.free
// is refreshed only after the cycle).
func (s *simulation) oracleGPU(i int, allowed []int) int {
	m := s.metrics
	cpu, mem := s.free[i].milliCPU-s.request.milliCPU, s.free[i].memory-s.request.memory
	return s.shares.choose(i, s.request.share, s.choice, allowed, func(used []int64) float64 {
		if m.workload == nil || !m.deviceNode[i] {
			return 0
		}
		return m.strandedShares(i, used, cpu, mem)
	})
}

// moveShare makes the share claim's allocation, which the allocator made
// on node, name GPU gpu of that node instead: the device is all that
// changes (its share ID and consumed capacity stay the allocator's). The
// allocator's device must be firstFit, the shares model's first fit: what
// the replay counts as moved is what the allocator would have done.
func moveShare(c *resourceapi.ResourceClaim, node string, gpu, firstFit int) error {
	a := c.Status.Allocation
	if a == nil || len(a.Devices.Results) != 1 {
		return fmt.Errorf("a share claim's allocation should have one result, has %v", a)
	}
	r := &a.Devices.Results[0]
	if r.Driver != nvdra.Driver || r.Pool != node || r.ShareID == nil {
		return fmt.Errorf("the allocator gave %s/%s/%s (share %v), not a share of a GPU of node %s", r.Driver, r.Pool, r.Device, r.ShareID, node)
	}
	if want := "gpu-" + strconv.Itoa(firstFit); r.Device != want {
		return fmt.Errorf("the allocator gave the share %s of node %s, the shares model's first fit %s", r.Device, node, want)
	}
	r.Device = "gpu-" + strconv.Itoa(gpu)
	return nil
}

// moveShareTo is the rewrite commit applies for a share moved from GPU
// firstFit of node to GPU gpu (nil, none, for a negative gpu: the
// allocator's first fit stays).
func moveShareTo(node string, gpu, firstFit int) func(*resourceapi.ResourceClaim) error {
	if gpu < 0 {
		return nil
	}
	return func(c *resourceapi.ResourceClaim) error { return moveShare(c, node, gpu, firstFit) }
}

// gpuIndex reads the GPU index from a device name of the fleet's slices.
func gpuIndex(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "gpu-")
	if !ok {
		return 0, false
	}
	j, err := strconv.Atoi(rest)
	return j, err == nil
}

// choosingDRA is the framework's DRA manager when DevicePack models the
// oracle's device choice (EngineOptions.ModelDeviceChoice): the committed
// manager, plus dra.DeviceChooser.
type choosingDRA struct {
	*committedDRA
	choose func(n *devices.DRANode, r devices.CapacityRequest, candidates []*devices.DRADevice) int
}

// ChooseDevice implements dra.DeviceChooser.
func (m *choosingDRA) ChooseDevice(n *devices.DRANode, r devices.CapacityRequest, candidates []*devices.DRADevice) int {
	return m.choose(n, r, candidates)
}

// chooseDevice is the oracle's choice among candidates, the GPUs of node n
// a share request r could get (pkg/dra asks it in PreScore, for the
// current pod): the index in candidates of the GPU oracleGPU picks among
// them, or -1 (first fit) for anything but a share of the fleet's GPUs.
func (s *simulation) chooseDevice(n *devices.DRANode, r devices.CapacityRequest, candidates []*devices.DRADevice) int {
	i, ok := s.nodeIndex[n.Name]
	if !ok || s.request.share <= 0 {
		return -1
	}
	if milli, ok := r.Amount(nvdra.Shares); !ok || milli != s.request.share*1000 {
		return -1
	}
	allowed := make([]int, 0, len(candidates))
	for _, d := range candidates {
		j, ok := gpuIndex(d.Name)
		if !ok || d.Driver != nvdra.Driver {
			return -1
		}
		allowed = append(allowed, j)
	}
	gpu := s.oracleGPU(i, allowed)
	for k, j := range allowed {
		if j == gpu {
			return k
		}
	}
	return -1
}
