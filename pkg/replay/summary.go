package replay

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// summaryRow aggregates one policy on one trace over seeds.
type summaryRow struct {
	trace, policy string
	seeds         []int64
	unalloc100    []float64
	frag100       []float64
	failed100     []float64
	allocEnd      []float64
	arrivedEnd    []float64
	failedEnd     []float64
	wall          []float64
}

// WriteSummary writes a Markdown table over several results (one per trace
// and seed): per trace and policy, the mean and standard deviation over the
// seeds of the unallocated and fragmented devices and the failed pods at
// 100% arrived, and the allocation at the end. Rows keep the order in which
// traces and policies first appear.
func WriteSummary(w io.Writer, results []*Result) error {
	var rows []*summaryRow
	find := func(trace, policy string) *summaryRow {
		for _, r := range rows {
			if r.trace == trace && r.policy == policy {
				return r
			}
		}
		r := &summaryRow{trace: trace, policy: policy}
		rows = append(rows, r)
		return r
	}
	for _, res := range results {
		trace := strings.TrimSuffix(strings.TrimPrefix(res.Inputs.Pods, "openb_pod_list_"), ".csv")
		switch {
		case res.Inputs.Fractional == string(FractionalDRAShares):
			// Fractional pods as shares of shared DRA GPUs, allocation in
			// milli-GPU (FGD's setting): a row of its own.
			trace += " (DRA shares)"
		case res.Inputs.Devices == string(DevicesDRA):
			// The same trace with its GPUs in ResourceSlices: a row of its own.
			trace += " (DRA)"
		}
		for _, p := range res.Policies {
			r := find(trace, p.Name)
			r.seeds = append(r.seeds, res.Inputs.Seed)
			if pt, ok := p.At(100); ok {
				r.unalloc100 = append(r.unalloc100, pt.UnallocatedPct)
				r.frag100 = append(r.frag100, pt.FragmentedPct)
				r.failed100 = append(r.failed100, float64(pt.FailedPods))
			}
			r.allocEnd = append(r.allocEnd, p.Final.AllocatedPct)
			r.arrivedEnd = append(r.arrivedEnd, p.Final.ArrivedPct)
			r.failedEnd = append(r.failedEnd, float64(p.Final.FailedPods))
			if p.WallSeconds != nil {
				r.wall = append(r.wall, *p.WallSeconds)
			}
		}
	}
	var b strings.Builder
	b.WriteString("| trace | policy | seeds | unallocated % at 100% arrived | fragmented % at 100% | failed pods at 100% | allocated % at end (arrived %) | failed pods at end | wall s |\n")
	b.WriteString("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range rows {
		wall := "-"
		if len(r.wall) > 0 {
			wall = fmt.Sprintf("%.1f", mean(r.wall))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s (%.1f) | %s | %s |\n",
			r.trace, r.policy, seedList(r.seeds), meanSD(r.unalloc100, 2), meanSD(r.frag100, 2), meanSD(r.failed100, 0),
			meanSD(r.allocEnd, 2), mean(r.arrivedEnd), meanSD(r.failedEnd, 0), wall)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func seedList(seeds []int64) string {
	if len(seeds) == 0 {
		return "-"
	}
	contiguous := true
	for i := 1; i < len(seeds); i++ {
		if seeds[i] != seeds[i-1]+1 {
			contiguous = false
		}
	}
	if contiguous && len(seeds) > 2 {
		return fmt.Sprintf("%d..%d", seeds[0], seeds[len(seeds)-1])
	}
	parts := make([]string, len(seeds))
	for i, s := range seeds {
		parts[i] = fmt.Sprint(s)
	}
	return strings.Join(parts, ",")
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// meanSD formats mean ± sample standard deviation (just the value for one).
func meanSD(xs []float64, decimals int) string {
	switch len(xs) {
	case 0:
		return "-"
	case 1:
		return fmt.Sprintf("%.*f", decimals, xs[0])
	}
	m := mean(xs)
	var ss float64
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	sd := math.Sqrt(ss / float64(len(xs)-1))
	return fmt.Sprintf("%.*f ± %.*f", decimals, m, decimals, sd)
}
