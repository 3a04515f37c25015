package devicefit

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/metrics"
)

// informerHandle gives the plugin an informer factory, as the scheduler does.
type informerHandle struct {
	fwk.Handle
	factory informers.SharedInformerFactory
}

func (h informerHandle) SharedInformerFactory() informers.SharedInformerFactory { return h.factory }
func (h informerHandle) SharedDRAManager() fwk.SharedDRAManager                 { return nil }

func counterValue(t *testing.T, c k8smetrics.CounterMetric) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(c)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestRejectionMetrics: every rejection adds one to its reason, at PreFilter
// once per attempt and per node, whether PreFilter leaves the node out of its
// result or Filter rejects it.
func TestRejectionMetrics(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	l4 := nodeInfo(gpuNode("l4", "NVIDIA-L4", "4", nil))
	l4b := nodeInfo(gpuNode("l4-b", "NVIDIA-L4", "4", nil))
	h100 := nodeInfo(gpuNode("h100", "NVIDIA-H100-80GB-HBM3", "8", nil))
	h100Full := infoWith(gpuNode("h100", "NVIDIA-H100-80GB-HBM3", "8", nil), boundPod("a", "h100", "8", 0))
	fractional := st.MakePod().Name("p").Res(map[v1.ResourceName]string{gpu: "500m"}).Obj()
	h100Pod := gpuPod("1", map[string]string{devices.AnnotationProducts: "H100-80GB-HBM3"})
	tests := []struct {
		name   string
		pod    *v1.Pod
		nodes  []fwk.NodeInfo
		reason metrics.Reason
		want   float64
	}{
		{name: "fractional count", pod: fractional, reason: metrics.ReasonInvalidRequest, want: 1},
		{name: "bad annotation", pod: gpuPod("1", map[string]string{devices.AnnotationMinMemory: "lots"}), reason: metrics.ReasonInvalidAnnotation, want: 1},
		{name: "above the largest node", pod: gpuPod("16", nil), reason: metrics.ReasonExceedsLargestNode, want: 1},
		{name: "no node matches", pod: gpuPod("1", map[string]string{devices.AnnotationProducts: "B200"}), reason: metrics.ReasonNoMatchingNode, want: 1},
		{
			// PreFilter names h100 only; the L4 nodes are counted there.
			name: "product mismatch on two nodes left out by PreFilter", pod: h100Pod,
			nodes: []fwk.NodeInfo{l4, l4b, h100}, reason: metrics.ReasonProduct, want: 2,
		},
		{
			// No node has room: PreFilter names none, Filter runs on all.
			name: "product mismatch on two nodes rejected by Filter", pod: h100Pod,
			nodes: []fwk.NodeInfo{l4, l4b, h100Full}, reason: metrics.ReasonProduct, want: 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pl := newPlugin(t, defaultArgs(), nil)
			counter := metrics.FilterRejections.WithLabelValues(string(tc.reason))
			before := counterValue(t, counter)
			state := framework.NewCycleState()
			nodes := tc.nodes
			if nodes == nil {
				nodes = []fwk.NodeInfo{l4, h100}
			}
			res, status := pl.PreFilter(ctx, state, tc.pod, nodes)
			if status.IsSuccess() {
				// As the framework does: Filter on PreFilter's nodes only.
				for _, n := range nodes {
					if res.AllNodes() || res.NodeNames.Has(n.Node().Name) {
						pl.Filter(ctx, state, tc.pod, n)
					}
				}
			}
			if got := counterValue(t, counter) - before; got != tc.want {
				t.Errorf("devicefit_filter_rejections_total{reason=%q} grew by %v, want %v", tc.reason, got, tc.want)
			}
		})
	}
}

// TestPostBind: a bound pod counts once per device resource, under the
// product of the node it was bound to, read from the informer cache.
func TestPostBind(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	const product = "NVIDIA-A100-SXM4-40GB"
	node := gpuNode("a100", product, "8", nil)
	factory := informers.NewSharedInformerFactory(fake.NewClientset(node), 0)
	pl := newPlugin(t, defaultArgs(), informerHandle{factory: factory})
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	placements := metrics.Placements.WithLabelValues(string(gpu), product)
	placed := metrics.PlacedDevices.WithLabelValues(string(gpu), product)
	unknown := metrics.Placements.WithLabelValues(string(gpu), metrics.ProductUnknown)
	p0, d0, u0 := counterValue(t, placements), counterValue(t, placed), counterValue(t, unknown)

	for _, n := range []string{"4", "2"} {
		state := framework.NewCycleState()
		if _, status := pl.PreFilter(ctx, state, gpuPod(n, nil), nodeInfos(node)); !status.IsSuccess() {
			t.Fatalf("PreFilter: %v", status)
		}
		pl.PostBind(ctx, state, gpuPod(n, nil), node.Name)
	}
	// A node gone from the cache: the placement still counts, product unknown.
	state := framework.NewCycleState()
	pl.PreFilter(ctx, state, gpuPod("1", nil), nodeInfos(node))
	pl.PostBind(ctx, state, gpuPod("1", nil), "deleted")
	// A CPU pod has no state and counts nothing.
	cpu := st.MakePod().Name("cpu").Res(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj()
	state = framework.NewCycleState()
	pl.PreFilter(ctx, state, cpu, nodeInfos(node))
	pl.PostBind(ctx, state, cpu, node.Name)

	if got := counterValue(t, placements) - p0; got != 2 {
		t.Errorf("placements{product=%q} grew by %v, want 2", product, got)
	}
	if got := counterValue(t, placed) - d0; got != 6 {
		t.Errorf("placed_devices{product=%q} grew by %v, want 4 + 2", product, got)
	}
	if got := counterValue(t, unknown) - u0; got != 1 {
		t.Errorf("placements{product=unknown} grew by %v, want 1", got)
	}
}
