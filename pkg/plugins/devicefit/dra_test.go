package devicefit

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/dynamic-resource-allocation/deviceclass/extendedresourcecache"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	"k8s.io/utils/ptr"

	"github.com/devicefit/devicefit/internal/nvdra"
	"github.com/devicefit/devicefit/pkg/dra"
)

// draHandle exposes a real ExtendedResourceCache (the scheduler's own
// DeviceClass -> extended resource index) through the framework handle;
// DeviceFit calls nothing else on the handle but SharedInformerFactory,
// which may be nil.
type draHandle struct {
	fwk.Handle
	manager draManager
}

func (h draHandle) SharedDRAManager() fwk.SharedDRAManager { return h.manager }

func (h draHandle) SharedInformerFactory() informers.SharedInformerFactory { return nil }

type draManager struct {
	*dra.Objects
	resolver fwk.DeviceClassResolver
}

func (m draManager) DeviceClassResolver() fwk.DeviceClassResolver { return m.resolver }

// TestPreFilterDRAExtendedResource: with DRAExtendedResource (GA in 1.37) a
// DeviceClass may serve example.com/gpu from ResourceSlices, and no node shows
// it in allocatable, or shows less than the slices hold. DeviceFit must defer
// to upstream there instead of calling the pod unresolvable.
func TestPreFilterDRAExtendedResource(t *testing.T) {
	logger, ctx := ktesting.NewTestContext(t)
	const name v1.ResourceName = "example.com/gpu"
	nodes := nodeInfos(st.MakeNode().Name("n").Capacity(map[v1.ResourceName]string{name: "2"}).Obj())
	pod := st.MakePod().Name("p").Res(map[v1.ResourceName]string{name: "4"}).Obj()

	args := defaultArgs()
	args.DeviceResources = append(args.DeviceResources, string(name))

	// Without a class the count is judged from allocatable.
	pl := newPlugin(t, args, nil)
	_, status := pl.PreFilter(ctx, framework.NewCycleState(), pod, nodes)
	want := fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "requests 4 example.com/gpu; the largest node offers 2")
	if diff := cmp.Diff(want, status); diff != "" {
		t.Fatalf("without a DeviceClass (-want,+got):\n%s", diff)
	}

	cache := extendedresourcecache.NewExtendedResourceCache(logger)
	cache.OnAdd(&resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu.example.com"},
		Spec:       resourceapi.DeviceClassSpec{ExtendedResourceName: ptr.To(string(name))},
	}, true)
	pl = newPlugin(t, args, draHandle{manager: draManager{Objects: &dra.Objects{}, resolver: cache}})
	_, status = pl.PreFilter(ctx, framework.NewCycleState(), pod, nodes)
	if !status.IsSuccess() {
		t.Fatalf("with a DeviceClass serving %s: got %v, want success", name, status)
	}
}

// TestDRASelectors: nvidia.com/gpu served from slices; the selectors read
// the devices' attributes, and a node passes only if the devices first fit
// would give the pod are acceptable (the mixed-node rule).
func TestDRASelectors(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cpuNode := func(name string) *v1.Node {
		return st.MakeNode().Name(name).Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "64", v1.ResourceMemory: "512Gi"}).Obj()
	}
	l40s := func(first, n int) []resourceapi.Device {
		return nvdra.GPUs(first, n, "NVIDIA L40S", "Ada Lovelace", "8.9.0", "46068Mi")
	}
	a100 := func(first, n int) []resourceapi.Device {
		return nvdra.GPUs(first, n, "NVIDIA A100-SXM4-80GB", "Ampere", "8.0.0", "80Gi")
	}
	slices := []*resourceapi.ResourceSlice{
		nvdra.NodeSlice("mixed", append(l40s(0, 2), a100(2, 2)...)...),
		nvdra.NodeSlice("a100", a100(0, 4)...),
		nvdra.NodeSlice("l40s", l40s(0, 4)...),
	}
	nodes := nodeInfos(cpuNode("mixed"), cpuNode("a100"), cpuNode("l40s"), cpuNode("cpu"))
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		held        []string
		want        []string // the PreFilterResult; nil for all nodes
		wantFilter  map[string]string
	}{
		{name: "products: the mixed node would give its L40S first",
			annotations: map[string]string{"devicefit.io/products": "A100-SXM4-80GB"},
			want:        []string{"a100"},
			wantFilter:  map[string]string{"mixed": ReasonProduct, "l40s": ReasonProduct, "a100": ""}},
		{name: "products: with the L40S held, the mixed node gives A100s",
			annotations: map[string]string{"devicefit.io/products": "A100-SXM4-80GB"},
			held:        []string{"mixed/gpu-0", "mixed/gpu-1"},
			want:        []string{"a100", "mixed"},
			wantFilter:  map[string]string{"mixed": "", "l40s": ReasonProduct}},
		{name: "min-memory from the memory capacity",
			annotations: map[string]string{"devicefit.io/min-memory": "64Gi"},
			want:        []string{"a100"},
			wantFilter:  map[string]string{"mixed": ReasonMemory, "l40s": ReasonMemory}},
		{name: "families from the architecture",
			annotations: map[string]string{"devicefit.io/families": "ada-lovelace"},
			want:        []string{"l40s", "mixed"},
			wantFilter:  map[string]string{"a100": ReasonFamily, "mixed": ""}},
		{name: "no selector: every node with the class's devices",
			want:       []string{"a100", "l40s", "mixed"},
			wantFilter: map[string]string{"mixed": "", "cpu": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var claims []*resourceapi.ResourceClaim
			if len(tc.held) > 0 {
				claims = append(claims, nvdra.Allocated("ns", "running", tc.held...))
			}
			m := &dra.Objects{Slices: slices, Claims: claims,
				Classes: []*resourceapi.DeviceClass{nvdra.Class("gpu.nvidia.com", nvdra.WholeGPUs, string(gpu))}}
			pl := newPlugin(t, defaultArgs(), draHandle{manager: draManager{Objects: m, resolver: m.DeviceClassResolver()}})
			pod := gpuPod("2", tc.annotations)
			state := framework.NewCycleState()
			res, status := pl.PreFilter(ctx, state, pod, nodes)
			if !status.IsSuccess() {
				t.Fatalf("PreFilter: %v", status)
			}
			var got []string
			if res != nil {
				got = sets.List(res.NodeNames)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("PreFilterResult (-want,+got):\n%s", diff)
			}
			for _, ni := range nodes {
				want, ok := tc.wantFilter[ni.Node().Name]
				if !ok {
					continue
				}
				var reason string
				if s := pl.Filter(ctx, state, pod, ni); !s.IsSuccess() {
					reason = s.Message()
				}
				if reason != want {
					t.Errorf("Filter(%s): got %q, want %q", ni.Node().Name, reason, want)
				}
			}
		})
	}
}

// TestDRAQueueingHints: a pod whose nvidia.com/gpu a DeviceClass serves is
// queued when a ResourceSlice appears or a claim lets go of its devices;
// other pods, and claims that still hold theirs, do not wake it.
func TestDRAQueueingHints(t *testing.T) {
	logger, ctx := ktesting.NewTestContext(t)
	m := &dra.Objects{Classes: []*resourceapi.DeviceClass{nvdra.Class("gpu.nvidia.com", nvdra.WholeGPUs, string(gpu))}}
	pl := newPlugin(t, defaultArgs(), draHandle{manager: draManager{Objects: m, resolver: m.DeviceClassResolver()}})
	events, err := pl.EventsToRegister(ctx)
	if err != nil {
		t.Fatal(err)
	}
	registered := map[fwk.EventResource]fwk.ActionType{}
	for _, e := range events {
		registered[e.Event.Resource] |= e.Event.ActionType
	}
	if registered[fwk.ResourceSlice] != fwk.Add|fwk.Update || registered[fwk.ResourceClaim] != fwk.Update|fwk.Delete {
		t.Errorf("DRA events: got slices %v, claims %v", registered[fwk.ResourceSlice], registered[fwk.ResourceClaim])
	}
	held := nvdra.Allocated("ns", "c", "n/gpu-0")
	free := held.DeepCopy()
	free.Status.Allocation = nil
	gpuPodDRA, cpuPod := gpuPod("2", nil), st.MakePod().Name("cpu").Obj()
	for _, tc := range []struct {
		name     string
		hint     func(klog.Logger, *v1.Pod, interface{}, interface{}) (fwk.QueueingHint, error)
		pod      *v1.Pod
		old, new interface{}
		want     fwk.QueueingHint
	}{
		{"slice added", pl.isSchedulableAfterDRAChange, gpuPodDRA, nil, nvdra.NodeSlice("n"), fwk.Queue},
		{"slice added, CPU pod", pl.isSchedulableAfterDRAChange, cpuPod, nil, nvdra.NodeSlice("n"), fwk.QueueSkip},
		{"allocated claim deleted", pl.isSchedulableAfterClaimChange, gpuPodDRA, held, nil, fwk.Queue},
		{"allocation removed", pl.isSchedulableAfterClaimChange, gpuPodDRA, held, free, fwk.Queue},
		{"claim allocated", pl.isSchedulableAfterClaimChange, gpuPodDRA, free, held, fwk.QueueSkip},
		{"unallocated claim deleted", pl.isSchedulableAfterClaimChange, gpuPodDRA, free, nil, fwk.QueueSkip},
	} {
		got, err := tc.hint(logger, tc.pod, tc.old, tc.new)
		if err != nil || got != tc.want {
			t.Errorf("%s: got %v (%v), want %v", tc.name, got, err, tc.want)
		}
	}
}
