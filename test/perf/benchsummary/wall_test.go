package main

import "testing"

func TestWallRatio(t *testing.T) {
	durations := func(def, fit float64) map[key]*run {
		runs := map[key]*run{}
		for p, d := range map[string]float64{profileDefault: def, profileDeviceFit: fit} {
			if d >= 0 {
				get(runs, key{"W/1Nodes", p}).metrics["SchedulingDuration"] = map[string]float64{"Duration": d}
			}
		}
		return runs
	}
	for _, tc := range []struct {
		name     string
		def, fit float64
		want     float64
		found    bool
	}{
		{"devicefit in half the time: twice the throughput", 4, 2, 2, true},
		{"no devicefit run", 4, -1, 0, false},
		{"no default run", -1, 2, 0, false},
		{"a zero duration is no measurement", 4, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, found := wallRatio(durations(tc.def, tc.fit), "W/1Nodes")
			if got != tc.want || found != tc.found {
				t.Errorf("wallRatio = %v, %v; want %v, %v", got, found, tc.want, tc.found)
			}
		})
	}
}
