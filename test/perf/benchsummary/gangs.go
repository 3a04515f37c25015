package main

import (
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// gangWorkload is GangMix/<nodes>Nodes_seed<seed>_<percent>pct.
var gangWorkload = regexp.MustCompile(`^(GangMix/\d+Nodes)_seed(\d+)_(\d+)pct$`)

// gangRun is one GangMix run's figures.
type gangRun struct {
	g          *gangs
	throughput float64 // pods/s, scheduler_perf's average; NaN when missing
}

// reportGangs prints, per arrival share, one row per seed and profile, the
// means over the seeds, and for the whole mix (the largest share) the
// comparison issue 14 asks for. It returns false when a run has no gang
// figures or a placement check failed.
func reportGangs(out io.Writer, runs map[key]*run) bool {
	type cell struct {
		shape   string
		percent int
	}
	bySeed := map[cell]map[int]map[string]gangRun{}
	ok := true
	for k, r := range runs {
		m := gangWorkload.FindStringSubmatch(k.workload)
		if m == nil {
			continue
		}
		seed, _ := strconv.Atoi(m[2])
		percent, _ := strconv.Atoi(m[3])
		c := cell{m[1], percent}
		if bySeed[c] == nil {
			bySeed[c] = map[int]map[string]gangRun{}
		}
		if bySeed[c][seed] == nil {
			bySeed[c][seed] = map[string]gangRun{}
		}
		gr := gangRun{throughput: math.NaN()}
		if v, found := r.metrics["SchedulingThroughput"]["Average"]; found {
			gr.throughput = v
		}
		if r.extras == nil || r.extras.Gangs == nil {
			fmt.Fprintf(out, "%s %s: no gang figures\n", k.workload, k.profile)
			ok = false
			continue
		}
		if r.extras.Placement.Overcommitted > 0 {
			fmt.Fprintf(out, "%s %s: %d devices overcommitted\n", k.workload, k.profile, r.extras.Placement.Overcommitted)
			ok = false
		}
		gr.g = r.extras.Gangs
		bySeed[c][seed][k.profile] = gr
	}
	if len(bySeed) == 0 {
		fmt.Fprintln(out, "no GangMix data")
		return false
	}
	cells := make([]cell, 0, len(bySeed))
	for c := range bySeed {
		cells = append(cells, c)
	}
	sort.Slice(cells, func(i, j int) bool {
		if cells[i].shape != cells[j].shape {
			return cells[i].shape < cells[j].shape
		}
		return cells[i].percent < cells[j].percent
	})
	profiles := []string{profileDefault, profileDeviceFit}
	fmt.Fprintln(out, "GangMix (test/perf, issue 14): the state when the share of the mix's waves has arrived (each job leaves 1-4 waves after it arrived)")
	fmt.Fprintln(out, "GPUs: allocated/fleet; in gangs: GPUs held by gang pods; groups: placed/arrived; singles: bound/arrived;")
	fmt.Fprintln(out, "whole: domains with no GPU taken; stranded: free GPUs no gang shape of the mix can use; pods/s: scheduler_perf average")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "arrived\tseed\tprofile\tGPUs\tin gangs\tgroups\tsingles\twhole\tstranded\tpods/s\t")
	for _, c := range cells {
		seeds := make([]int, 0, len(bySeed[c]))
		for s := range bySeed[c] {
			seeds = append(seeds, s)
		}
		sort.Ints(seeds)
		for _, s := range seeds {
			for _, p := range profiles {
				gr, found := bySeed[c][s][p]
				if !found {
					continue
				}
				g := gr.g
				fmt.Fprintf(tw, "%d%%\t%d\t%s\t%d/%d\t%d\t%d/%d\t%d/%d\t%d/%d\t%d\t%.1f\t\n", c.percent, s, strings.ToLower(p),
					g.Allocated, g.GPUs, g.InGangs, g.GroupsPlaced, g.GroupsArrived, g.SinglesBound, g.SinglesArrived,
					g.WholeDomains, g.Domains, g.Stranded, gr.throughput)
			}
		}
		for _, p := range profiles {
			var alloc, inGangs, placed, arrived, whole, stranded, tput []float64
			for _, s := range seeds {
				gr, found := bySeed[c][s][p]
				if !found {
					continue
				}
				alloc = append(alloc, float64(gr.g.Allocated))
				inGangs = append(inGangs, float64(gr.g.InGangs))
				placed = append(placed, float64(gr.g.GroupsPlaced))
				arrived = append(arrived, float64(gr.g.GroupsArrived))
				whole = append(whole, float64(gr.g.WholeDomains))
				stranded = append(stranded, float64(gr.g.Stranded))
				tput = append(tput, gr.throughput)
			}
			if len(alloc) == 0 {
				continue
			}
			fmt.Fprintf(tw, "%d%%\tmean of %d\t%s\t%s\t%s\t%s/%s\t\t%s\t%s\t%s\t\n", c.percent, len(alloc), strings.ToLower(p),
				meanSD(alloc), meanSD(inGangs), mean1(placed), mean1(arrived), meanSD(whole), meanSD(stranded), meanSD(tput))
		}
	}
	tw.Flush()

	// The comparison of issue 14, on the whole mix (the largest share).
	last := cells[len(cells)-1]
	fmt.Fprintln(out)
	fmt.Fprintf(out, "%s, %d%% arrived, devicefit against the upstream default profile, per seed:\n", last.shape, last.percent)
	seeds := make([]int, 0, len(bySeed[last]))
	for s := range bySeed[last] {
		seeds = append(seeds, s)
	}
	sort.Ints(seeds)
	var gangsOK, wholeOK, wholeTied, strandedOK int
	var tD, tF, wholeD, wholeF float64
	n := 0
	for _, s := range seeds {
		d, okD := bySeed[last][s][profileDefault]
		f, okF := bySeed[last][s][profileDeviceFit]
		if !okD || !okF {
			fmt.Fprintf(out, "  seed %d: not both profiles\n", s)
			ok = false
			continue
		}
		n++
		if f.g.InGangs >= d.g.InGangs {
			gangsOK++
		}
		switch {
		case f.g.WholeDomains > d.g.WholeDomains:
			wholeOK++
		case f.g.WholeDomains == d.g.WholeDomains:
			wholeTied++
		}
		wholeD += float64(d.g.WholeDomains)
		wholeF += float64(f.g.WholeDomains)
		if f.g.Stranded < d.g.Stranded {
			strandedOK++
		}
		tD += d.throughput
		tF += f.throughput
		fmt.Fprintf(out, "  seed %d: GPUs in gangs %d vs %d, whole domains %d vs %d, stranded %d vs %d, pods/s %.1f vs %.1f\n",
			s, f.g.InGangs, d.g.InGangs, f.g.WholeDomains, d.g.WholeDomains, f.g.Stranded, d.g.Stranded, f.throughput, d.throughput)
	}
	fmt.Fprintf(out, "at least as many GPUs in gangs: %d/%d seeds (%s)\n", gangsOK, n, verdict(n > 0 && gangsOK == n))
	// Whole domains are few (a pending gang takes one as soon as it
	// forms), so seeds tie: the mean decides.
	if n > 0 {
		fmt.Fprintf(out, "more whole domains: mean %.1f vs %.1f (%s); more in %d/%d seeds, as many in %d\n",
			wholeF/float64(n), wholeD/float64(n), verdict(wholeF > wholeD && wholeOK+wholeTied == n), wholeOK, n, wholeTied)
	}
	fmt.Fprintf(out, "fewer stranded devices: %d/%d seeds (%s)\n", strandedOK, n, verdict(n > 0 && strandedOK == n))
	if n > 0 && tD > 0 {
		r := tF / tD
		fmt.Fprintf(out, "devicefit/default GangMix pods/s ratio (mean over the seeds; a few seconds of samples, and devicefit binds more pods): %.2f (%s, >= 0.9)\n", r, verdict(r >= 0.9))
	}
	return ok
}

// verdict is "yes" or "NO".
func verdict(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func mean1(xs []float64) string { return fmt.Sprintf("%.1f", mean(xs)) }

// meanSD is "mean ± sample standard deviation".
func meanSD(xs []float64) string {
	m := mean(xs)
	if len(xs) < 2 {
		return fmt.Sprintf("%.1f", m)
	}
	var v float64
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return fmt.Sprintf("%.1f ± %.1f", m, math.Sqrt(v/float64(len(xs)-1)))
}

// cliqueRun is a CliqueFleet case, or one of its repeats (_2, _3).
var cliqueRun = regexp.MustCompile(`^(CliqueFleet/\d+Nodes_\d+Gangs)(_\d+)?$`)

// cliqueFleetSpans prints, per CliqueFleet case, its throughput by the span
// test/perf's bindSpan timed (the first PodGroup to the last bind), where
// every pod binds under both profiles: each run, and the ratio of the
// profiles' means. scheduler_perf's SchedulingThroughput is at most one or
// two one-second samples of the 360-node case's phase, and moved from 0.83
// to 1.06 between two runs of the same code.
func cliqueFleetSpans(out io.Writer, runs map[key]*run) {
	rates := map[string]map[string][]float64{} // case, profile
	for k, r := range runs {
		m := cliqueRun.FindStringSubmatch(k.workload)
		if m == nil || r.extras == nil || r.extras.Span == nil || r.extras.Span.Seconds <= 0 {
			continue
		}
		if rates[m[1]] == nil {
			rates[m[1]] = map[string][]float64{}
		}
		rates[m[1]][k.profile] = append(rates[m[1]][k.profile], float64(r.extras.Span.Pods)/r.extras.Span.Seconds)
	}
	cases := make([]string, 0, len(rates))
	for c := range rates {
		cases = append(cases, c)
	}
	sort.Strings(cases)
	for _, c := range cases {
		d, f := rates[c][profileDefault], rates[c][profileDeviceFit]
		if len(d) == 0 || len(f) == 0 {
			continue
		}
		sort.Float64s(d)
		sort.Float64s(f)
		r := mean(f) / mean(d)
		fmt.Fprintf(out, "%s, every pod binds, pods/s from the first PodGroup to the last bind: devicefit %s, default %s\n", c, list1(f), list1(d))
		fmt.Fprintf(out, "devicefit/default %s ratio (mean of %d and %d runs): %.2f (%s, >= 1.2)\n", c, len(f), len(d), r, verdict(r >= 1.2))
	}
}

// list1 is the values with one decimal, comma-separated.
func list1(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.1f", x)
	}
	return strings.Join(parts, ", ")
}
