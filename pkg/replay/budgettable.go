package replay

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// budgetRow aggregates one policy at one move budget on one trace, over
// seeds.
type budgetRow struct {
	trace, policy string
	budget        float64 // percent of arrivals; 0: no defragmenter
	seeds         []int64
	alloc, failed []float64
	moves         []float64
	offline       []float64
}

// budgetRows groups the replays of one --fractional mode (DRA shares, or
// whole GPUs: round-up) by trace, policy and move budget, in the order
// traces and policies first appear, budgets ascending.
func budgetRows(results []*Result, mode Fractional) []*budgetRow {
	var rows []*budgetRow
	find := func(trace, policy string, budget float64) *budgetRow {
		for _, r := range rows {
			if r.trace == trace && r.policy == policy && r.budget == budget {
				return r
			}
		}
		r := &budgetRow{trace: trace, policy: policy, budget: budget}
		rows = append(rows, r)
		return r
	}
	for _, res := range results {
		if res.Inputs.Fractional != string(mode) {
			continue
		}
		trace := strings.TrimSuffix(strings.TrimPrefix(res.Inputs.Pods, "openb_pod_list_"), ".csv")
		for _, p := range res.Policies {
			budget := 0.0
			if p.Defrag != nil {
				budget = 100 * p.Defrag.Budget
			}
			r := find(trace, p.Name, budget)
			r.seeds = append(r.seeds, res.Inputs.Seed)
			if pt, ok := p.At(100); ok {
				r.alloc = append(r.alloc, pt.AllocatedPct)
				r.failed = append(r.failed, float64(pt.FailedPods))
				r.moves = append(r.moves, float64(pt.Moves))
			}
			if p.Offline != nil {
				r.offline = append(r.offline, p.Offline.AllocatedPct)
			}
		}
	}
	traces, policies := firstSeen(rows, func(r *budgetRow) string { return r.trace }), firstSeen(rows, func(r *budgetRow) string { return r.policy })
	slices.SortStableFunc(rows, func(a, b *budgetRow) int {
		if d := slices.Index(traces, a.trace) - slices.Index(traces, b.trace); d != 0 {
			return d
		}
		if d := slices.Index(policies, a.policy) - slices.Index(policies, b.policy); d != 0 {
			return d
		}
		switch {
		case a.budget < b.budget:
			return -1
		case a.budget > b.budget:
			return 1
		}
		return 0
	})
	return rows
}

func firstSeen(rows []*budgetRow, key func(*budgetRow) string) []string {
	var out []string
	for _, r := range rows {
		if k := key(r); !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// WriteBudgetTable writes the defragmentation tables of
// docs/defragmentation.md: per trace, policy and move budget, the means over
// the seeds of the GPU allocation, the failed pods and the moves at 100%
// arrived, and the offline packing of the arrived pods (replays with
// --offline). The first table holds the fractional replays (DRA shares)
// with FGD's published mean over the same seeds (fgd may be nil) and the
// margin to it; a second, when there are any, the whole-GPU replays
// (round-up), which FGD did not publish: its figures share GPUs.
func WriteBudgetTable(w io.Writer, results []*Result, fgd FGDResults) error {
	var b strings.Builder
	b.WriteString("| trace (DRA shares) | policy | moves ≤ % of arrivals | seeds | allocated % at 100% arrived | failed pods | moves | offline packing, allocated % | FGD, same seeds | vs FGD |\n")
	b.WriteString("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range budgetRows(results, FractionalDRAShares) {
		theirs, vs := "-", "-"
		if f, ok := fgdMean(fgd, r.trace, r.seeds); ok {
			theirs = fmt.Sprintf("%.2f", f)
			vs = fmt.Sprintf("%+.2f", mean(r.alloc)-f)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.trace, r.policy, r.figures(), theirs, vs)
	}
	if whole := budgetRows(results, FractionalRoundUp); len(whole) > 0 {
		b.WriteString("\n| trace (whole GPUs) | policy | moves ≤ % of arrivals | seeds | allocated % at 100% arrived | failed pods | moves | offline packing, allocated % |\n")
		b.WriteString("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
		for _, r := range whole {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", r.trace, r.policy, r.figures())
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// figures are a row's budget, seeds, and mean ± sd of the allocation,
// failed pods, moves and offline packing, as table cells.
func (r *budgetRow) figures() string {
	offline := "-"
	if len(r.offline) > 0 {
		offline = meanSD(r.offline, 2)
	}
	return fmt.Sprintf("%g | %s | %s | %s | %s | %s", r.budget, seedList(r.seeds), meanSD(r.alloc, 2), meanSD(r.failed, 0), meanSD(r.moves, 0), offline)
}

// fgdMean is FGD's mean allocation over seeds, when it published every one.
func fgdMean(fgd FGDResults, trace string, seeds []int64) (float64, bool) {
	byseed := fgd[trace]
	if byseed == nil || len(seeds) == 0 {
		return 0, false
	}
	var f []float64
	for _, s := range seeds {
		v, ok := byseed[s]
		if !ok {
			return 0, false
		}
		f = append(f, v)
	}
	return mean(f), true
}

// WriteBudgetSVG draws, for each trace, devicefit's allocation at 100%
// arrived (mean over seeds) against the move budget, the budgets evenly
// spaced, with the stock scheduler's, FGD's published mean and FGD + 1
// point (the target of issue 40) as horizontal lines.
func WriteBudgetSVG(w io.Writer, results []*Result, fgd FGDResults, title string) error {
	rows := budgetRows(results, FractionalDRAShares)
	traces := firstSeen(rows, func(r *budgetRow) string { return r.trace })
	if len(traces) == 0 {
		return fmt.Errorf("no replay with --fractional %s", FractionalDRAShares)
	}
	const top, height = 60.0, 300.0
	gap := 70.0
	pw := (chartWidth - 2*chartMargin - 60 - gap*float64(len(traces)-1)) / float64(len(traces))
	var b strings.Builder
	var texts []textItem
	texts = append(texts, textItem{x: chartWidth / 2, y: chartMargin + titleSize, size: titleSize, anchor: "middle", text: fitText(title, titleSize, chartWidth-2*chartMargin)})
	type line struct {
		label, colour, dash string
	}
	legend := []line{{"devicefit with moves (mean over seeds)", palette[0], ""}, {"stock scheduler (default profile)", palette[1], ""},
		{"FGD, published mean", "#333333", "6 3"}, {"FGD + 1 point", "#999999", "2 3"}}
	for i, trace := range traces {
		var budgets []float64
		var dev [][2]float64
		stock, lo, hi := math.NaN(), math.Inf(1), math.Inf(-1)
		var seeds []int64
		for _, r := range rows {
			if r.trace != trace || len(r.alloc) == 0 {
				continue
			}
			m := mean(r.alloc)
			switch {
			case r.policy == "devicefit":
				dev = append(dev, [2]float64{float64(len(budgets)), m})
				budgets = append(budgets, r.budget)
				seeds = r.seeds
			case r.policy == "default" && r.budget == 0:
				stock = m
				continue
			default:
				continue
			}
			lo, hi = math.Min(lo, m), math.Max(hi, m)
		}
		// The stock scheduler far below (multigpu50: 23 points) would
		// flatten devicefit's line: it is named under the panel instead.
		stockBelow := !math.IsNaN(stock) && stock < lo-10
		if !math.IsNaN(stock) && !stockBelow {
			lo, hi = math.Min(lo, stock), math.Max(hi, stock)
		}
		f, haveFGD := fgdMean(fgd, trace, seeds)
		if haveFGD {
			lo, hi = math.Min(lo, f), math.Max(hi, f+1)
		}
		if math.IsInf(lo, 0) {
			continue
		}
		p := panel{x: chartMargin + 60 + float64(i)*(pw+gap), y: top, w: pw, h: height,
			xmin: -0.5, xmax: math.Max(float64(len(budgets))-0.5, 0.5), ymin: math.Floor(lo - 0.5), ymax: math.Ceil(hi + 0.5)}
		axes(&b, p)
		if !math.IsNaN(stock) && !stockBelow {
			polyline(&b, p, [][2]float64{{p.xmin, stock}, {p.xmax, stock}}, palette[1], "")
		}
		if stockBelow {
			texts = append(texts, textItem{x: p.x + 8, y: p.y + p.h - 8, size: fontSize, anchor: "start",
				text: fmt.Sprintf("stock scheduler: %.2f, below the axis", stock)})
		}
		if haveFGD {
			polyline(&b, p, [][2]float64{{p.xmin, f}, {p.xmax, f}}, "#333333", `stroke-dasharray="6 3"`)
			polyline(&b, p, [][2]float64{{p.xmin, f + 1}, {p.xmax, f + 1}}, "#999999", `stroke-dasharray="2 3"`)
		}
		polyline(&b, p, dev, palette[0], "")
		for _, pt := range dev {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", p.px(pt[0]), p.py(pt[1]), palette[0])
		}
		for j, bud := range budgets {
			texts = append(texts, textItem{x: p.px(float64(j)), y: p.y + p.h + 16, size: fontSize, anchor: "middle", text: fmt.Sprintf("%g%%", bud)})
		}
		for _, t := range ticks(p.ymin, p.ymax) {
			texts = append(texts, textItem{x: p.x - 6, y: p.py(t) + 4, size: fontSize, anchor: "end", text: fmt.Sprintf("%g", t)})
		}
		texts = append(texts,
			textItem{x: p.x + p.w/2, y: p.y - 8, size: fontSize, anchor: "middle", text: fmt.Sprintf("%s, seeds %s", trace, seedList(seeds))},
			textItem{x: p.x + p.w/2, y: p.y + p.h + 36, size: fontSize, anchor: "middle", text: "moves ≤ % of arrivals"},
			textItem{x: p.x - 40, y: p.y + p.h/2, size: fontSize, anchor: "middle", vertical: true, text: "GPUs allocated at 100% arrived, %"})
	}
	y := top + height + 70
	x := chartMargin
	for _, l := range legend {
		item := textItem{x: x, y: y, size: fontSize, anchor: "start", text: l.label, swatch: l.colour}
		texts = append(texts, item)
		x = item.box().x1 + legendGap
	}
	h := math.Ceil(y + textDescent*fontSize + chartMargin)
	var out strings.Builder
	fmt.Fprintf(&out, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" viewBox="0 0 %g %g" font-family="sans-serif" font-size="%g">`+"\n", chartWidth, h, chartWidth, h, fontSize)
	out.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	out.WriteString(b.String())
	for _, t := range texts {
		writeText(&out, t)
	}
	out.WriteString("</svg>\n")
	_, err := io.WriteString(w, out.String())
	return err
}
