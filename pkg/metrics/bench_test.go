package metrics

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-base/metrics"

	"github.com/devicefit/devicefit/pkg/devices"
)

// BenchmarkCollect5000Nodes is one scrape of the inventory gauges over 5000
// 8-GPU nodes of four products with four pods each (20000 pods), against a
// workload of eight classes: the cost a scrape adds to the scheduler.
//
//	go test ./pkg/metrics -run '^$' -bench Collect -benchmem
func BenchmarkCollect5000Nodes(b *testing.B) {
	products := []string{h100, l4, "NVIDIA-A100-SXM4-80GB", "Tesla-T4"}
	var nodes []*v1.Node
	var pods []*v1.Pod
	for i := range 5000 {
		name := fmt.Sprintf("node-%d", i)
		nodes = append(nodes, gpuNode(name, products[i%len(products)], "8"))
		for j := range 4 {
			pods = append(pods, boundPod(fmt.Sprintf("pod-%d-%d", i, j), name, "2", fmt.Sprint(1+(i+j)%2)))
		}
	}
	var classes []devices.Class
	for _, n := range []int64{1, 2, 4, 8} {
		classes = append(classes,
			devices.Class{Resource: gpu, Devices: n, MilliCPU: 4000 * n, MemoryBytes: 16 << 30 * n, Weight: 1},
			devices.Class{Resource: gpu, Devices: n, MilliCPU: 1000, MemoryBytes: 4 << 30, Weight: 2})
	}
	wl, err := devices.NewWorkload(classes)
	if err != nil {
		b.Fatal(err)
	}
	nl, pl := listers(b, nodes, pods)
	c := &inventoryCollector{source: &Source{Nodes: nl, Pods: pl, Resources: defaultSet(b), Workload: func([]*v1.Pod) *devices.Workload { return wl }}}
	// Registration initialises the lazy descriptors.
	metrics.NewKubeRegistry().CustomMustRegister(c)
	// 4 products × 4 states + 1 ratio: the buffer holds a whole scrape.
	ch := make(chan metrics.Metric, 64)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		c.CollectWithStability(ch)
		if len(ch) != 17 {
			b.Fatalf("a scrape sent %d metrics, want 17", len(ch))
		}
		for len(ch) > 0 {
			<-ch
		}
	}
}
