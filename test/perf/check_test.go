package perf

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/kubernetes/test/utils/client-go/ktesting"

	"github.com/devicefit/devicefit/internal/clustercheck"
	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/test/perf/results"
)

// devicefitSchedulerName is the profile of manifests/scheduler-config.yaml.
const devicefitSchedulerName = "devicefit"

// cliqueFleet is the prefix of the CliqueFleet test cases, whose measured
// phase bindSpan times; measureNamespace holds every workload's measured
// pods (config/performance-config.yaml).
const (
	cliqueFleet      = "CliqueFleet_"
	measureNamespace = "measure"
)

// runExtras collects the extras of every workload of one benchmark run.
type runExtras struct {
	mu    sync.Mutex
	items []results.Workload
}

// prepare runs before each workload's first op (scheduler_perf's
// WithPrepareFn): it resets the peak RSS and registers the end-of-workload
// check. That cleanup runs after the workload's ops have finished and before
// scheduler_perf stops the scheduler and resets the metrics registry.
func (r *runExtras) prepare(tCtx ktesting.TContext) error {
	rssReset := resetPeakRSS() == nil
	name, client := tCtx.Name(), tCtx.Client()
	var span *bindSpan
	if strings.Contains(name, "/"+cliqueFleet) {
		var err error
		if span, err = startBindSpan(tCtx, client, measureNamespace); err != nil {
			return fmt.Errorf("timing the measured phase: %w", err)
		}
	}
	tCtx.TB().Cleanup(func() {
		x := results.Workload{
			Name:             name,
			PeakRSSMiB:       -1,
			ScheduleAttempts: counterBy("scheduler_schedule_attempts_total", "result"),
			BatchAttempts:    counterBy("scheduler_batch_attempts_total", "result"),
			BatchFlushes:     counterBy("scheduler_batch_cache_flushed_total", "reason"),
		}
		if rss, err := peakRSSMiB(); rssReset && err == nil {
			x.PeakRSSMiB = rss
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		check, err := checkPlacement(ctx, client)
		if err != nil {
			tCtx.Errorf("placement check: %v", err)
		}
		x.Placement = check
		if span != nil {
			// Every measured pod binds in CliqueFleet; a span that saw
			// fewer binds than the API server holds timed something else.
			x.Span = span.stop()
			if bound := check.BoundByNamespace[measureNamespace]; x.Span == nil || x.Span.Pods != bound {
				tCtx.Errorf("%s: the measured phase %+v saw other binds than the %d measured pods bound", name, x.Span, bound)
			}
			tCtx.Logf("%s: measured phase %+v", name, x.Span)
		}
		if gangs, found, err := checkGangs(ctx, client); err != nil {
			tCtx.Errorf("gang check: %v", err)
		} else if found {
			x.Gangs = &gangs
			tCtx.Logf("%s: gangs %+v", name, gangs)
		}
		tCtx.Logf("%s: placement %+v, batch attempts %v, batch flushes %v, peak RSS %.0f MiB",
			name, check, x.BatchAttempts, x.BatchFlushes, x.PeakRSSMiB)
		r.mu.Lock()
		r.items = append(r.items, x)
		r.mu.Unlock()
	})
	return nil
}

// write stores the extras next to scheduler_perf's JSON, as
// BenchmarkPerfScheduling_extras_devicefit_<time>.json.
func (r *runExtras) write(dir string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.items) == 0 {
		return nil
	}
	data, err := json.MarshalIndent(results.File{Version: "v1", Workloads: r.items}, "", "  ")
	if err != nil {
		return err
	}
	if dir != "" {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return err
		}
	}
	name := fmt.Sprintf("BenchmarkPerfScheduling_extras_%s_%s.json", topic, time.Now().UTC().Format("2006-01-02T15:04:05Z"))
	return os.WriteFile(filepath.Join(dir, name), append(data, '\n'), 0o644)
}

// checkPlacement lists every node and pod and checks the bound device pods:
// no node has more devices requested than allocatable, and a devicefit pod
// sits only where its selector admits the devices (the same pkg/devices
// functions DeviceFit uses, applied to what the API server holds). Devices
// served from ResourceSlices (a node without the resource in allocatable)
// are checked through the claims: the DRA invariant
// (devices.DRAAllocationProblems) and the selector on the devices the pod's
// claim holds.
func checkPlacement(ctx context.Context, client clientset.Interface) (results.Placement, error) {
	c := results.Placement{BoundByNamespace: map[string]int{}}
	set, err := devices.NewResourceSet(devices.DefaultResourcePatterns())
	if err != nil {
		return c, err
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return c, fmt.Errorf("listing nodes: %w", err)
	}
	pods, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return c, fmt.Errorf("listing pods: %w", err)
	}
	byName := make(map[string]*v1.Node, len(nodes.Items))
	for i := range nodes.Items {
		byName[nodes.Items[i].Name] = &nodes.Items[i]
	}
	dra, err := clustercheck.ReadDRA(ctx, client)
	if err != nil {
		return c, err
	}
	type nodeResource struct {
		node     string
		resource v1.ResourceName
	}
	requested := map[nodeResource]int64{}
	var errs []string
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.Spec.NodeName == "" || pod.DeletionTimestamp != nil {
			continue
		}
		c.BoundPods++
		c.BoundByNamespace[pod.Namespace]++
		node := byName[pod.Spec.NodeName]
		if node == nil {
			errs = append(errs, fmt.Sprintf("pod %s/%s bound to unknown node %s", pod.Namespace, pod.Name, pod.Spec.NodeName))
			continue
		}
		demand, err := devices.PodDemand(pod, set)
		if err != nil || len(demand) == 0 {
			continue
		}
		c.DevicePods++
		mismatch := ""
		var fromLabels devices.Demand
		for _, r := range demand {
			if dra.FromSlices(node, r.Name) {
				// Checked through the claims: the invariant below, and the
				// selector on the devices the pod's claim holds.
				if m, why := dra.SelectorMismatch(pod, r.Name); why != devices.Match || m != "" {
					mismatch = fmt.Sprintf("%s: %s %s", r.Name, mismatchNames[why], m)
				}
				continue
			}
			requested[nodeResource{node.Name, r.Name}] += r.Count
			fromLabels = append(fromLabels, r)
		}
		if mismatch == "" && len(fromLabels) > 0 {
			mismatch = selectorMismatch(pod, node, fromLabels)
		}
		if mismatch != "" {
			c.SelectorViolations++
			if pod.Spec.SchedulerName == devicefitSchedulerName && len(errs) < 10 {
				errs = append(errs, fmt.Sprintf("pod %s/%s on node %s: %s", pod.Namespace, pod.Name, node.Name, mismatch))
			}
		}
	}
	for nr, n := range requested {
		q := byName[nr.node].Status.Allocatable[nr.resource]
		if n > q.Value() {
			c.Overcommitted++
			if len(errs) < 20 {
				errs = append(errs, fmt.Sprintf("node %s: %d %s requested, %d allocatable", nr.node, n, nr.resource, q.Value()))
			}
		}
	}
	problems, held := dra.Problems()
	c.DRADevices = held
	c.Overcommitted += len(problems)
	errs = append(errs, problems...)
	if len(errs) > 0 {
		return c, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return c, nil
}

// selectorMismatch returns why the node's devices do not serve the pod's
// devicefit.io/* selector, or "".
func selectorMismatch(pod *v1.Pod, node *v1.Node, demand devices.Demand) string {
	sel, err := devices.ParseSelector(pod.Annotations)
	if err != nil {
		return "selector does not parse: " + err.Error()
	}
	for _, r := range demand {
		labels := devices.NewDeviceLabels(r.Name)
		if m := sel.Match(&labels, labels.Describe(node.Labels)); m != devices.Match {
			return fmt.Sprintf("%s: %s", r.Name, mismatchNames[m])
		}
	}
	return ""
}

// mismatchNames say which part of the selector (or the MIG setup) refused.
var mismatchNames = [...]string{
	devices.Match:                   "match",
	devices.MismatchProduct:         "product not in devicefit.io/products",
	devices.MismatchExcludedProduct: "product in devicefit.io/exclude-products",
	devices.MismatchMemory:          "device memory below devicefit.io/min-memory",
	devices.MismatchFamily:          "family not in devicefit.io/families",
	devices.MismatchCompute:         "compute capability below devicefit.io/min-compute",
	devices.MismatchShared:          "shared device for devicefit.io/sharing exclusive",
	devices.MismatchMIGStrategy:     "MIG strategy cannot serve the MIG resource",
	devices.MismatchMIGInvalid:      "invalid MIG configuration",
}

// counterBy sums a counter of the scheduler's metrics registry by one label,
// over every other label (the scheduler under test has one profile). A
// counter never incremented is not registered yet: an empty map.
func counterBy(metric, label string) map[string]float64 {
	out := map[string]float64{}
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return out
	}
	for _, f := range families {
		if f.GetName() != metric {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label && m.GetCounter() != nil {
					out[lp.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

// resetPeakRSS resets VmHWM of this process (Linux: "5" to clear_refs).
func resetPeakRSS() error {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSSMiB reads VmHWM of this process.
func peakRSSMiB() (float64, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(string(rest)), " kB"), 64)
			if err != nil {
				return 0, err
			}
			return kb / 1024, nil
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/self/status")
}
