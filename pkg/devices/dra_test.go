package devices

import (
	"fmt"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/devicefit/devicefit/internal/nvdra"
)

func TestSanitiseProduct(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"NVIDIA L40S", "NVIDIA-L40S"},
		{"NVIDIA A100-SXM4-40GB", "NVIDIA-A100-SXM4-40GB"},
		{"  NVIDIA   H100 80GB HBM3 ", "NVIDIA-H100-80GB-HBM3"},
		{"Tesla T4 (rev a1)", "Tesla-T4-rev-a1"},
		{"NVIDIA GeForce RTX™ 4090", "NVIDIA-GeForce-RTX-4090"},
		{"1g.10gb", "1g.10gb"},
		{"", ""},
	} {
		if got := SanitiseProduct(tc.in); got != tc.want {
			t.Errorf("SanitiseProduct(%q) = %q, want %q (GFD's label value)", tc.in, got, tc.want)
		}
	}
}

func TestDescribeDRADevice(t *testing.T) {
	mig := nvdra.GPU("gpu-0-mig-9-0-1", "NVIDIA A100-SXM4-40GB", "Ampere", "8.0.0", "4864Mi")
	mig.Attributes["type"] = resourceapi.DeviceAttribute{StringValue: ptr.To("mig")}
	mig.Attributes["profile"] = resourceapi.DeviceAttribute{StringValue: ptr.To("1g.5gb")}
	qualified := resourceapi.Device{
		Name: "gpu-1",
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"gpu.nvidia.com/productName":           {StringValue: ptr.To("NVIDIA H100 80GB HBM3")},
			"gpu.nvidia.com/cudaComputeCapability": {VersionValue: ptr.To("9.0.0")},
		},
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"gpu.nvidia.com/memory": {Value: resource.MustParse("80Gi")}},
	}
	shared := nvdra.GPU("gpu-2", "NVIDIA L4", "Ada Lovelace", "8.9.0", "24Gi")
	shared.AllowMultipleAllocations = ptr.To(true)
	badCompute := nvdra.GPU("gpu-3", "NVIDIA L4", "Ada Lovelace", "eight", "24Gi")
	other := nvdra.GPU("gpu-0", "NVIDIA L4", "Ada Lovelace", "8.9.0", "24Gi")
	for _, tc := range []struct {
		name   string
		driver string
		dev    *resourceapi.Device
		want   Device
	}{
		{"whole GPU", NVIDIADRADriver, ptr.To(nvdra.GPU("gpu-0", "NVIDIA L40S", "Ada Lovelace", "8.9.0", "46068Mi")),
			Device{Product: "NVIDIA-L40S", Family: "ada-lovelace", Compute: Compute{8, 9}, HasCompute: true, MemoryMiB: 46068}},
		{"MIG device: a product of its own, as GFD's single strategy names it", NVIDIADRADriver, &mig,
			Device{Product: "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", Family: "ampere", Compute: Compute{8, 0}, HasCompute: true, MemoryMiB: 4864}},
		{"attributes qualified with the driver's domain", NVIDIADRADriver, &qualified,
			Device{Product: "NVIDIA-H100-80GB-HBM3", Compute: Compute{9, 0}, HasCompute: true, MemoryMiB: 81920}},
		{"allowMultipleAllocations is shared", NVIDIADRADriver, &shared,
			Device{Product: "NVIDIA-L4", Family: "ada-lovelace", Compute: Compute{8, 9}, HasCompute: true, MemoryMiB: 24576, Shared: true}},
		{"a compute capability that is no version reads as unknown", NVIDIADRADriver, &badCompute,
			Device{Product: "NVIDIA-L4", Family: "ada-lovelace", MemoryMiB: 24576}},
		{"another driver's attributes mean nothing to GFD selectors", "gpu.example.com", &other, Device{}},
		{"nil", NVIDIADRADriver, nil, Device{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DescribeDRADevice(tc.driver, tc.dev); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}

	// One annotation selects both worlds: the label GFD writes and the
	// attribute the DRA driver publishes for the same GPU.
	sel, err := ParseSelector(map[string]string{AnnotationProducts: "NVIDIA-L40S", AnnotationFamilies: "ada-lovelace"})
	if err != nil {
		t.Fatal(err)
	}
	labels := NewDeviceLabels(NVIDIAGPU)
	gfd := labels.Describe(map[string]string{LabelGPUProduct: "NVIDIA-L40S", LabelGPUFamily: "ada-lovelace"})
	dra := DescribeDRADevice(NVIDIADRADriver, ptr.To(nvdra.GPU("gpu-0", "NVIDIA L40S", "Ada Lovelace", "8.9.0", "46068Mi")))
	if sel.Match(&labels, gfd) != Match || sel.Match(&labels, dra) != Match {
		t.Errorf("devicefit.io/products NVIDIA-L40S must select the GFD node (%v) and the DRA device (%v)",
			sel.Match(&labels, gfd), sel.Match(&labels, dra))
	}
}

// slice publishes devices for node in pool (generation gen, count slices).
func slice(name, node, pool string, gen, count int64, devs ...resourceapi.Device) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourceapi.ResourceSliceSpec{
			Driver: NVIDIADRADriver, Pool: resourceapi.ResourcePool{Name: pool, Generation: gen, ResourceSliceCount: count},
			Devices: devs,
		},
	}
	if node != "" {
		s.Spec.NodeName = ptr.To(node)
	}
	return s
}

func names(ds []*DRADevice) string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Pool+"/"+d.Name)
	}
	return strings.Join(out, ",")
}

func plain(n string) resourceapi.Device { return resourceapi.Device{Name: n} }

func TestNewDRAInventory(t *testing.T) {
	perDevice := slice("c-devices", "", "c", 1, 1, plain("x"), plain("y"), plain("z"))
	perDevice.Spec.PerDeviceNodeSelection = ptr.To(true)
	perDevice.Spec.Devices[0].NodeName = ptr.To("n1")
	perDevice.Spec.Devices[1].NodeName = ptr.To("n2")
	perDevice.Spec.Devices[2].AllNodes = ptr.To(true)
	network := slice("d", "", "d", 1, 1, plain("net"))
	taint := plain("a-tainted")
	taint.Taints = []resourceapi.DeviceTaint{{Key: "example.com/unhealthy", Effect: resourceapi.DeviceTaintEffectNoSchedule}}
	informational := plain("a2")
	informational.Taints = []resourceapi.DeviceTaint{{Key: "example.com/note", Effect: resourceapi.DeviceTaintEffectNone}}
	network.Spec.AllNodes = ptr.To(true)

	inv := NewDRAInventory([]*resourceapi.ResourceSlice{
		// Pool b: generation 2 replaces 1; its two slices are ordered by name.
		slice("b-2", "n1", "b", 2, 2, plain("b3")),
		slice("b-old", "n1", "b", 1, 1, plain("stale")),
		slice("b-1", "n1", "b", 2, 2, plain("b1"), plain("b2")),
		// Pool a sorts before b, whatever the slice names.
		// A NoSchedule taint takes a device away; effect None does not.
		slice("z-a", "n1", "a", 1, 1, plain("a1"), taint, informational),
		// Pool e is incomplete (1 of 2 slices): the allocator uses none of it.
		slice("e-1", "n1", "e", 1, 2, plain("e1")),
		perDevice, network, nil,
	})
	if got, want := names(inv.Nodes["n1"].Devices), "a/a1,a/a2,b/b1,b/b2,b/b3,c/x"; got != want {
		t.Errorf("n1 in first-fit order: got %s, want %s", got, want)
	}
	if got, want := names(inv.Nodes["n2"].Devices), "c/y"; got != want {
		t.Errorf("n2 (per-device node selection): got %s, want %s", got, want)
	}
	if len(inv.Nodes) != 2 {
		t.Errorf("devices for all nodes belong to no node: got nodes %v", inv.Nodes)
	}
	for i, d := range inv.Devices {
		if d.ID != i {
			t.Errorf("device %s: ID %d at index %d", d.Name, d.ID, i)
		}
	}
}

// partitionable publishes, on node, a GPU whose memory slices are shared
// counters: the whole GPU consumes all of them, each 1-slice MIG device one.
func partitionable(node string, gpus, slicesPerGPU int) []*resourceapi.ResourceSlice {
	counters := slice(node+"-counters", node, node, 1, 2)
	devs := slice(node+"-devices", node, node, 1, 2)
	for g := range gpus {
		set := resourceapi.CounterSet{Name: fmt.Sprintf("gpu-%d", g), Counters: map[string]resourceapi.Counter{}}
		whole := resourceapi.Device{Name: fmt.Sprintf("gpu-%d", g),
			ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: set.Name, Counters: map[string]resourceapi.Counter{}}}}
		for s := range slicesPerGPU {
			c := fmt.Sprintf("memory-slice-%d", s)
			set.Counters[c] = resourceapi.Counter{Value: resource.MustParse("1")}
			whole.ConsumesCounters[0].Counters[c] = resourceapi.Counter{Value: resource.MustParse("1")}
		}
		counters.Spec.SharedCounters = append(counters.Spec.SharedCounters, set)
		devs.Spec.Devices = append(devs.Spec.Devices, whole)
		for s := range slicesPerGPU {
			devs.Spec.Devices = append(devs.Spec.Devices, resourceapi.Device{
				Name: fmt.Sprintf("gpu-%d-mig-%d", g, s),
				ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: set.Name,
					Counters: map[string]resourceapi.Counter{fmt.Sprintf("memory-slice-%d", s): {Value: resource.MustParse("1")}}}},
			})
		}
	}
	return []*resourceapi.ResourceSlice{devs, counters}
}

// held returns inv's devices of the given names, as allocated claims hold them.
func held(inv *DRAInventory, devices ...string) []*DRADevice {
	var out []*DRADevice
	for _, name := range devices {
		for _, d := range inv.Devices {
			if d.Name == name {
				out = append(out, d)
			}
		}
	}
	return out
}

func isMIG(d *DRADevice) bool   { return strings.Contains(d.Name, "-mig-") }
func isWhole(d *DRADevice) bool { return !isMIG(d) }

func TestDRAUsagePartitions(t *testing.T) {
	inv := NewDRAInventory(partitionable("n", 2, 4))
	n := inv.Nodes["n"]
	if len(n.Devices) != 10 {
		t.Fatalf("2 GPUs with 4 slices each: want 10 devices, got %s", names(n.Devices))
	}
	for _, tc := range []struct {
		name      string
		allocated []string
		wantWhole int64
		wantMIG   int64
		// the devices first fit gives a 2-slice request, and a 1-GPU one
		wantTwoMIG, wantOneGPU string
	}{
		{"nothing allocated", nil, 2, 8, "n/gpu-0-mig-0,n/gpu-0-mig-1", "n/gpu-0"},
		{"one slice of GPU 0 strands that GPU for whole-GPU claims", []string{"gpu-0-mig-2"}, 1, 7,
			"n/gpu-0-mig-0,n/gpu-0-mig-1", "n/gpu-1"},
		{"a whole GPU takes all its slices", []string{"gpu-1"}, 1, 4, "n/gpu-0-mig-0,n/gpu-0-mig-1", "n/gpu-0"},
		{"slices on both GPUs leave no whole GPU", []string{"gpu-0-mig-0", "gpu-1-mig-3"}, 0, 6,
			"n/gpu-0-mig-1,n/gpu-0-mig-2", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := NewDRAUsage(inv, held(inv, tc.allocated...))
			if got := u.Free(n, isWhole); got != tc.wantWhole {
				t.Errorf("free whole GPUs: got %d, want %d", got, tc.wantWhole)
			}
			if got := u.Free(n, isMIG); got != tc.wantMIG {
				t.Errorf("free slices: got %d, want %d", got, tc.wantMIG)
			}
			picks, ok := u.FirstFit(n, isMIG, 2, CapacityRequest{}, nil)
			if !ok || names(picks) != tc.wantTwoMIG {
				t.Errorf("first fit of 2 slices: got %s (ok %v), want %s", names(picks), ok, tc.wantTwoMIG)
			}
			picks, ok = u.FirstFit(n, isWhole, 1, CapacityRequest{}, nil)
			if ok != (tc.wantOneGPU != "") || ok && names(picks) != tc.wantOneGPU {
				t.Errorf("first fit of 1 GPU: got %s (ok %v), want %q", names(picks), ok, tc.wantOneGPU)
			}
			// FirstFit and Free leave u as it was.
			if got := u.Free(n, isWhole); got != tc.wantWhole {
				t.Errorf("after FirstFit: free whole GPUs %d, want %d", got, tc.wantWhole)
			}
		})
	}

	// With: what a placement leaves. Taking one slice on an empty node
	// leaves one whole GPU (first fit takes GPU 0's slice) and 7 slices.
	u := NewDRAUsage(inv, nil)
	picks, _ := u.FirstFit(n, isMIG, 1, CapacityRequest{}, nil)
	var whole, mig int64
	u.With(picks, CapacityRequest{}, func() { whole, mig = u.Free(n, isWhole), u.Free(n, isMIG) })
	if whole != 1 || mig != 7 {
		t.Errorf("after one slice: want 1 whole GPU and 7 slices free, got %d and %d", whole, mig)
	}
	if got := u.Free(n, isWhole); got != 2 {
		t.Errorf("With must restore the usage: %d whole GPUs free, want 2", got)
	}
}

func TestDRAUsageSharedAndOverConsumed(t *testing.T) {
	shared := plain("shared")
	shared.AllowMultipleAllocations = ptr.To(true)
	sl := partitionable("n", 1, 2)
	sl[0].Spec.Devices = append(sl[0].Spec.Devices, shared)
	inv := NewDRAInventory(sl)
	n := inv.Nodes["n"]
	u := NewDRAUsage(inv, held(inv, "shared", "gpu-0", "gpu-0"))
	all := func(*DRADevice) bool { return true }
	// The GPU holds both slices (listed twice, it counts once); the shared
	// device is never held whole.
	if got := u.Free(n, all); got != 1 {
		t.Errorf("free: want only the shared device, got %d", got)
	}
	for _, d := range n.Devices {
		if want := d.Name == "shared"; u.Available(d) != want {
			t.Errorf("%s: available %v, want %v", d.Name, u.Available(d), want)
		}
	}
}

func TestDRAFreeCapacity(t *testing.T) {
	sl := partitionable("n", 2, 4)
	sl[0].Spec.Devices = append(sl[0].Spec.Devices, plain("plain-0"), plain("plain-1"))
	inv := NewDRAInventory(sl)
	n := inv.Nodes["n"]
	for _, d := range n.Devices {
		want := 1.0
		if isMIG(d) {
			want = 0.25
		}
		if d.Size != want {
			t.Errorf("%s: size %v, want %v", d.Name, d.Size, want)
		}
	}
	for _, tc := range []struct {
		held []string
		want float64
	}{
		{nil, 4},
		{[]string{"gpu-0-mig-1"}, 3.75},
		{[]string{"gpu-0-mig-1", "gpu-0-mig-2", "gpu-1"}, 2.5},
		{[]string{"plain-1", "gpu-0"}, 2},
	} {
		u := NewDRAUsage(inv, held(inv, tc.held...))
		if got := u.FreeCapacity(n); got != tc.want {
			t.Errorf("held %v: free capacity %v, want %v", tc.held, got, tc.want)
		}
	}
}

// TestStrandedDRA: FGD's point on partitions. With whole-GPU and 1-slice
// jobs alike, a slice belongs on the GPU already cut: on a fresh GPU it
// leaves a half GPU that whole-GPU jobs cannot use.
func TestStrandedDRA(t *testing.T) {
	w, err := NewWorkload([]Class{
		{Resource: NVIDIAGPU, Devices: 1, Weight: 1},
		{Resource: "mig.nvidia.com", Devices: 1, Weight: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	gpuOnly, migOnly := []bool{true, false}, []bool{false, true}
	node := func(wholeFree, migFree int64, capacity float64) float64 {
		return w.StrandedDRA([]DRAFree{
			{Resource: NVIDIAGPU, Free: wholeFree, Size: 1, Accept: gpuOnly},
			{Resource: "mig.nvidia.com", Free: migFree, Size: 0.5, Accept: migOnly},
		}, capacity, 1000, 1<<30)
	}
	for _, tc := range []struct {
		name           string
		whole, mig     int64
		capacity, want float64
	}{
		{"fresh GPU: usable by both", 1, 2, 1, 0},
		{"one slice left: whole-GPU jobs cannot use it", 0, 1, 0.5, 0.25},
		{"all taken", 0, 0, 0, 0},
	} {
		if got := node(tc.whole, tc.mig, tc.capacity); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
	fresh, cut := node(1, 2, 1), node(0, 1, 0.5)
	onFresh, onCut := node(0, 1, 0.5)-fresh, node(0, 0, 0)-cut
	if onCut >= onFresh {
		t.Errorf("a slice must strand less on the cut GPU (%v) than on the fresh one (%v)", onCut, onFresh)
	}
	// CPU that does not fit strands all of it.
	cpuBound, err := NewWorkload([]Class{{Resource: NVIDIAGPU, Devices: 1, MilliCPU: 1000, Weight: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if got := cpuBound.StrandedDRA([]DRAFree{{Resource: NVIDIAGPU, Free: 1, Size: 1, Accept: []bool{true}}}, 1, 500, 1<<30); got != 1 {
		t.Errorf("no CPU left: want the whole free capacity stranded, got %v", got)
	}
	if got := w.StrandedDRA(nil, 0, 0, 0); got != 0 {
		t.Errorf("nothing free: got %v", got)
	}
}

func TestDRAOverconsumed(t *testing.T) {
	inv := NewDRAInventory(partitionable("n", 1, 2))
	if over := NewDRAUsage(inv, held(inv, "gpu-0-mig-0", "gpu-0-mig-1")).Overconsumed(); len(over) != 0 {
		t.Errorf("two slices of one GPU: got %v", over)
	}
	over := NewDRAUsage(inv, held(inv, "gpu-0", "gpu-0-mig-1")).Overconsumed()
	if len(over) != 1 || over[0] != "n/gpu-0/memory-slice-1" {
		t.Errorf("a GPU and one of its slices: want memory-slice-1 over, got %v", over)
	}
}

func TestDRAAllocationProblems(t *testing.T) {
	sl := partitionable("n", 1, 2)
	shared := slice("s", "n", "s", 1, 1, sharedGPU("gpu-s"))
	share := func(name, shares string) *resourceapi.ResourceClaim {
		c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		c.Status.Allocation = &resourceapi.AllocationResult{}
		c.Status.Allocation.Devices.Results = []resourceapi.DeviceRequestAllocationResult{{Driver: NVIDIADRADriver, Pool: "s", Device: "gpu-s",
			ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{"shares": resource.MustParse(shares)}}}
		return c
	}
	claim := func(name string, devs ...string) *resourceapi.ResourceClaim {
		c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		c.Status.Allocation = &resourceapi.AllocationResult{}
		for _, d := range devs {
			c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results,
				resourceapi.DeviceRequestAllocationResult{Driver: NVIDIADRADriver, Pool: "n", Device: d})
		}
		return c
	}
	for _, tc := range []struct {
		name   string
		claims []*resourceapi.ResourceClaim
		want   []string
		held   int
	}{
		{"two slices of one GPU", []*resourceapi.ResourceClaim{claim("a", "gpu-0-mig-0"), claim("b", "gpu-0-mig-1"), {}}, nil, 2},
		{"one device twice", []*resourceapi.ResourceClaim{claim("a", "gpu-0-mig-0"), claim("b", "gpu-0-mig-0")},
			[]string{"device gpu.nvidia.com/n/gpu-0-mig-0 is allocated to both ns/a and ns/b"}, 1},
		{"a GPU and its slice", []*resourceapi.ResourceClaim{claim("a", "gpu-0"), claim("b", "gpu-0-mig-1")},
			[]string{"shared counter n/gpu-0/memory-slice-1 is consumed beyond its value"}, 2},
		{"a device no slice publishes", []*resourceapi.ResourceClaim{claim("a", "gpu-9")},
			[]string{"claim ns/a holds gpu.nvidia.com/n/gpu-9, which no slice publishes"}, 0},
		{"two halves of a shared GPU", []*resourceapi.ResourceClaim{share("a", "500"), share("b", "500")}, nil, 1},
		{"a shared GPU consumed beyond its capacity", []*resourceapi.ResourceClaim{share("a", "600"), share("b", "500")},
			[]string{"capacity gpu.nvidia.com/s/gpu-s/shares is consumed beyond its value"}, 1},
	} {
		got, held := DRAAllocationProblems(append(sl, shared), tc.claims)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") || held != tc.held {
			t.Errorf("%s: got %q (%d held), want %q (%d)", tc.name, got, held, tc.want, tc.held)
		}
	}
}
