package devices

import (
	"math"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

func q(s string) *resource.Quantity { return ptr.To(resource.MustParse(s)) }

func capReq(kv ...string) CapacityRequest {
	c := &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{}}
	for i := 0; i < len(kv); i += 2 {
		c.Requests[resourceapi.QualifiedName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return NewCapacityRequest(c)
}

// TestCapacityConsumes: what one request consumes of a capacity, by the
// allocator's rules (v1.37.2, incubating/consumable_capacity.go).
func TestCapacityConsumes(t *testing.T) {
	plainCap := resourceapi.DeviceCapacity{Value: resource.MustParse("1000")}
	withDefault := resourceapi.DeviceCapacity{Value: resource.MustParse("80Gi"),
		RequestPolicy: &resourceapi.CapacityRequestPolicy{Default: q("1Gi")}}
	ranged := resourceapi.DeviceCapacity{Value: resource.MustParse("1000"),
		RequestPolicy: &resourceapi.CapacityRequestPolicy{ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: q("100"), Max: q("800"), Step: q("50")}}}
	values := resourceapi.DeviceCapacity{Value: resource.MustParse("1000"),
		RequestPolicy: &resourceapi.CapacityRequestPolicy{ValidValues: []resource.Quantity{resource.MustParse("250"), resource.MustParse("500")}}}
	for _, tc := range []struct {
		name      string
		capacity  resourceapi.DeviceCapacity
		requested string // "" when the request does not name the capacity
		want      string
		refused   bool
	}{
		{"no policy: the amount asked", plainCap, "460", "460", false},
		{"not named, no policy: the whole capacity", plainCap, "", "1000", false},
		{"not named: the policy's default", withDefault, "", "1Gi", false},
		{"range: below min takes min", ranged, "20", "100", false},
		{"range: rounded up to min + k·step", ranged, "460", "500", false},
		{"range: on a step stays", ranged, "450", "450", false},
		{"range: above max is refused", ranged, "810", "", true},
		{"valid values: the first not below", values, "300", "500", false},
		{"valid values: above all is refused", values, "600", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newDRACapacity("shares", tc.capacity)
			var amount int64
			if tc.requested != "" {
				amount = q(tc.requested).MilliValue()
			}
			got, ok := c.consumes(amount, tc.requested != "")
			if ok == tc.refused {
				t.Fatalf("ok = %v, want %v", ok, !tc.refused)
			}
			if !tc.refused && got != q(tc.want).MilliValue() {
				t.Errorf("consumes %dm, want %s", got, tc.want)
			}
		})
	}
}

// sharedGPU is a GPU that serves several claims (allowMultipleAllocations)
// with NVIDIA's memory and a shares capacity of 1000, as the replay's
// fractional mode publishes it. Memory has a default of 0, so a claim that
// asks for shares only takes no memory.
func sharedGPU(name string) resourceapi.Device {
	return resourceapi.Device{
		Name: name, AllowMultipleAllocations: ptr.To(true),
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			"shares": {Value: resource.MustParse("1000")},
			"memory": {Value: resource.MustParse("80Gi"), RequestPolicy: &resourceapi.CapacityRequestPolicy{Default: q("0")}},
		},
	}
}

func TestDRAUsageShares(t *testing.T) {
	inv := NewDRAInventory([]*resourceapi.ResourceSlice{slice("s", "n", "p", 1, 1, sharedGPU("gpu-0"), sharedGPU("gpu-1"), plain("whole"))})
	n := inv.Nodes["n"]
	all := func(*DRADevice) bool { return true }
	shared := func(d *DRADevice) bool { return d.Shared() }
	half, quarter, whole := capReq("shares", "500"), capReq("shares", "250"), CapacityRequest{}
	u := NewDRAUsage(inv, nil)

	// First fit: two halves land on gpu-0, one after the other.
	picks, ok := u.FirstFit(n, shared, 1, half, nil)
	if !ok || names(picks) != "p/gpu-0" {
		t.Fatalf("first half: got %s, %v", names(picks), ok)
	}
	u.Hold(picks, half)
	if got := u.FreeShare(picks[0]); got != 0.5 {
		t.Errorf("gpu-0 after a half: free share %v, want 0.5", got)
	}
	if got := u.Free(n, all); got != 2 {
		t.Errorf("untouched devices: got %d, want 2 (gpu-1 and whole)", got)
	}
	if got := u.Partial(n, all, nil); len(got) != 1 || got[0] != 0.5 {
		t.Errorf("partial shares: got %v, want [0.5]", got)
	}
	// A whole-device claim cannot take the partly used GPU.
	if picks, _ := u.FirstFit(n, shared, 1, whole, nil); names(picks) != "p/gpu-1" {
		t.Errorf("whole claim: got %s, want gpu-1", names(picks))
	}
	second, _ := u.FirstFit(n, shared, 1, half, nil)
	if names(second) != "p/gpu-0" {
		t.Errorf("second half: got %s, want gpu-0 (first fit)", names(second))
	}
	u.Hold(second, half)
	if u.AvailableFor(second[0], quarter) {
		t.Error("a full GPU must not take a quarter more")
	}
	if got := u.FreeCapacity(n); got != 2 {
		t.Errorf("free capacity with gpu-0 used up: got %v, want 2", got)
	}
	u.Release(second, half)
	u.Hold(picks, quarter)
	if got := u.FreeCapacity(n); got != 2.25 {
		t.Errorf("free capacity with 0.75 of gpu-0 used: got %v, want 2.25", got)
	}
	u.Release(picks, quarter)
	u.Release(picks, half)
	if got := u.FreeCapacity(n); got != 3 || !u.Available(inv.Devices[0]) {
		t.Errorf("released: free capacity %v, want 3 and gpu-0 available", got)
	}
	// Memory asked beyond the device, or a capacity it lacks, never fits.
	if u.AvailableFor(inv.Devices[0], capReq("memory", "81Gi")) {
		t.Error("81Gi of an 80Gi GPU")
	}
	if u.AvailableFor(inv.Devices[0], capReq("bandwidth", "1")) {
		t.Error("a capacity the device does not publish")
	}
	// A device that is not shared takes a request it can hold, whole.
	if !u.AvailableFor(inv.Devices[2], whole) || u.AvailableFor(inv.Devices[2], half) {
		t.Error("the plain device: takes a request for nothing, not one for shares it lacks")
	}
}

// TestDRAUsageAllocatedShares: the allocated state names each allocation
// of a shared device and sums what they consume.
func TestDRAUsageAllocatedShares(t *testing.T) {
	inv := NewDRAInventory([]*resourceapi.ResourceSlice{slice("s", "n", "p", 1, 1, sharedGPU("gpu-0"))})
	d := inv.Devices[0]
	u := NewDRAUsage(inv, []*DRADevice{d, d})
	u.AddConsumed(d, "shares", 700_000)
	if got := u.FreeShare(d); math.Abs(got-0.3) > 1e-12 {
		t.Errorf("free share: got %v, want 0.3", got)
	}
	if !u.InUse(d) || u.Allocated(d) {
		t.Error("a shared device in use is never allocated whole")
	}
	if len(u.OverCapacity()) != 0 {
		t.Errorf("within capacity: %v", u.OverCapacity())
	}
	u.AddConsumed(d, "shares", 400_000)
	if got := u.OverCapacity(); len(got) != 1 || got[0] != "gpu.nvidia.com/p/gpu-0/shares" {
		t.Errorf("1.1 of a GPU: got %v", got)
	}
	if got := u.FreeShare(d); got != 0 {
		t.Errorf("overcommitted: free share %v, want 0", got)
	}
}

func TestDRADeviceShare(t *testing.T) {
	inv := NewDRAInventory([]*resourceapi.ResourceSlice{slice("s", "n", "p", 1, 1, sharedGPU("gpu-0"), plain("whole"))})
	gpu, whole := inv.Devices[0], inv.Devices[1]
	for _, tc := range []struct {
		name string
		d    *DRADevice
		r    CapacityRequest
		want float64
		ok   bool
	}{
		{"460 of 1000 shares", gpu, capReq("shares", "460"), 0.46, true},
		{"memory is the larger part", gpu, capReq("shares", "100", "memory", "40Gi"), 0.5, true},
		{"no request takes the shared device whole", gpu, CapacityRequest{}, 1, true},
		{"a capacity the device lacks", gpu, capReq("bandwidth", "1"), 0, false},
		{"a plain device is whole", whole, CapacityRequest{}, 1, true},
	} {
		got, ok := tc.d.Share(tc.r)
		if ok != tc.ok || math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: got %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// TestStrandedDRAShares: FGD's fragmentation measure on partial GPUs.
func TestStrandedDRAShares(t *testing.T) {
	w, err := NewWorkload([]Class{
		{Resource: NVIDIAGPU, Devices: 1, Weight: 1}, // a half GPU (Need below)
		{Resource: NVIDIAGPU, Devices: 1, Weight: 1}, // a whole GPU
	})
	if err != nil {
		t.Fatal(err)
	}
	accept, need := []bool{true, true}, []float64{0.5, 1}
	node := func(untouched int64, partial ...float64) float64 {
		capacity := float64(untouched)
		for _, p := range partial {
			capacity += p
		}
		return w.StrandedDRA([]DRAFree{{Resource: NVIDIAGPU, Free: untouched, Size: 1, Accept: accept, Partial: partial, Need: need}},
			capacity, 1000, 1<<30)
	}
	for _, tc := range []struct {
		name      string
		untouched int64
		partial   []float64
		want      float64
	}{
		// The half job uses 1 and 0.5 and strands 0.2; the whole job uses
		// only the untouched GPU and strands 0.7: ½·0.2 + ½·0.7.
		{"FGD's example: free (1, 0.5, 0.2)", 1, []float64{0.5, 0.2}, 0.45},
		{"untouched GPUs only: nothing stranded", 2, nil, 0},
		{"one GPU with 0.3 free: stranded for both", 0, []float64{0.3}, 0.3},
		{"half free: usable by the half job only", 0, []float64{0.5}, 0.25},
	} {
		if got := node(tc.untouched, tc.partial...); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
	// FGD's gradient: a half job belongs on the GPU that is half used.
	before := node(1, 0.5)
	onPartial, onFresh := node(1)-before, node(0, 0.5, 0.5)-before
	if onPartial >= onFresh {
		t.Errorf("a half on the half-used GPU must strand less (%v) than on the fresh one (%v)", onPartial, onFresh)
	}
	// A class that cannot use the devices (Need 0) finds nothing usable.
	if got := w.StrandedDRA([]DRAFree{{Resource: NVIDIAGPU, Free: 1, Size: 1, Accept: accept, Need: []float64{0, 0}}}, 1, 1000, 1<<30); got != 1 {
		t.Errorf("need 0: got %v, want all stranded", got)
	}
}

// TestStrandedShares: the free shares of partly used GPUs that the
// fractional jobs could not use (devicefit_device_shares, stranded).
func TestStrandedShares(t *testing.T) {
	half := Class{Resource: NVIDIAGPU, Devices: 1, Capacity: capReq("shares", "500"), Weight: 1}
	quarter := Class{Resource: NVIDIAGPU, Devices: 1, Capacity: capReq("shares", "250"), Weight: 1}
	whole := Class{Resource: NVIDIAGPU, Devices: 1, Weight: 1}
	pair := Class{Resource: NVIDIAGPU, Devices: 2, Capacity: capReq("shares", "500"), Weight: 1}
	bigCPU := Class{Resource: NVIDIAGPU, Devices: 1, Capacity: capReq("shares", "250"), MilliCPU: 2000, Weight: 1}
	other := Class{Resource: "example.com/gpu", Devices: 1, Capacity: capReq("shares", "250"), Weight: 1}
	needs := map[string]float64{"shares=500": 0.5, "shares=250": 0.25}
	for _, tc := range []struct {
		name      string
		classes   []Class
		untouched int64
		partial   []float64
		want      float64
	}{
		{"untouched GPUs only: nothing stranded", []Class{half}, 2, nil, 0},
		{"half free, half jobs: usable", []Class{half}, 1, []float64{0.5}, 0},
		{"a quarter free, half jobs: stranded", []Class{half}, 1, []float64{0.25}, 0.25},
		{"a quarter free, half and quarter jobs: half of it", []Class{half, quarter}, 0, []float64{0.25}, 0.125},
		{"FGD's example without its whole job: 0.2 below the half", []Class{half}, 1, []float64{0.5, 0.2}, 0.2},
		{"whole-GPU jobs are not asked", []Class{half, whole}, 0, []float64{0.25}, 0.25},
		{"no fractional job: none stranded", []Class{whole}, 0, []float64{0.25}, 0},
		{"another resource's fractional jobs are not asked", []Class{other}, 0, []float64{0.25}, 0},
		{"a two-device job takes an untouched GPU beside the partial one", []Class{pair}, 1, []float64{0.5}, 0},
		{"a two-device job with only one device to take", []Class{pair}, 0, []float64{0.5}, 0.5},
		{"CPU used up: the shares are of no use", []Class{bigCPU}, 0, []float64{0.5}, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := NewWorkload(tc.classes)
			if err != nil {
				t.Fatal(err)
			}
			accept := make([]bool, len(tc.classes))
			need := make([]float64, len(tc.classes))
			for i, c := range w.Classes() {
				accept[i] = c.Resource == NVIDIAGPU
				need[i] = 1
				if n, ok := needs[c.Capacity.Key()]; ok {
					need[i] = n
				}
			}
			e := DRAFree{Resource: NVIDIAGPU, Free: tc.untouched, Size: 1, Accept: accept, Partial: tc.partial, Need: need}
			if got := w.StrandedShares(e, 1000, 1<<30); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
