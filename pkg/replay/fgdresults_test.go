package replay

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const fgdCSV = `workload,sc_policy,tune,seed,total_gpus,99,100
openb_pod_list_default,06-FGD,1.3,42,6212,94.9,95.14
openb_pod_list_default,06-FGD,1.3,43,6212,94.8,95.06
openb_pod_list_default,06-FGD,1.5,42,6212,94.0,96.00
openb_pod_list_default,05-BestFit,1.3,42,6212,90.0,91.00
openb_pod_list_gpuspec10,06-FGD,1.3,42,6212,94.0,94.49
`

func TestFGDComparison(t *testing.T) {
	fgd, err := ReadFGDResults(strings.NewReader(fgdCSV))
	if err != nil {
		t.Fatal(err)
	}
	want := FGDResults{"default": {42: 95.14, 43: 95.06}, "gpuspec10": {42: 94.49}}
	if diff := cmp.Diff(want, fgd); diff != "" {
		t.Fatalf("FGD results (-want,+got):\n%s", diff)
	}
	result := func(pods string, fractional Fractional, seed int64, def, df float64) *Result {
		at100 := func(name string, alloc float64) *PolicyResult {
			points := make([]Point, 101)
			points[100] = Point{ArrivedPct: 100, AllocatedPct: alloc}
			return &PolicyResult{Name: name, Points: points}
		}
		return &Result{
			Inputs:   Inputs{Pods: pods, Fractional: string(fractional), Seed: seed},
			Policies: []*PolicyResult{at100("default", def), at100("devicefit", df)},
		}
	}
	var out bytes.Buffer
	if err := WriteFGDComparison(&out, []*Result{
		result("openb_pod_list_default.csv", FractionalDRAShares, 42, 92.80, 95.20),
		result("openb_pod_list_default.csv", FractionalDRAShares, 43, 92.60, 95.00),
		// Round-up replays are not FGD's setting.
		result("openb_pod_list_default.csv", FractionalRoundUp, 44, 50, 50),
		// FGD published seed 42 only.
		result("openb_pod_list_gpuspec10.csv", FractionalDRAShares, 43, 92, 94),
		result("share060-seed42.csv", FractionalDRAShares, 42, 88, 89),
	}, fgd); err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(out.String()), "\n")[2:]
	wantRows := []string{
		"| default | 42,43 | default 92.70 ± 0.14; devicefit 95.10 ± 0.14 | 95.10 | +0.06, -0.06 |",
		"| gpuspec10 | 43 | default 92.00; devicefit 94.00 | - | - |",
		"| share060-seed42 | 42 | default 88.00; devicefit 89.00 | - | - |",
	}
	if diff := cmp.Diff(wantRows, got); diff != "" {
		t.Errorf("comparison (-want,+got):\n%s", diff)
	}
}

func TestReadFGDResultsErrors(t *testing.T) {
	for name, in := range map[string]string{
		"empty":         "",
		"no 100 column": "workload,sc_policy,tune,seed\n",
		"bad value":     "workload,sc_policy,tune,seed,100\nopenb_pod_list_default,06-FGD,1.3,42,x\n",
		"no FGD rows":   "workload,sc_policy,tune,seed,100\nopenb_pod_list_default,01-Random,1.3,42,90\n",
	} {
		if _, err := ReadFGDResults(strings.NewReader(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
