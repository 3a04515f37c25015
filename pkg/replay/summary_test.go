package replay

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSummaryRows: each way the devices reach the scheduler is a row of
// its own, so that the device-plugin, DRA and shares figures of one trace
// are never averaged together.
func TestSummaryRows(t *testing.T) {
	result := func(fractional Fractional, devices DeviceMode, seed int64) *Result {
		return &Result{
			Inputs:   Inputs{Pods: "openb_pod_list_gpuspec10.csv", Fractional: string(fractional), Devices: string(devices), Seed: seed},
			Policies: []*PolicyResult{{Name: "devicefit", Points: []Point{{ArrivedPct: 100, UnallocatedPct: 5}}}},
		}
	}
	var sum bytes.Buffer
	if err := WriteSummary(&sum, []*Result{
		result(FractionalRoundUp, DevicesPlugin, 42),
		result(FractionalRoundUp, DevicesDRA, 42),
		result(FractionalDRAShares, DevicesDRA, 42),
		result(FractionalDRAShares, DevicesDRA, 43),
	}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(sum.String()), "\n")[2:] {
		cells := strings.Split(line, " | ")
		got = append(got, strings.TrimPrefix(cells[0], "| ")+" / "+cells[2])
	}
	want := []string{"gpuspec10 / 42", "gpuspec10 (DRA) / 42", "gpuspec10 (DRA shares) / 42,43"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("summary rows (-want,+got):\n%s\n%s", diff, sum.String())
	}
}
