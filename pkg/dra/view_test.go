package dra

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/devicefit/devicefit/internal/nvdra"
	"github.com/devicefit/devicefit/pkg/devices"
)

const driver = devices.NVIDIADRADriver

func gpu(name, typ, product string, memory string, counters map[string]string) resourceapi.Device {
	d := resourceapi.Device{Name: name,
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"type": {StringValue: ptr.To(typ)}, "productName": {StringValue: ptr.To(product)},
		},
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse(memory)}},
	}
	if typ == "mig" {
		d.Attributes["profile"] = resourceapi.DeviceAttribute{StringValue: ptr.To("3g.20gb")}
	}
	if len(counters) > 0 {
		cc := resourceapi.DeviceCounterConsumption{CounterSet: "gpu-0", Counters: map[string]resourceapi.Counter{}}
		for k, v := range counters {
			cc.Counters[k] = resourceapi.Counter{Value: resource.MustParse(v)}
		}
		d.ConsumesCounters = []resourceapi.DeviceCounterConsumption{cc}
	}
	return d
}

func nodeSlice(node string, devs ...resourceapi.Device) *resourceapi.ResourceSlice {
	return &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node},
		Spec: resourceapi.ResourceSliceSpec{Driver: driver, NodeName: ptr.To(node),
			Pool: resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1}, Devices: devs}}
}

func TestView(t *testing.T) {
	// "mixed": two L40S first, then two A100; "part": one A100 GPU and two
	// 3g MIG partitions of it over shared counters.
	mixed := nodeSlice("mixed",
		gpu("gpu-0", "gpu", "NVIDIA L40S", "48Gi", nil), gpu("gpu-1", "gpu", "NVIDIA L40S", "48Gi", nil),
		gpu("gpu-2", "gpu", "NVIDIA A100-SXM4-40GB", "40Gi", nil), gpu("gpu-3", "gpu", "NVIDIA A100-SXM4-40GB", "40Gi", nil))
	counters := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "part-counters"},
		Spec: resourceapi.ResourceSliceSpec{Driver: driver, NodeName: ptr.To("part"),
			Pool: resourceapi.ResourcePool{Name: "part", Generation: 1, ResourceSliceCount: 2},
			SharedCounters: []resourceapi.CounterSet{{Name: "gpu-0", Counters: map[string]resourceapi.Counter{
				"s0": {Value: resource.MustParse("1")}, "s1": {Value: resource.MustParse("1")}}}}}}
	part := nodeSlice("part",
		gpu("gpu-0", "gpu", "NVIDIA A100-SXM4-40GB", "40Gi", map[string]string{"s0": "1", "s1": "1"}),
		gpu("gpu-0-mig-0", "mig", "NVIDIA A100-SXM4-40GB", "20Gi", map[string]string{"s0": "1"}),
		gpu("gpu-0-mig-1", "mig", "NVIDIA A100-SXM4-40GB", "20Gi", map[string]string{"s1": "1"}))
	part.Spec.Pool.ResourceSliceCount = 2
	claimTemplatePod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: v1.PodSpec{ResourceClaims: []v1.PodResourceClaim{
			{Name: "a", ResourceClaimTemplateName: ptr.To("t")},
			{Name: "b", ResourceClaimName: ptr.To("shared")},
		}},
		Status: v1.PodStatus{ResourceClaimStatuses: []v1.PodResourceClaimStatus{{Name: "a", ResourceClaimName: ptr.To("p-a")}}},
	}
	migClaim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "p-a", Namespace: "ns"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
			{Name: "mig", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "mig.nvidia.com", Count: 1}},
		}}}}
	m := &Objects{
		Slices: []*resourceapi.ResourceSlice{mixed, part, counters},
		Classes: []*resourceapi.DeviceClass{
			nvdra.Class("gpu.nvidia.com", `device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "gpu"`, "nvidia.com/gpu"),
			nvdra.Class("mig.nvidia.com", `device.attributes["gpu.nvidia.com"].type == "mig"`, ""),
			nvdra.Class("broken", `device.attributes["gpu.nvidia.com"].nosuch.startsWith(`, ""),
		},
		Claims: []*resourceapi.ResourceClaim{nvdra.Allocated("ns", "other", "mixed/gpu-0"), migClaim, nvdra.Allocated("ns", "shared", "mixed/gpu-3")},
	}
	tr := NewTracker()
	ctx := context.Background()
	v, err := tr.View(ctx, m)
	if err != nil {
		t.Fatal(err)
	}

	// Entries: per class and product, devices the class selects and what
	// first fit could give now.
	got := entriesText(v.Entries("mixed"))
	want := "nvidia.com/gpu NVIDIA-L40S 1/2; nvidia.com/gpu NVIDIA-A100-SXM4-40GB 1/2"
	if got != want {
		t.Errorf("mixed: got %q, want %q", got, want)
	}
	got = entriesText(v.Entries("part"))
	want = "nvidia.com/gpu NVIDIA-A100-SXM4-40GB 1/1; deviceclass.resource.kubernetes.io/mig.nvidia.com NVIDIA-A100-SXM4-40GB-MIG-3g.20gb 2/2"
	if got != want {
		t.Errorf("part: got %q, want %q", got, want)
	}

	// The pod: nvidia.com/gpu through the class, and the template claim's MIG
	// request; the shared claim is allocated already.
	reqs, err := v.PodRequests(claimTemplatePod, devices.Demand{{Name: devices.NVIDIAGPU, Count: 1}, {Name: "example.com/fpga", Count: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 2 || reqs[0].Resource != devices.NVIDIAGPU || !reqs[0].Extended || reqs[1].Resource != "deviceclass.resource.kubernetes.io/mig.nvidia.com" || reqs[1].Count != 1 {
		t.Fatalf("requests: got %+v", reqs)
	}
	all := func(Request) bool { return true }
	// On "part" the whole GPU and a slice of it exclude each other.
	if picks, ok := v.Picks("part", reqs, all, nil); ok {
		t.Errorf("part cannot give a whole GPU and a slice of it: picks %v", picks)
	}
	onlyMIG := func(r Request) bool { return !r.Extended }
	picks, ok := v.Picks("part", reqs, onlyMIG, nil)
	if !ok || len(picks) != 1 || picks[0].Device.Name != "gpu-0-mig-0" || picks[0].Request != 1 {
		t.Fatalf("the MIG request alone: want gpu-0-mig-0, got %v (ok %v)", picks, ok)
	}
	afterEntries, capacity := v.EntriesAfter("part", picks, reqs, nil)
	after := entriesText(afterEntries)
	if capacity != 0.5 || v.Capacity("part") != 1 {
		t.Errorf("part: free capacity %v after one slice (want 0.5), %v before (want 1)", capacity, v.Capacity("part"))
	}
	if want := "nvidia.com/gpu NVIDIA-A100-SXM4-40GB 0/1; deviceclass.resource.kubernetes.io/mig.nvidia.com NVIDIA-A100-SXM4-40GB-MIG-3g.20gb 1/2"; after != want {
		t.Errorf("after one slice: got %q, want %q (the GPU is stranded for whole-GPU claims)", after, want)
	}
	if again := entriesText(v.Entries("part")); again != "nvidia.com/gpu NVIDIA-A100-SXM4-40GB 1/1; deviceclass.resource.kubernetes.io/mig.nvidia.com NVIDIA-A100-SXM4-40GB-MIG-3g.20gb 2/2" {
		t.Errorf("EntriesAfter must leave the view as it was: %q", again)
	}
	// First fit on the mixed node gives the L40S first: the allocator's order.
	picks, ok = v.Picks("mixed", reqs[:1], all, nil)
	if !ok || len(picks) != 1 || picks[0].Device.Name != "gpu-1" {
		t.Errorf("mixed: first fit of one GPU: want gpu-1 (gpu-0 is held), got %v", picks)
	}

	// A claim that does not exist is an error, not a silent zero.
	m.Claims = m.Claims[:1]
	v2, err := tr.View(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v2.PodRequests(claimTemplatePod, nil); err == nil || !strings.Contains(err.Error(), "p-a") {
		t.Errorf("missing claim: want an error naming it, got %v", err)
	}
	if v2.inv != v.inv {
		t.Error("unchanged slices must reuse the inventory")
	}

	// No slices, no view.
	if v, err := tr.View(ctx, &Objects{}); v != nil || err != nil {
		t.Errorf("no slices: want nil view, got %v, %v", v, err)
	}
}

func entriesText(es []Entry) string {
	var out []string
	for _, e := range es {
		out = append(out, fmt.Sprintf("%s %s %d/%d", e.Resource, e.Device.Product, e.Free, e.Total))
	}
	return strings.Join(out, "; ")
}

// TestViewShares: shared GPUs (consumable capacity, KEP-5075). A claim's
// half of gpu-0 shows as a partial device; first fit gives the next half
// the same GPU, which then has nothing left.
func TestViewShares(t *testing.T) {
	sl := nvdra.NodeSlice("n", nvdra.SharedGPUs(0, 2, "NVIDIA L4", "Ada Lovelace", "8.9.0", "24Gi")...)
	held := nvdra.Allocated("ns", "held", "n/gpu-0")
	held.Status.Allocation.Devices.Results[0].ShareID = ptr.To(types.UID("share-1"))
	held.Status.Allocation.Devices.Results[0].ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{
		nvdra.Shares: resource.MustParse("500"), "memory": resource.MustParse("0"),
	}
	half := nvdra.ShareClaim("ns", "p-half", "gpu.nvidia.com", 500)
	m := &Objects{
		Slices:  []*resourceapi.ResourceSlice{sl},
		Classes: []*resourceapi.DeviceClass{nvdra.Class("gpu.nvidia.com", nvdra.WholeGPUs, "nvidia.com/gpu")},
		Claims:  []*resourceapi.ResourceClaim{held, half},
	}
	v, err := NewTracker().View(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	e := v.Entries("n")
	if len(e) != 1 || e[0].Free != 1 || e[0].Held != 1 || fmt.Sprint(e[0].Partial) != "[0.5]" {
		t.Fatalf("entries: want one untouched GPU and gpu-0 half free, got %+v", e)
	}
	if got := v.Capacity("n"); got != 1.5 {
		t.Errorf("free capacity: got %v, want 1.5", got)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: v1.PodSpec{ResourceClaims: []v1.PodResourceClaim{{Name: "half", ResourceClaimName: ptr.To("p-half")}}}}
	reqs, err := v.PodRequests(pod, nil)
	if err != nil || len(reqs) != 1 || reqs[0].Capacity.Key() != "shares=500" {
		t.Fatalf("requests: got %+v, %v", reqs, err)
	}
	picks, ok := v.Picks("n", reqs, func(Request) bool { return true }, nil)
	if !ok || len(picks) != 1 || picks[0].Device.Name != "gpu-0" {
		t.Fatalf("first fit of a half: want gpu-0 (it has half left), got %v", picks)
	}
	after, capacity := v.EntriesAfter("n", picks, reqs, nil)
	if len(after) != 1 || after[0].Free != 1 || len(after[0].Partial) != 0 || capacity != 1 {
		t.Errorf("after the half: want gpu-0 used up and gpu-1 untouched (capacity 1), got %+v, %v", after, capacity)
	}
	if got := v.Capacity("n"); got != 1.5 || v.Usage().FreeShare(picks[0].Device) != 0.5 {
		t.Error("EntriesAfter must leave the usage as it was")
	}
}

// conflicting fails GatherAllocatedState as the scheduler's claim tracker
// does while a binding goroutine writes a claim.
type conflicting struct {
	fwk.ResourceClaimTracker
	failures int
	err      error
}

func (c *conflicting) GatherAllocatedState() (*structured.AllocatedState, error) {
	if c.failures > 0 {
		c.failures--
		return nil, c.err
	}
	return c.ResourceClaimTracker.GatherAllocatedState()
}

type conflictingManager struct {
	*Objects
	claims *conflicting
}

func (m conflictingManager) ResourceClaims() fwk.ResourceClaimTracker { return m.claims }

// TestViewRetriesConflicts: a concurrent claim write makes the tracker
// gather again, as DynamicResources does; another error fails the view.
func TestViewRetriesConflicts(t *testing.T) {
	objs := &Objects{Slices: []*resourceapi.ResourceSlice{nvdra.NodeSlice("n", nvdra.GPUs(0, 1, "NVIDIA L4", "Ada Lovelace", "8.9.0", "24Gi")...)}}
	conflict := &conflicting{ResourceClaimTracker: objs.ResourceClaims(), failures: 3, err: errors.New("conflicting concurrent modification")}
	if v, err := NewTracker().View(context.Background(), conflictingManager{objs, conflict}); err != nil || v == nil {
		t.Fatalf("three conflicts: want a view, got %v, %v", v, err)
	}
	broken := &conflicting{ResourceClaimTracker: objs.ResourceClaims(), failures: 1, err: errors.New("informer gone")}
	if _, err := NewTracker().View(context.Background(), conflictingManager{objs, broken}); err == nil {
		t.Error("another error must fail the view")
	}
}
