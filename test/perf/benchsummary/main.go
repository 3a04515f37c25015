// Command benchsummary prints the table of `make bench` from the JSON files
// that test/perf writes: scheduler_perf's data items
// (BenchmarkPerfScheduling_benchmark_devicefit_*.json) and test/perf's extras
// (BenchmarkPerfScheduling_extras_devicefit_*.json), plus, with -micro, the
// output of the plugins' Go micro-benchmarks.
//
//	go run ./test/perf/benchsummary [-micro bench/micro.txt] [-ratio GPUFleet/5000Nodes_10000Pods] FILE.json...
//
// Test cases come in pairs, <shape>_Default and <shape>_DeviceFit (see
// test/perf/config/performance-config.yaml); every pair found gets its rows
// and its devicefit/default ratios. The last line is the throughput ratio of
// the -ratio workload; without data for it, benchsummary says so and exits 1.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/devicefit/devicefit/test/perf/results"
)

// defaultRatio is the comparison of docs/performance.md and the issue.
const defaultRatio = "GPUFleet/5000Nodes_10000Pods"

// defaultDRARatio is the DRA case of `make bench`: DRA-backed extended
// resources on a mixed fleet.
const defaultDRARatio = "DRAFleet/1000Nodes_1500Pods"

const (
	profileDefault   = "Default"
	profileDeviceFit = "DeviceFit"
)

type dataItems struct {
	DataItems []struct {
		Data   map[string]float64 `json:"data"`
		Unit   string             `json:"unit"`
		Labels map[string]string  `json:"labels"`
	} `json:"dataItems"`
}

// The extras files are test/perf's results.File.
type (
	extras = results.Workload
	gangs  = results.Gangs
)

// key identifies one run: shape/workload under one profile.
type key struct{ workload, profile string }

// run is everything known about one key.
type run struct {
	metrics map[string]map[string]float64 // metric id -> bucket -> value
	extras  *extras
}

func main() {
	micro := flag.String("micro", "", "file with the output of the Go micro-benchmarks (go test -bench)")
	ratioOf := flag.String("ratio", defaultRatio, "workload (shape/name) whose throughput ratio ends the output")
	gangsOnly := flag.Bool("gangs", false, "print the GangMix table (make bench-gangs) only")
	draRatioOf := flag.String("dra-ratio", defaultDRARatio, "workload (shape/name) of the DRA case, whose throughput ratio comes before the last line (empty: none)")
	flag.Parse()
	runs := map[key]*run{}
	var profiles []string
	for _, path := range flag.Args() {
		if strings.HasSuffix(path, "-cpu.prof") {
			profiles = append(profiles, path)
			continue
		}
		if err := load(path, runs); err != nil {
			fmt.Fprintf(os.Stderr, "benchsummary: %s: %v\n", path, err)
			os.Exit(2)
		}
	}
	w := os.Stdout
	if *gangsOnly {
		ok := reportGangs(w, runs)
		cliqueFleetSpans(w, runs)
		if !ok {
			os.Exit(1)
		}
		return
	}
	ok := report(w, runs, *ratioOf)
	scaling(w, runs)
	cliqueFleetSpans(w, runs)
	if len(profiles) > 0 {
		if err := printProfiles(w, profiles, runs); err != nil {
			fmt.Fprintf(os.Stderr, "benchsummary: %v\n", err)
		}
	}
	if *micro != "" {
		if err := printMicro(w, *micro); err != nil {
			fmt.Fprintf(os.Stderr, "benchsummary: %v\n", err)
		}
	}
	fmt.Fprintln(w)
	if *draRatioOf != "" {
		if r, found := ratio(runs, *draRatioOf, "SchedulingThroughput", "Average"); found {
			fmt.Fprintf(w, "DRA devicefit/default throughput ratio: %.2f (%s%s)\n", r, *draRatioOf, wallNote(runs, *draRatioOf, "; ", ""))
		} else {
			fmt.Fprintf(w, "DRA devicefit/default throughput ratio: n/a (no %s data for both profiles)\n", *draRatioOf)
		}
	}
	r, found := ratio(runs, *ratioOf, "SchedulingThroughput", "Average")
	label := "devicefit/default throughput ratio"
	if *ratioOf != defaultRatio {
		label += " (" + *ratioOf + ")"
	}
	if !found {
		fmt.Fprintf(w, "%s: n/a (no %s data for both profiles)\n", label, *ratioOf)
		os.Exit(1)
	}
	fmt.Fprintf(w, "%s: %.2f%s\n", label, r, wallNote(runs, *ratioOf, " (", ")"))
	if !ok {
		os.Exit(1)
	}
}

// splitName turns "BenchmarkPerfScheduling/GPUFleet_DeviceFit/500Nodes[/ns]"
// into its key.
func splitName(name string) (key, bool) {
	parts := strings.Split(strings.TrimPrefix(name, "BenchmarkPerfScheduling/"), "/")
	if len(parts) < 2 {
		return key{}, false
	}
	i := strings.LastIndex(parts[0], "_")
	if i < 0 {
		return key{}, false
	}
	return key{workload: parts[0][:i] + "/" + parts[1], profile: parts[0][i+1:]}, true
}

func get(runs map[key]*run, k key) *run {
	r := runs[k]
	if r == nil {
		r = &run{metrics: map[string]map[string]float64{}}
		runs[k] = r
	}
	return r
}

func load(path string, runs map[key]*run) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if strings.Contains(path, "_extras_") {
		var f results.File
		if err := json.Unmarshal(data, &f); err != nil {
			return err
		}
		for i := range f.Workloads {
			if k, ok := splitName(f.Workloads[i].Name); ok {
				get(runs, k).extras = &f.Workloads[i]
			}
		}
		return nil
	}
	var f dataItems
	if err := json.Unmarshal(data, &f); err != nil {
		return err
	}
	for _, it := range f.DataItems {
		k, ok := splitName(it.Labels["Name"])
		if !ok || it.Data == nil {
			continue
		}
		get(runs, k).metrics[metricID(it.Labels)] = it.Data
	}
	return nil
}

// metricID is the metric name with the labels that matter, e.g.
// "scheduler_plugin_execution_duration_seconds{DeviceFit,Filter}".
func metricID(labels map[string]string) string {
	id := labels["Metric"]
	var vs []string
	for _, l := range []string{"plugin", "extension_point", "result"} {
		if v, ok := labels[l]; ok && v != "not applicable" {
			vs = append(vs, v)
		}
	}
	if len(vs) > 0 {
		id += "{" + strings.Join(vs, ",") + "}"
	}
	return id
}

func value(runs map[key]*run, k key, metric, bucket string) (float64, bool) {
	r := runs[k]
	if r == nil {
		return 0, false
	}
	v, ok := r.metrics[metric][bucket]
	return v, ok
}

func ratio(runs map[key]*run, workload, metric, bucket string) (float64, bool) {
	d, okD := value(runs, key{workload, profileDefault}, metric, bucket)
	f, okF := value(runs, key{workload, profileDeviceFit}, metric, bucket)
	if !okD || !okF || d == 0 {
		return 0, false
	}
	return f / d, true
}

// wallRatio is the default/devicefit ratio of the measured pods' wall
// time: the throughput ratio over the whole measurement, where
// SchedulingThroughput averages one-second samples. The two agree within
// 0.03 on make bench's GPUFleet runs, a minute or more each; over a few
// seconds the samples are a handful and partial seconds sway their
// average: four runs of
// DRAFleet/200Nodes on the same code gave 0.61, 0.91, 0.94 and 1.01 by the
// average, 1.68, 1.07, 1.64 and 1.43 by wall time.
func wallRatio(runs map[key]*run, workload string) (float64, bool) {
	d, okD := value(runs, key{workload, profileDefault}, "SchedulingDuration", "Duration")
	f, okF := value(runs, key{workload, profileDeviceFit}, "SchedulingDuration", "Duration")
	if !okD || !okF || f == 0 {
		return 0, false
	}
	return d / f, true
}

// wallNote is "<before><wallRatio> by wall time<after>", empty without
// durations.
func wallNote(runs map[key]*run, workload, before, after string) string {
	if r, ok := wallRatio(runs, workload); ok {
		return fmt.Sprintf("%s%.2f by wall time%s", before, r, after)
	}
	return ""
}

// report prints the tables; it returns false when a placement check failed.
func report(out io.Writer, runs map[key]*run, ratioOf string) bool {
	workloads := map[string]bool{}
	for k := range runs {
		workloads[k.workload] = true
	}
	names := make([]string, 0, len(workloads))
	for n := range workloads {
		names = append(names, n)
	}
	sort.Strings(names)
	ok := true

	fmt.Fprintln(out, "scheduler_perf (test/perf): throughput of the measured pods, scheduling attempt latency")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tprofile\tpods/s avg\tp50\tp99\tattempt ms avg\tp50\tp99\tpeak RSS MiB\theap max MiB\tbatch hints used\tunbatchable pods\tattempt errors\tselector violations\t")
	const attempt = "scheduler_scheduling_attempt_duration_seconds{scheduled}"
	for _, n := range names {
		for _, p := range []string{profileDefault, profileDeviceFit} {
			k := key{n, p}
			r := runs[k]
			if r == nil {
				continue
			}
			th, at := r.metrics["SchedulingThroughput"], r.metrics[attempt]
			heap := r.metrics["heap_memory_usage"]
			rss, hints, unbatchable, errs, violations := "-", "-", "-", "-", "-"
			if x := r.extras; x != nil {
				if x.PeakRSSMiB >= 0 {
					rss = fmt.Sprintf("%.0f", x.PeakRSSMiB)
				}
				hints = fmt.Sprintf("%.0f", x.BatchAttempts["hint_used"])
				unbatchable = fmt.Sprintf("%.0f", x.BatchFlushes["pod_not_batchable"])
				errs = fmt.Sprintf("%.0f", x.ScheduleAttempts["error"])
				violations = fmt.Sprintf("%d/%d", x.Placement.SelectorViolations, x.Placement.DevicePods)
				if x.Placement.Overcommitted > 0 || p == profileDeviceFit && x.Placement.SelectorViolations > 0 {
					ok = false
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", n, strings.ToLower(p),
				num(th, "Average", 1), num(th, "Perc50", 1), num(th, "Perc99", 1),
				num(at, "Average", 2), num(at, "Perc50", 2), num(at, "Perc99", 2),
				rss, num(heap, "Max", 0), hints, unbatchable, errs, violations)
		}
		if r, found := ratio(runs, n, "SchedulingThroughput", "Average"); found {
			p50, _ := ratio(runs, n, "SchedulingThroughput", "Perc50")
			p99, _ := ratio(runs, n, "SchedulingThroughput", "Perc99")
			a, _ := ratio(runs, n, attempt, "Average")
			fmt.Fprintf(tw, "%s\tdevicefit/default\t%.2f\t%.2f\t%.2f\t%.2f\t\t\t\t\t\t\t\t\t\n", n, r, p50, p99, a)
		}
	}
	tw.Flush()

	fmt.Fprintln(out)
	fmt.Fprintln(out, "Per-plugin latency from the scheduler's metrics, µs per call: Filter and Score per node, the others per pod.")
	fmt.Fprintln(out, "Plugin timings are sampled in 10% of the cycles and dropped when the scheduler's 1000-entry async metrics")
	fmt.Fprintln(out, "buffer is full (a 5000-node cycle fills it in Filter, so few Score samples survive); p99 is interpolated")
	fmt.Fprintln(out, "in histogram buckets that start at 10 µs. Extension points (all plugins of one point) are timed every cycle.")
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tprofile\tmetric\tavg\tp99\t")
	type row struct{ label, id string }
	var rows []row
	for _, pe := range [][2]string{
		{"DeviceFit", "PreFilter"}, {"DeviceFit", "Filter"}, {"DeviceFit", "PostBind"}, {"DeviceFit", "Sign"},
		{"DevicePack", "PreFilter"}, {"DevicePack", "PreScore"}, {"DevicePack", "Score"}, {"DevicePack", "ScoreExtensionNormalize"}, {"DevicePack", "Sign"},
		{"NodeResourcesFit", "Filter"}, {"NodeResourcesFit", "Score"}, {"NodeResourcesBalancedAllocation", "Score"},
	} {
		rows = append(rows, row{pe[0] + " " + pe[1], "scheduler_plugin_execution_duration_seconds{" + pe[0] + "," + pe[1] + "}"})
	}
	for _, ep := range []string{"PreFilter", "Filter", "PreScore", "Score"} {
		rows = append(rows, row{"all plugins " + ep, "scheduler_framework_extension_point_duration_seconds{" + ep + "}"})
	}
	for _, n := range names {
		if shape := strings.SplitN(ratioOf, "/", 2)[0]; !strings.HasPrefix(n, shape+"/") {
			// The plugin table keeps to the shape of the -ratio workload;
			// the other shapes' figures are in the JSON.
			continue
		}
		for _, p := range []string{profileDefault, profileDeviceFit} {
			r := runs[key{n, p}]
			if r == nil {
				continue
			}
			for _, rw := range rows {
				m, found := r.metrics[rw.id]
				if !found {
					continue
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", n, strings.ToLower(p), rw.label,
					micros(m["Average"]), micros(m["Perc99"]))
			}
		}
	}
	tw.Flush()
	return ok
}

func num(m map[string]float64, bucket string, prec int) string {
	v, ok := m[bucket]
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.*f", prec, v)
}

// micros formats a value in ms as µs.
func micros(ms float64) string {
	us := ms * 1000
	switch {
	case us < 10:
		return fmt.Sprintf("%.2f", us)
	case us < 1000:
		return fmt.Sprintf("%.1f", us)
	}
	return fmt.Sprintf("%.0f", us)
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+)\s+(\d+)\s+(.*)$`)

// printMicro prints the benchmark lines of go test -bench output, with the
// package each belongs to.
func printMicro(out io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Fprintln(out)
	fmt.Fprintln(out, "Go micro-benchmarks (per call)")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	pkg := ""
	// pods/s of BenchmarkReplay per policy, for the ratio line.
	replay := map[string]float64{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		if p, found := strings.CutPrefix(line, "pkg: "); found {
			pkg = strings.TrimPrefix(p, "github.com/devicefit/devicefit/")
			continue
		}
		if m := benchLine.FindStringSubmatch(line); m != nil {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", pkg, m[1], strings.Join(strings.Fields(m[3]), " "))
			if policy, ok := strings.CutPrefix(m[1], "BenchmarkReplay/"); ok {
				replay[strings.TrimSuffix(policy, "-"+lastDash(policy))] = metric(m[3], "pods/s")
			}
		}
	}
	tw.Flush()
	if d, f := replay["default"], replay["devicefit"]; d > 0 && f > 0 {
		fmt.Fprintf(out, "replay devicefit/default pods/s ratio: %.2f\n", f/d)
	}
	return s.Err()
}

// lastDash is what follows the last "-" of a benchmark name (GOMAXPROCS).
func lastDash(name string) string {
	if i := strings.LastIndexByte(name, '-'); i >= 0 {
		return name[i+1:]
	}
	return ""
}

// metric reads "<value> <unit>" out of a benchmark line's results; 0 when
// the unit is absent.
func metric(results, unit string) float64 {
	f := strings.Fields(results)
	for i := 1; i < len(f); i++ {
		if f[i] == unit {
			v, err := strconv.ParseFloat(f[i-1], 64)
			if err == nil {
				return v
			}
		}
	}
	return 0
}

// profileRows are the functions whose cumulative CPU the profile table shows:
// the extension points, the devicefit plugins, the upstream filters that
// scale with the nodes evaluated, GC, and the
// devicefit gauges (scheduler_perf gathers the whole metrics registry every
// second, which computes them each time; Prometheus would every 15-60 s).
var profileRows = []struct{ label, fn string }{
	{"filter, all plugins (parallel, per node)", "k8s.io/kubernetes/pkg/scheduler.(*Scheduler).findNodesThatPassFilters.func1"},
	{"  NodeResourcesFit Filter", "k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources.(*Fit).Filter"},
	{"  TaintToleration Filter", "k8s.io/kubernetes/pkg/scheduler/framework/plugins/tainttoleration.(*TaintToleration).Filter"},
	{"  DeviceFit Filter", "github.com/devicefit/devicefit/pkg/plugins/devicefit.(*DeviceFit).Filter"},
	{"prefilter, all plugins", "k8s.io/kubernetes/pkg/scheduler/framework/runtime.(*frameworkImpl).RunPreFilterPlugins"},
	{"  DeviceFit PreFilter", "github.com/devicefit/devicefit/pkg/plugins/devicefit.(*DeviceFit).PreFilter"},
	{"  DevicePack PreFilter", "github.com/devicefit/devicefit/pkg/plugins/devicepack.(*DevicePack).PreFilter"},
	{"prescore, all plugins", "k8s.io/kubernetes/pkg/scheduler/framework/runtime.(*frameworkImpl).RunPreScorePlugins"},
	{"  DevicePack PreScore", "github.com/devicefit/devicefit/pkg/plugins/devicepack.(*DevicePack).PreScore"},
	{"score, all plugins (parallel, per node)", "k8s.io/kubernetes/pkg/scheduler/framework/runtime.(*frameworkImpl).RunScorePlugins.func2"},
	{"  DevicePack Score", "github.com/devicefit/devicefit/pkg/plugins/devicepack.(*DevicePack).Score"},
	{"garbage collection (background)", "runtime.gcBgMarkWorker"},
	{"devicefit gauges (metrics gather)", "github.com/devicefit/devicefit/pkg/metrics.(*inventoryCollector).CollectWithStability"},
}

var profileName = regexp.MustCompile(`^([A-Za-z0-9]+)_([A-Za-z]+)_(.+)_devicefit_[0-9T:-]+Z-cpu\.prof$`)

// printProfiles prints where the CPU of the measured phase went, from the
// CPU profiles of -perf-cpuprofile (whole process: apiserver included), per
// measured pod when the extras know how many were bound.
func printProfiles(out io.Writer, paths []string, runs map[key]*run) error {
	type column struct {
		k       key
		total   float64
		cum     map[string]float64
		podsNum int
	}
	var cols []column
	sort.Strings(paths)
	for _, path := range paths {
		m := profileName.FindStringSubmatch(filepath.Base(path))
		if m == nil {
			continue
		}
		k := key{workload: m[1] + "/" + m[3], profile: m[2]}
		text, err := exec.Command("go", "tool", "pprof", "-top", "-cum", "-nodefraction=0", "-nodecount=100000", path).Output()
		if err != nil {
			return fmt.Errorf("go tool pprof %s: %w", path, err)
		}
		c := column{k: k, cum: map[string]float64{}}
		c.total, c.cum = parseTop(text)
		if r := runs[k]; r != nil && r.extras != nil {
			c.podsNum = r.extras.Placement.BoundByNamespace["measure"]
		}
		cols = append(cols, c)
	}
	if len(cols) == 0 {
		return nil
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "CPU of the measured phase (-perf-cpuprofile; the whole process, kube-apiserver included), ms per measured pod")
	fmt.Fprintln(out, "(CPU seconds when the pod count is unknown); indented rows are part of the row above them")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "\t")
	for _, c := range cols {
		fmt.Fprintf(tw, "%s %s\t", c.k.workload, strings.ToLower(c.k.profile))
	}
	fmt.Fprintln(tw)
	row := func(label string, v func(c column) float64) {
		fmt.Fprintf(tw, "%s\t", label)
		for _, c := range cols {
			x := v(c)
			if c.podsNum > 0 {
				fmt.Fprintf(tw, "%.2f\t", x*1000/float64(c.podsNum))
			} else {
				fmt.Fprintf(tw, "%.1fs\t", x)
			}
		}
		fmt.Fprintln(tw)
	}
	row("total", func(c column) float64 { return c.total })
	for _, r := range profileRows {
		row(r.label, func(c column) float64 { return c.cum[r.fn] })
	}
	return tw.Flush()
}

// parseTop reads `go tool pprof -top -cum`: the total samples and each
// function's cumulative seconds.
func parseTop(text []byte) (float64, map[string]float64) {
	cum := map[string]float64{}
	var total float64
	for _, line := range bytes.Split(text, []byte("\n")) {
		l := string(line)
		if i := strings.Index(l, "Total samples = "); i >= 0 {
			total = seconds(strings.Fields(l[i+len("Total samples = "):])[0])
			continue
		}
		f := strings.Fields(l)
		if len(f) < 6 || !strings.HasSuffix(f[4], "%") {
			continue
		}
		cum[strings.Join(f[5:], " ")] = seconds(f[3])
	}
	return total, cum
}

// seconds reads a pprof duration such as "1.5s", "320ms", "2.1mins".
func seconds(s string) float64 {
	for _, u := range []struct {
		suffix string
		scale  float64
	}{{"mins", 60}, {"hrs", 3600}, {"ms", 1e-3}, {"us", 1e-6}, {"s", 1}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0
			}
			return f * u.scale
		}
	}
	return 0
}
