package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/devicefit/devicefit/test/perf/results"
)

// TestCliqueFleetSpans: CliqueFleet's ratio is the mean of the runs' pods
// over their spans, devicefit's over the default's, and takes only the
// case and its repeats.
func TestCliqueFleetSpans(t *testing.T) {
	span := func(runs map[key]*run, workload, profile string, seconds float64, pods int) {
		r := get(runs, key{workload, profile})
		r.extras = &extras{Span: &results.Span{Seconds: seconds, Pods: pods}}
	}
	for _, tc := range []struct {
		name  string
		setup func(map[key]*run)
		want  string // a line of the output; "" = no output
	}{
		{"three runs each", func(r map[key]*run) {
			span(r, "CliqueFleet/360Nodes_60Gangs", profileDefault, 2, 240)   // 120
			span(r, "CliqueFleet/360Nodes_60Gangs_2", profileDefault, 2, 200) // 100
			span(r, "CliqueFleet/360Nodes_60Gangs_3", profileDefault, 1, 80)  // 80
			span(r, "CliqueFleet/360Nodes_60Gangs", profileDeviceFit, 1, 120)
			span(r, "CliqueFleet/360Nodes_60Gangs_2", profileDeviceFit, 2, 240)
			span(r, "CliqueFleet/360Nodes_60Gangs_3", profileDeviceFit, 1, 120)
		}, "ratio (mean of 3 and 3 runs): 1.20 (yes, >= 1.2)"},
		{"slower", func(r map[key]*run) {
			span(r, "CliqueFleet/360Nodes_60Gangs", profileDefault, 1, 100)
			span(r, "CliqueFleet/360Nodes_60Gangs", profileDeviceFit, 1, 90)
		}, "ratio (mean of 1 and 1 runs): 0.90 (NO, >= 1.2)"},
		{"each case its own figure", func(r map[key]*run) {
			span(r, "CliqueFleet/1800Nodes_300Gangs", profileDefault, 1, 100)
			span(r, "CliqueFleet/1800Nodes_300Gangs", profileDeviceFit, 1, 300)
			span(r, "CliqueFleet/360Nodes_60Gangs", profileDefault, 1, 100)
			span(r, "CliqueFleet/360Nodes_60Gangs", profileDeviceFit, 1, 110)
		}, "CliqueFleet/360Nodes_60Gangs ratio (mean of 1 and 1 runs): 1.10 (NO, >= 1.2)"},
		{"no default run", func(r map[key]*run) {
			span(r, "CliqueFleet/360Nodes_60Gangs", profileDeviceFit, 1, 100)
		}, ""},
		{"a zero span is no run", func(r map[key]*run) {
			span(r, "CliqueFleet/360Nodes_60Gangs", profileDefault, 0, 100)
			span(r, "CliqueFleet/360Nodes_60Gangs", profileDeviceFit, 1, 100)
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs := map[key]*run{}
			tc.setup(runs)
			var out bytes.Buffer
			cliqueFleetSpans(&out, runs)
			if tc.want == "" {
				if out.Len() != 0 {
					t.Errorf("want no output, got %q", out.String())
				}
				return
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Errorf("output %q lacks %q", out.String(), tc.want)
			}
		})
	}
}
