package replay

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// FGDResults are FGD's own figures from the authors' published results
// (fgd-expected-results/analysis_allo_discrete.csv next to the Alibaba
// trace): per workload ("default", "gpuspec10", ...) and seed, the GPU
// allocation % at 100% arrived of their simulator's FGD policy with tune
// 1.3. They are in milli-GPU with fractional pods kept fractional, so they
// compare with replays in --fractional dra-shares.
type FGDResults map[string]map[int64]float64

// fgdPolicy is FGD's row in the authors' table; the others are baselines.
const fgdPolicy = "06-FGD"

// ReadFGDResults reads analysis_allo_discrete.csv: columns workload,
// sc_policy, tune, seed, total_gpus, then one per arrived percentage.
func ReadFGDResults(in io.Reader) (FGDResults, error) {
	r := csv.NewReader(in)
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("FGD results: header: %w", err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	for _, want := range []string{"workload", "sc_policy", "tune", "seed", "100"} {
		if _, ok := col[want]; !ok {
			return nil, fmt.Errorf("FGD results: no column %q", want)
		}
	}
	out := FGDResults{}
	for line := 2; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("FGD results: %w", err)
		}
		if rec[col["sc_policy"]] != fgdPolicy || rec[col["tune"]] != "1.3" {
			continue
		}
		seed, err := strconv.ParseInt(rec[col["seed"]], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("FGD results: line %d: seed: %w", line, err)
		}
		alloc, err := strconv.ParseFloat(rec[col["100"]], 64)
		if err != nil {
			return nil, fmt.Errorf("FGD results: line %d: allocation at 100%%: %w", line, err)
		}
		w := strings.TrimPrefix(rec[col["workload"]], "openb_pod_list_")
		if out[w] == nil {
			out[w] = map[int64]float64{}
		}
		out[w][seed] = alloc
	}
	if len(out) == 0 {
		return nil, errors.New("FGD results: no rows of " + fgdPolicy + " with tune 1.3")
	}
	return out, nil
}

// WriteFGDComparison writes, for every trace replayed with --fractional
// dra-shares, each policy's GPU allocation % at 100% arrived (mean over the
// seeds) and FGD's over the same seeds, with devicefit's margin over FGD
// seed by seed. A trace FGD did not publish (a Variant) gets "-".
func WriteFGDComparison(w io.Writer, results []*Result, fgd FGDResults) error {
	type row struct {
		trace    string
		seeds    []int64
		policies []string
		alloc    map[string][]float64
	}
	var rows []*row
	byTrace := map[string]*row{}
	for _, res := range results {
		if res.Inputs.Fractional != string(FractionalDRAShares) {
			continue
		}
		trace := strings.TrimSuffix(strings.TrimPrefix(res.Inputs.Pods, "openb_pod_list_"), ".csv")
		r := byTrace[trace]
		if r == nil {
			r = &row{trace: trace, alloc: map[string][]float64{}}
			byTrace[trace] = r
			rows = append(rows, r)
		}
		r.seeds = append(r.seeds, res.Inputs.Seed)
		for _, p := range res.Policies {
			if _, ok := r.alloc[p.Name]; !ok {
				r.policies = append(r.policies, p.Name)
			}
			a := math.NaN()
			if pt, ok := p.At(100); ok {
				a = pt.AllocatedPct
			}
			r.alloc[p.Name] = append(r.alloc[p.Name], a)
		}
	}
	var b strings.Builder
	b.WriteString("| trace (DRA shares) | seeds | policy: allocated % at 100% arrived | FGD, same seeds | devicefit − FGD, per seed |\n")
	b.WriteString("| --- | ---: | --- | ---: | --- |\n")
	for _, r := range rows {
		var pols []string
		for _, p := range r.policies {
			pols = append(pols, fmt.Sprintf("%s %s", p, meanSD(r.alloc[p], 2)))
		}
		theirs, margins := "-", "-"
		if byseed := fgd[r.trace]; byseed != nil {
			var f []float64
			for _, s := range r.seeds {
				if v, ok := byseed[s]; ok {
					f = append(f, v)
				}
			}
			if len(f) == len(r.seeds) {
				theirs = fmt.Sprintf("%.2f", mean(f))
				if mine, ok := r.alloc["devicefit"]; ok && len(mine) == len(f) {
					var m []string
					for i := range f {
						m = append(m, fmt.Sprintf("%+.2f", mine[i]-f[i]))
					}
					margins = strings.Join(m, ", ")
				}
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.trace, seedList(r.seeds), strings.Join(pols, "; "), theirs, margins)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
