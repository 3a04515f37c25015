package replay

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func budgetResult(trace string, seed int64, budget float64, pols ...*PolicyResult) *Result {
	for _, p := range pols {
		if budget > 0 {
			p.Defrag = &DefragResult{Budget: budget / 100}
		}
	}
	return &Result{Inputs: Inputs{Pods: trace + ".csv", Fractional: string(FractionalDRAShares), Devices: string(DevicesDRA), Seed: seed}, Policies: pols}
}

func policyAt100(name string, alloc float64, failed, moves int, offline float64) *PolicyResult {
	p := &PolicyResult{Name: name, Points: make([]Point, 101)}
	p.Points[100] = Point{ArrivedPct: 100, AllocatedPct: alloc, FailedPods: failed, Moves: moves}
	if offline > 0 {
		p.Offline = &Point{AllocatedPct: offline}
	}
	return p
}

// TestBudgetTable: one row per trace, policy and budget (budgets ascending,
// whatever the order of the files), means over the seeds, FGD's mean over
// the same seeds and the margin to it; whole-GPU replays in a table of
// their own.
func TestBudgetTable(t *testing.T) {
	results := []*Result{
		budgetResult("default", 42, 1, policyAt100("devicefit", 95.5, 300, 80, 0)),
		budgetResult("default", 43, 1, policyAt100("devicefit", 95.7, 280, 84, 0)),
		budgetResult("default", 42, 0, policyAt100("default", 90, 900, 0, 96), policyAt100("devicefit", 95.2, 340, 0, 92.6)),
		budgetResult("default", 43, 0, policyAt100("default", 91, 880, 0, 96.2), policyAt100("devicefit", 95.4, 330, 0, 92.8)),
		budgetResult("multigpu50", 42, 0.5, policyAt100("devicefit", 97.4, 100, 40, 0)),
		// Whole-GPU replays are the second table's, without FGD.
		{Inputs: Inputs{Pods: "default.csv", Fractional: string(FractionalRoundUp), Seed: 42}, Policies: []*PolicyResult{policyAt100("devicefit", 99.9, 2, 0, 99.5)}},
	}
	fgd := FGDResults{"default": {42: 95.1, 43: 95.3}}
	var out bytes.Buffer
	if err := WriteBudgetTable(&out, results, fgd); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if !strings.HasPrefix(line, "| ---") && !strings.Contains(line, "policy") {
			got = append(got, line)
		}
	}
	want := []string{
		"| default | devicefit | 0 | 42,43 | 95.30 ± 0.14 | 335 ± 7 | 0 ± 0 | 92.70 ± 0.14 | 95.20 | +0.10 |",
		"| default | devicefit | 1 | 42,43 | 95.60 ± 0.14 | 290 ± 14 | 82 ± 3 | - | 95.20 | +0.40 |",
		"| default | default | 0 | 42,43 | 90.50 ± 0.71 | 890 ± 14 | 0 ± 0 | 96.10 ± 0.14 | 95.20 | -4.70 |",
		"| multigpu50 | devicefit | 0.5 | 42 | 97.40 | 100 | 40 | - | - | - |",
		"",
		"| default | devicefit | 0 | 42 | 99.90 | 2 | 0 | 99.50 |",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("budget table (-want,+got):\n%s\n%s", diff, out.String())
	}

	var svg bytes.Buffer
	if err := WriteBudgetSVG(&svg, results, fgd, "title"); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&svg)
	polylines, circles := 0, 0
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		if se, ok := tok.(xml.StartElement); ok {
			switch se.Name.Local {
			case "polyline":
				polylines++
			case "circle":
				circles++
			}
		}
	}
	// default: stock, FGD, FGD + 1, devicefit; multigpu50: devicefit only.
	if polylines != 5 || circles != 3 {
		t.Errorf("%d lines and %d points, want 5 and 3:\n%s", polylines, circles, svg.String())
	}
	// A stock scheduler far below is named, not drawn.
	results[2].Policies[0].Points[100].AllocatedPct, results[3].Policies[0].Points[100].AllocatedPct = 70, 70
	svg.Reset()
	if err := WriteBudgetSVG(&svg, results, fgd, "title"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(svg.String(), "<polyline"); got != 4 || !strings.Contains(svg.String(), "stock scheduler: 70.00, below the axis") {
		t.Errorf("stock scheduler 25 points below: %d lines, want 4 and its figure named:\n%s", got, svg.String())
	}
	if err := WriteBudgetSVG(&svg, results[5:], fgd, "title"); err == nil {
		t.Error("a chart of no shares replay: want an error")
	}
}
