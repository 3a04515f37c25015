package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// cycleMetrics are the extension points whose per-pod durations (all
// plugins, timed in every cycle) add up to a pod's time in the scheduling
// algorithm proper.
var cycleMetrics = []string{"PreFilter", "Filter", "PreScore", "Score"}

// cycleMillis is a run's average per-pod PreFilter + Filter + PreScore +
// Score in ms; false without PreFilter's. An extension point without
// samples counts 0: the framework runs neither PreScore nor Score when a
// single node passes Filter, which a shortlist of one makes the rule.
func cycleMillis(r *run) (float64, bool) {
	if r == nil {
		return 0, false
	}
	var sum float64
	for i, ep := range cycleMetrics {
		v, ok := r.metrics["scheduler_framework_extension_point_duration_seconds{"+ep+"}"]["Average"]
		if !ok && i == 0 {
			return 0, false
		}
		sum += v
	}
	return sum, true
}

// nodesOf is the node count a workload name starts with ("15000Nodes_...").
func nodesOf(workload string) (shape string, nodes int, ok bool) {
	shape, name, found := strings.Cut(workload, "/")
	if !found {
		return "", 0, false
	}
	n, err := fmt.Sscanf(name, "%dNodes", &nodes)
	return shape, nodes, err == nil && n == 1
}

// scaling prints, per workload, each profile's per-pod PreFilter + Filter +
// PreScore + Score, and for devicefit the ratio of that time to the same
// shape's at 5000 nodes (issue 39: at most 1.5 at 15,000 nodes).
func scaling(out io.Writer, runs map[key]*run) {
	var names []string
	seen := map[string]bool{}
	for k := range runs {
		if !seen[k.workload] {
			seen[k.workload] = true
			names = append(names, k.workload)
		}
	}
	sort.Strings(names)
	base := map[string]float64{}
	for _, n := range names {
		if shape, nodes, ok := nodesOf(n); ok && nodes == 5000 {
			if v, ok := cycleMillis(runs[key{n, profileDeviceFit}]); ok {
				base[shape] = v
			}
		}
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "Per-pod PreFilter + Filter + PreScore + Score (all plugins, every cycle), ms, and devicefit's time against")
	fmt.Fprintln(out, "its own at 5000 nodes of the same workload")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tdefault\tdevicefit\tdevicefit/its 5000-node time\t")
	for _, n := range names {
		d, okD := cycleMillis(runs[key{n, profileDefault}])
		f, okF := cycleMillis(runs[key{n, profileDeviceFit}])
		if !okD && !okF {
			continue
		}
		vs := []string{"-", "-", "-"}
		if okD {
			vs[0] = fmt.Sprintf("%.2f", d)
		}
		if okF {
			vs[1] = fmt.Sprintf("%.2f", f)
			if shape, nodes, ok := nodesOf(n); ok && nodes > 5000 && base[shape] > 0 {
				vs[2] = fmt.Sprintf("%.2f", f/base[shape])
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", n, vs[0], vs[1], vs[2])
	}
	tw.Flush()
}
