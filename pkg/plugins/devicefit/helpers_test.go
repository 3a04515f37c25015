package devicefit

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/devicefit/devicefit/pkg/apis/config"
	"github.com/devicefit/devicefit/pkg/devices"
)

const gpu = devices.NVIDIAGPU

func defaultArgs() *config.DeviceFitArgs {
	return &config.DeviceFitArgs{
		DeviceResources:  devices.DefaultResourcePatterns(),
		DeviceNodePolicy: config.DeviceNodePolicyNone,
	}
}

func newPlugin(t *testing.T, args *config.DeviceFitArgs, h fwk.Handle) *DeviceFit {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	pl, err := New(ctx, args, h)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return pl.(*DeviceFit)
}

// newPluginOrDefault builds the plugin from args, or from defaultArgs when
// args is nil (table tests that mostly use the defaults).
func newPluginOrDefault(t *testing.T, args *config.DeviceFitArgs) *DeviceFit {
	t.Helper()
	if args == nil {
		args = defaultArgs()
	}
	return newPlugin(t, args, nil)
}

// gpuNode is a node labelled by GFD with count devices of one product.
func gpuNode(name, product string, count string, labels map[string]string) *v1.Node {
	w := st.MakeNode().Name(name).Capacity(map[v1.ResourceName]string{
		v1.ResourceCPU: "64", v1.ResourceMemory: "512Gi", gpu: count,
	})
	if product != "" {
		w = w.Label(devices.LabelGPUProduct, product)
	}
	for k, v := range labels {
		w = w.Label(k, v)
	}
	return w.Obj()
}

func nodeInfo(n *v1.Node) fwk.NodeInfo {
	ni := framework.NewNodeInfo()
	ni.SetNode(n)
	return ni
}

func nodeInfos(nodes ...*v1.Node) []fwk.NodeInfo {
	out := make([]fwk.NodeInfo, len(nodes))
	for i, n := range nodes {
		out[i] = nodeInfo(n)
	}
	return out
}

// gpuPod asks for n nvidia.com/gpu with requests == limits.
func gpuPod(n string, annotations map[string]string) *v1.Pod {
	return st.MakePod().Name("p").Namespace("ns").Annotations(annotations).
		Res(map[v1.ResourceName]string{v1.ResourceCPU: "1", gpu: n}).Obj()
}

// fullScanPlugin is a plugin that walks every node for every pod, keeping
// nothing of the walk between cycles: the reference for kept results.
func fullScanPlugin(t *testing.T) *DeviceFit {
	pl := newPluginOrDefault(t, nil)
	pl.scanInFull = true
	return pl
}

// sameScan fails the test when the scan of the kept plugin's cycle state
// got differs from the reference's (want): the offers, the verdict counts
// and the number admitted, which checkOffers, the rejection metrics and
// candidates read.
func sameScan(t *testing.T, step string, want, got fwk.CycleState) {
	t.Helper()
	w, err := getPreFilterState(want)
	if err != nil {
		t.Fatalf("%s: reference: %v", step, err)
	}
	g, err := getPreFilterState(got)
	if err != nil {
		t.Fatalf("%s: kept: %v", step, err)
	}
	type scanned struct {
		Offers      []offer
		Left        [numExclusions]int
		NumAdmitted int
	}
	if diff := cmp.Diff(scanned{w.offers, w.left, w.numAdmitted}, scanned{g.offers, g.left, g.numAdmitted}, cmp.AllowUnexported(offer{})); diff != "" {
		t.Errorf("%s: kept scan (-reference +kept):\n%s", step, diff)
	}
}
