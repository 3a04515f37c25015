package replay

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// benchFleet is a generated fleet and trace in the shape of the Alibaba GPU
// trace (2-, 4- and 8-GPU nodes of four models, CPU-only nodes; 1-8 GPU
// pods, a fifth of them restricted to one model, CPU-only pods), so the
// benchmark needs nothing outside the repository.
func benchFleet(nodes, pods int) ([]NodeSpec, []PodSpec) {
	ns := GeneratedFleet(nodes)
	models := generatedModels
	sizes := []int64{1, 1, 1, 2, 1, 4, 1, 8, 0, 2}
	var ps []PodSpec
	for i := range pods {
		p := PodSpec{Name: fmt.Sprint("pod-", i), MilliCPU: 4000, MemoryMiB: 16384, GPUs: sizes[i%len(sizes)]}
		if p.GPUs > 0 {
			p.GPUMilli = 1000
			if i%5 == 0 {
				p.Products = []string{models[i%len(models)]}
			}
		}
		ps = append(ps, p)
	}
	return ns, ps
}

// BenchmarkReplay replays a generated 1000-node trace to 100% of its GPU
// capacity under the upstream default profile and the deployed devicefit
// profile, and reports the replay's scheduling rate (pods/s, one pod =
// PreFilter through Reserve of the real framework). Compare the two within
// one run: `go test ./pkg/replay -run '^$' -bench Replay`.
func BenchmarkReplay(b *testing.B) {
	nodes, pods := benchFleet(1000, 3000)
	for _, name := range []string{PolicyDefault, PolicyDeviceFit} {
		b.Run(name, func(b *testing.B) {
			// No test logger: the framework's log lines would end up in the
			// benchmark output.
			ctx := klog.NewContext(context.Background(), logr.Discard())
			pols, err := ResolvePolicies([]string{name}, manifestsConfig, nil)
			if err != nil {
				b.Fatal(err)
			}
			cfg := Config{Nodes: nodes, Pods: pods, Fractional: FractionalRoundUp, Policies: pols,
				Arrival: ArrivalOptions{Tune: 1, Order: OrderShuffle, Seed: 42}, Engine: EngineOptions{Parallelism: 2}}
			var scheduled int
			var elapsed time.Duration
			for b.Loop() {
				start := time.Now()
				res, err := Run(ctx, cfg)
				if err != nil {
					b.Fatal(err)
				}
				elapsed += time.Since(start)
				scheduled += res.Policies[0].Final.Pods
			}
			b.ReportMetric(float64(scheduled)/elapsed.Seconds(), "pods/s")
		})
	}
}
