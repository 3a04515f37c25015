package replay

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"

	"github.com/devicefit/devicefit/internal/nvdra"
	"github.com/devicefit/devicefit/pkg/devices"
)

// --fractional dra-shares (FractionalDRAShares): the fleet's GPUs are
// shared DRA devices (allowMultipleAllocations) publishing shares: 1000
// (nvdra.Shares, as NVIDIA's DRA driver does under its ConsumableShares
// gate). A pod asking for a fraction of a GPU brings a ResourceClaim for
// one GPU of the class with capacity.requests {shares: gpu_milli}, and,
// when it names models, a CEL selector on productName; the upstream
// allocator gives it the first GPU of the chosen node with that many
// shares left. Whole-GPU pods still ask nvidia.com/gpu, which the class
// serves (KEP-5004): their claim asks for no capacity, so it takes all the
// shares of untouched GPUs. Allocation is counted in milli-GPU, FGD's unit.

// sharesPerGPU is the shares capacity of one GPU: FGD's milli-GPU.
const sharesPerGPU = 1000

// sharesRequest is the capacity request of milli shares.
func sharesRequest(milli int64) devices.CapacityRequest {
	return devices.NewCapacityRequest(&resourceapi.CapacityRequirements{
		Requests: map[resourceapi.QualifiedName]resource.Quantity{nvdra.Shares: *resource.NewQuantity(milli, resource.DecimalSI)},
	})
}

// shareClaimName is the ResourceClaim of a fractional arrival.
func shareClaimName(a *Arrival) string { return a.Name + "-gpu" }

// shareClaims are the claims of the fractional arrivals, created with the
// fleet so that the scheduler's claim cache holds them before the first pod.
func shareClaims(arrivals []Arrival) []runtime.Object {
	var out []runtime.Object
	for i := range arrivals {
		a := &arrivals[i]
		if !a.Pod.Fractional() {
			continue
		}
		c := nvdra.ShareClaim(Namespace, shareClaimName(a), draClassName, a.Pod.GPUMilli)
		if len(a.Pod.Products) > 0 {
			c.Spec.Devices.Requests[0].Exactly.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
				Expression: productSelector(a.Pod.Products),
			}}}
		}
		out = append(out, c)
	}
	return out
}

// productSelector is the CEL of "one of these models" on the productName
// the fleet's slices publish.
func productSelector(products []string) string {
	quoted := make([]string, len(products))
	for i, p := range products {
		quoted[i] = strconv.Quote(p)
	}
	return fmt.Sprintf(`device.attributes["%s"].productName in [%s]`, nvdra.Driver, strings.Join(quoted, ", "))
}

// withShareClaim makes pod, a fractional arrival's, ask for its share
// through its claim instead of nvidia.com/gpu. The models it accepts are
// in the claim's CEL, which the allocator enforces. The devicefit.io
// annotation stays for the devicefit policy: DeviceFit leaves claims to
// their CEL, but DevicePack reads the annotation as the job's selector in
// its observed workload, so that the scarce models' free shares are kept
// for the jobs that can use nothing else (DevicePack does not derive a
// class's selector from a claim's CEL yet).
func withShareClaim(pod *v1.Pod, a *Arrival) {
	c := &pod.Spec.Containers[0]
	delete(c.Resources.Requests, DeviceResource)
	delete(c.Resources.Limits, DeviceResource)
	c.Resources.Claims = []v1.ResourceClaim{{Name: "gpu"}}
	pod.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To(shareClaimName(a))}}
}

// DeviceChoice is which GPU of the node the policy chose a share claim
// gets (--device-choice, dra-shares mode).
type DeviceChoice string

const (
	// ChoiceFirstFit is upstream's allocator: the first GPU of the node's
	// slice with the shares left. The default, and what a cluster does.
	ChoiceFirstFit DeviceChoice = "first-fit"
	// ChoiceBestFit is an oracle: the GPU with the least free share that
	// still fits the claim.
	ChoiceBestFit DeviceChoice = "best-fit"
	// ChoiceFGD is an oracle: the GPU whose share leaves the node the least
	// fragmented for the trace's workload (FGD's measure on partial GPUs,
	// devices.Workload.StrandedDRA), as FGD's simulator picks the GPU on
	// the node.
	ChoiceFGD DeviceChoice = "fgd"
)

// ParseDeviceChoice reads --device-choice ("" is first fit).
func ParseDeviceChoice(s string) (DeviceChoice, error) {
	switch c := DeviceChoice(s); c {
	case "":
		return ChoiceFirstFit, nil
	case ChoiceFirstFit, ChoiceBestFit, ChoiceFGD:
		return c, nil
	}
	return "", fmt.Errorf("unknown device choice %q (want %s, %s or %s)", s, ChoiceFirstFit, ChoiceBestFit, ChoiceFGD)
}

// shareTracker models what the allocator does with the shares of each
// node's GPUs: first fit in device order (gpu-0, gpu-1, …, one slice per
// node), a share on the first GPU with room, whole GPUs on untouched ones;
// or, with an oracle device choice (choose), the share on the GPU the
// oracle picks, which the replay then makes the claim's allocation
// (simulation.oracle). The fragmentation metric reads it after every
// placement; checkShares compares it with the allocator's own allocated
// state at the end, so a model that strays fails the replay.
type shareTracker struct {
	used [][]int64 // per node, per GPU: shares consumed
}

func newShareTracker(fleet []NodeSpec) *shareTracker {
	t := &shareTracker{used: make([][]int64, len(fleet))}
	for i := range fleet {
		t.used[i] = make([]int64, max(fleet[i].GPUs, 0))
	}
	return t
}

// place records pod p on node i; a fractional pod's share goes on GPU gpu
// (the oracle's choice), or by first fit when gpu is negative. It returns
// the GPUs the pod holds, which remove needs to take it off again.
func (t *shareTracker) place(i int, p *PodSpec, gpu int) ([]int, error) {
	gpus := t.used[i]
	if p.Fractional() {
		if gpu < 0 {
			gpu = t.firstFit(i, p.GPUMilli)
		}
		if gpu < 0 || gpu >= len(gpus) || gpus[gpu]+p.GPUMilli > sharesPerGPU {
			return nil, fmt.Errorf("no GPU of node %d has %d shares left (GPU %d chosen), yet the pod was placed there", i, p.GPUMilli, gpu)
		}
		gpus[gpu] += p.GPUMilli
		return []int{gpu}, nil
	}
	var held []int
	for j := range gpus {
		if int64(len(held)) < p.GPUs && gpus[j] == 0 {
			gpus[j] = sharesPerGPU
			held = append(held, j)
		}
	}
	if int64(len(held)) < p.GPUs {
		for _, j := range held {
			gpus[j] = 0
		}
		return nil, fmt.Errorf("node %d has fewer than %d untouched GPUs, yet the pod was placed there", i, p.GPUs)
	}
	return held, nil
}

// remove takes pod p, holding held (place's result), off node i: a moved
// pod's claim is deallocated.
func (t *shareTracker) remove(i int, p *PodSpec, held []int) {
	take := int64(sharesPerGPU)
	if p.Fractional() {
		take = p.GPUMilli
	}
	for _, j := range held {
		t.used[i][j] -= take
	}
}

// firstFit returns the first GPU of node i with share shares left, or -1.
func (t *shareTracker) firstFit(i int, share int64) int {
	for j, u := range t.used[i] {
		if u+share <= sharesPerGPU {
			return j
		}
	}
	return -1
}

// choose returns the GPU of node i that choice gives a share of share
// shares, among those with room (and in allowed, when not nil); -1 when
// none has room. Ties go to the first in slice order. stranded, for fgd,
// is the node's expected stranded GPU capacity with its GPUs used as given
// (tracker.strandedShares).
func (t *shareTracker) choose(i int, share int64, choice DeviceChoice, allowed []int, stranded func(used []int64) float64) int {
	gpus := t.used[i]
	best, bestCost := -1, 0.0
	for j, u := range gpus {
		if u+share > sharesPerGPU || allowed != nil && !slices.Contains(allowed, j) {
			continue
		}
		var cost float64
		switch choice {
		case ChoiceBestFit:
			cost = float64(sharesPerGPU - u - share)
		case ChoiceFGD:
			gpus[j] += share
			cost = stranded(gpus)
			gpus[j] -= share
		}
		if best < 0 || cost < bestCost-shareEpsilon {
			best, bestCost = j, cost
		}
		if choice == ChoiceFirstFit {
			break
		}
	}
	return best
}

// shareEpsilon absorbs float rounding when the stranded capacities two
// choices of GPU leave are compared: the first GPU wins a tie.
const shareEpsilon = 1e-9

// fits reports whether node i has a GPU with share shares left (share > 0)
// or whole untouched GPUs: whether the allocator's first fit could place
// such a request there, product selectors aside. Any oracle choice puts a
// share on a GPU with room, so it agrees.
func (t *shareTracker) fits(i int, whole, share int64) bool {
	return sharesFit(t.used[i], whole, share)
}

// sharesFit is fits for a node's GPUs used as given.
func sharesFit(used []int64, whole, share int64) bool {
	var untouched int64
	for _, u := range used {
		if share > 0 && u+share <= sharesPerGPU {
			return true
		}
		if u == 0 {
			untouched++
		}
	}
	return share <= 0 && untouched >= whole
}

// free returns node i's untouched GPUs and the free shares (fractions of a
// GPU) of those partly used, appended to partial.
func (t *shareTracker) free(i int, partial []float64) (int64, []float64) {
	return freeShares(t.used[i], partial)
}

// freeShares is free for a node's GPUs used as given.
func freeShares(used []int64, partial []float64) (int64, []float64) {
	var untouched int64
	for _, u := range used {
		switch {
		case u == 0:
			untouched++
		case u < sharesPerGPU:
			partial = append(partial, float64(sharesPerGPU-u)/sharesPerGPU)
		}
	}
	return untouched, partial
}

// checkShares is the shares mode's invariant: the shares the allocator's
// allocated state says each GPU has given (in-flight allocations, as the
// replay stops each pod after Reserve) are those the model placed, their
// sum is the milli-GPU the bound pods asked for, and no GPU is held whole
// (every allocation of a shared device is a share).
func (s *simulation) checkShares(t *shareTracker, fleet []NodeSpec, placed int64) error {
	if err := s.dra.claims.verify(); err != nil {
		return err
	}
	state, err := s.fw.SharedDRAManager().ResourceClaims().GatherAllocatedState()
	if err != nil {
		return err
	}
	if n := len(state.AllocatedDevices); n != 0 {
		return fmt.Errorf("%d shared GPUs are allocated whole", n)
	}
	var sum int64
	for i := range fleet {
		for j, want := range t.used[i] {
			id := structured.MakeDeviceID(nvdra.Driver, fleet[i].Name, "gpu-"+strconv.Itoa(j))
			var got int64
			if c := state.AggregatedCapacity[id]; c != nil && c[nvdra.Shares] != nil {
				got = c[nvdra.Shares].Value()
			}
			if got != want {
				return fmt.Errorf("GPU %s: the allocator gave %d shares, the model %d", id, got, want)
			}
			if got > sharesPerGPU {
				return fmt.Errorf("GPU %s: %d shares allocated of %d", id, got, sharesPerGPU)
			}
			sum += got
		}
	}
	if sum != placed {
		return fmt.Errorf("claims hold %d shares, the bound pods asked for %d milli-GPU", sum, placed)
	}
	return nil
}
