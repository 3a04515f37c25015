// Package perf measures scheduling throughput with upstream scheduler_perf
// (k8s.io/kubernetes/test/integration/scheduler_perf): the same GPU fleet and
// the same device pods, once under the upstream default profile and once under
// the devicefit profile of manifests/scheduler-config.yaml, in one run.
//
// scheduler_perf starts etcd (from PATH), an in-process kube-apiserver and an
// in-process scheduler per workload; DeviceFit and DevicePack come in through
// the out-of-tree registry, exactly as cmd/scheduler compiles them in.
//
// Layout:
//   - main_test.go    TestMain, BenchmarkPerfScheduling, the registry
//   - check_test.go   per-workload checks and extras (placement, batching, RSS)
//   - gangmix_test.go the GangMix workloads (label gangmix), generated per seed
//   - gangcheck_test.go the gang figures of a workload with pod groups
//   - bindspan_test.go  CliqueFleet's measured phase, timed from its PodGroups to its last bind
//   - config/         performance-config.yaml, scheduler configs, templates
//   - benchsummary/   the table `make bench` prints from the JSON files
//
// Run (see docs/performance.md):
//
//	make test-perf-short   # the 500-node workloads (label short): correctness, no threshold
//	make bench             # the 5000-node workloads (label performance) and the table
//	make bench-gangs       # GangMix and CliqueFleet short x3 (label gangmix), the gang table
//
// Every workload goes through BenchmarkPerfScheduling, also the short ones:
// RunIntegrationPerfScheduling has no way to pass an out-of-tree registry, so
// the devicefit profile could not be built there.
package perf

import (
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	_ "k8s.io/component-base/logs/json/register"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"

	dfmetrics "github.com/devicefit/devicefit/pkg/metrics"
	"github.com/devicefit/devicefit/pkg/plugins/devicefit"
	"github.com/devicefit/devicefit/pkg/plugins/devicepack"
)

// topic names the JSON file scheduler_perf writes:
// BenchmarkPerfScheduling_benchmark_devicefit_<time>.json.
const topic = "devicefit"

// configFile is relative to this package directory, where go test runs; the
// paths inside it are too.
const configFile = "config/performance-config.yaml"

// podsSchedulingTimeout bounds the wait for one createPods op's pods.
const podsSchedulingTimeout = 25 * time.Minute

// scrapeInterval is how often the devicefit gauges are computed here.
// scheduler_perf's throughput collector gathers the whole metrics registry
// every second (util.go, v1.37.2), and each gather of devicefit_devices
// walks every node and pod (about 60 ms at 5000 nodes, ~7% of the CPU of a
// GPUFleet run, which the default profile, without the collector, does
// not pay). A deployed devicefit is scraped by Prometheus every 15–30 s:
// gathers closer together reuse the last gauges, as they would between
// two scrapes (dfmetrics.SetMinGatherInterval).
const scrapeInterval = 15 * time.Second

func TestMain(m *testing.M) {
	dfmetrics.SetMinGatherInterval(scrapeInterval)
	if err := perf.InitTests(); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// BenchmarkPerfScheduling runs every workload of config/performance-config.yaml
// that the label filter selects (-perf-scheduling-label-filter, default
// "performance"; `make test-perf-short` selects "short").
func BenchmarkPerfScheduling(b *testing.B) {
	var extras runExtras
	// The config with the generated GangMix workloads (label gangmix).
	config, err := gangMixConfig(b.TempDir())
	if err != nil {
		b.Fatalf("generating the GangMix workloads: %v", err)
	}
	perf.RunBenchmarkPerfScheduling(b, config, topic, registry(),
		perf.WithPrepareFn(extras.prepare),
		// The default 10 minutes is below what 10000 devicefit pods take on
		// 2 busy cores; scheduler_perf's own per-workload limit is 30 minutes.
		perf.WithPodsSchedulingTimeout(podsSchedulingTimeout))
	if err := extras.write(dataItemsDir()); err != nil {
		b.Fatalf("writing the extras: %v", err)
	}
}

// registry is the out-of-tree registry of cmd/scheduler.
func registry() frameworkruntime.Registry {
	return frameworkruntime.Registry{
		devicefit.Name:  devicefit.New,
		devicepack.Name: devicepack.New,
	}
}

// dataItemsDir is scheduler_perf's -data-items-dir ("" = the package directory).
func dataItemsDir() string {
	if f := flag.Lookup("data-items-dir"); f != nil {
		return f.Value.String()
	}
	return ""
}
