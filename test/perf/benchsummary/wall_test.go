package main

import "testing"

// TestRatios: both closing ratios are devicefit's throughput over the
// default's, one from the average of one-second samples, the other from
// the measured pods' wall time.
func TestRatios(t *testing.T) {
	// runs holds, per profile, pods/s and seconds (negative: no run).
	runs := func(defThroughput, defSeconds, fitThroughput, fitSeconds float64) map[key]*run {
		out := map[key]*run{}
		for p, m := range map[string][2]float64{profileDefault: {defThroughput, defSeconds}, profileDeviceFit: {fitThroughput, fitSeconds}} {
			if m[1] < 0 {
				continue
			}
			r := get(out, key{"W/1Nodes", p})
			r.metrics["SchedulingThroughput"] = map[string]float64{"Average": m[0]}
			r.metrics["SchedulingDuration"] = map[string]float64{"Duration": m[1]}
		}
		return out
	}
	for _, tc := range []struct {
		name                  string
		runs                  map[key]*run
		wantAverage, wantWall float64
		found                 bool
	}{
		{"devicefit twice as fast, in half the time", runs(50, 4, 100, 2), 2, 2, true},
		{"the average sways on a short run", runs(90, 4, 60, 2), 60.0 / 90, 2, true},
		{"no devicefit run", runs(50, 4, 0, -1), 0, 0, false},
		{"no default run", runs(0, -1, 100, 2), 0, 0, false},
		{"zero: no measurement", runs(0, 4, 0, 0), 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			average, found := ratio(tc.runs, "W/1Nodes", "SchedulingThroughput", "Average")
			if average != tc.wantAverage || found != tc.found {
				t.Errorf("ratio = %v, %v; want %v, %v", average, found, tc.wantAverage, tc.found)
			}
			wall, found := wallRatio(tc.runs, "W/1Nodes")
			if wall != tc.wantWall || found != tc.found {
				t.Errorf("wallRatio = %v, %v; want %v, %v", wall, found, tc.wantWall, tc.found)
			}
		})
	}
}
