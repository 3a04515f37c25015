package devicefit

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/dynamic-resource-allocation/deviceclass/extendedresourcecache"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	"k8s.io/utils/ptr"
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
	fwk.SharedDRAManager
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
	pl = newPlugin(t, args, draHandle{manager: draManager{resolver: cache}})
	_, status = pl.PreFilter(ctx, framework.NewCycleState(), pod, nodes)
	if !status.IsSuccess() {
		t.Fatalf("with a DeviceClass serving %s: got %v, want success", name, status)
	}
}
