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
// once per attempt and at Filter once per node.
func TestRejectionMetrics(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	l4 := gpuNode("l4", "NVIDIA-L4", "4", nil)
	h100 := gpuNode("h100", "NVIDIA-H100-80GB-HBM3", "8", nil)
	fractional := st.MakePod().Name("p").Res(map[v1.ResourceName]string{gpu: "500m"}).Obj()
	tests := []struct {
		name   string
		pod    *v1.Pod
		filter []*v1.Node // nodes Filter runs on after a successful PreFilter
		reason metrics.Reason
		want   float64
	}{
		{name: "fractional count", pod: fractional, reason: metrics.ReasonInvalidRequest, want: 1},
		{name: "bad annotation", pod: gpuPod("1", map[string]string{devices.AnnotationMinMemory: "lots"}), reason: metrics.ReasonInvalidAnnotation, want: 1},
		{name: "above the largest node", pod: gpuPod("16", nil), reason: metrics.ReasonExceedsLargestNode, want: 1},
		{name: "no node matches", pod: gpuPod("1", map[string]string{devices.AnnotationProducts: "B200"}), reason: metrics.ReasonNoMatchingNode, want: 1},
		{
			name:   "product mismatch on two nodes",
			pod:    gpuPod("1", map[string]string{devices.AnnotationProducts: "H100-80GB-HBM3"}),
			filter: []*v1.Node{l4, h100, l4},
			reason: metrics.ReasonProduct, want: 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pl := newPlugin(t, defaultArgs(), nil)
			counter := metrics.FilterRejections.WithLabelValues(string(tc.reason))
			before := counterValue(t, counter)
			state := framework.NewCycleState()
			_, status := pl.PreFilter(ctx, state, tc.pod, nodeInfos(l4, h100))
			for _, n := range tc.filter {
				if !status.IsSuccess() {
					t.Fatalf("PreFilter: %v", status)
				}
				pl.Filter(ctx, state, tc.pod, nodeInfo(n))
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
