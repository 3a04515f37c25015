package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const scenario = "../../pkg/replay/testdata/strand.yaml"

func TestRun(t *testing.T) {
	dir := t.TempDir()
	out := func(name string) string { return filepath.Join(dir, name) }
	args := []string{
		"--nodes", scenario, "--pods", scenario, "--tune", "0", "--order", "trace", "--quiet",
		"--devicefit-config", "../../manifests/scheduler-config.yaml",
		"--json", out("r.json"), "--svg", out("r.svg"), "--failed-pods", out("f.csv"),
	}
	if code := run(args, io.Discard, io.Discard); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	for _, f := range []string{"r.json", "r.svg", "f.csv"} {
		data, err := os.ReadFile(out(f))
		if err != nil || len(data) == 0 {
			t.Errorf("%s: %v, %d bytes", f, err, len(data))
		}
	}
	// The default policy fails the 4-GPU job of the scenario.
	failed, _ := os.ReadFile(out("f.csv"))
	if !strings.Contains(string(failed), "default,2,") {
		t.Errorf("failed pods:\n%s", failed)
	}
	if code := summary([]string{out("r.json")}); code != 0 {
		t.Errorf("summary exit code %d", code)
	}
	first, _ := os.ReadFile(out("r.json"))
	if code := run(args, io.Discard, io.Discard); code != 0 {
		t.Fatalf("second run: exit code %d", code)
	}
	if second, _ := os.ReadFile(out("r.json")); !bytes.Equal(first, second) {
		t.Error("two runs wrote different JSON")
	}
}

func TestRunErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{name: "unknown flag", args: []string{"--bogus"}, want: 2},
		{name: "missing inputs", args: []string{"--nodes", scenario}, want: 1},
		{name: "bad fractional", args: []string{"--nodes", scenario, "--pods", scenario, "--fractional", "half"}, want: 1},
		{name: "bad order", args: []string{"--nodes", scenario, "--pods", scenario, "--order", "random"}, want: 1},
		{name: "unknown policy", args: []string{"--nodes", scenario, "--pods", scenario, "--policies", "fifo"}, want: 1},
		{name: "bad device choice", args: []string{"--nodes", scenario, "--pods", scenario, "--fractional", "dra-shares", "--devices", "dra", "--device-choice", "worst-fit"}, want: 1},
		{name: "device choice without shares", args: []string{"--nodes", scenario, "--pods", scenario, "--device-choice", "fgd"}, want: 1},
		{name: "model without an oracle", args: []string{"--nodes", scenario, "--pods", scenario, "--fractional", "dra-shares", "--devices", "dra", "--model-device-choice"}, want: 1},
		{name: "negative move budget", args: []string{"--nodes", scenario, "--pods", scenario, "--move-budget", "-1"}, want: 1},
		{name: "move budget over 100%", args: []string{"--nodes", scenario, "--pods", scenario, "--move-budget", "150"}, want: 1},
		{name: "no moves per pending pod", args: []string{"--nodes", scenario, "--pods", scenario, "--move-budget", "1", "--max-moves", "0"}, want: 1},
		{name: "negative move delay", args: []string{"--nodes", scenario, "--pods", scenario, "--move-budget", "1", "--move-delay", "-3"}, want: 1},
		{name: "malformed move budget", args: []string{"--nodes", scenario, "--pods", scenario, "--move-budget", "1%"}, want: 2},
		{name: "stray argument", args: []string{"--nodes", scenario, "--pods", scenario, "extra"}, want: 1},
		{name: "help", args: []string{"-h"}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := run(tt.args, io.Discard, io.Discard); got != tt.want {
				t.Errorf("exit code %d, want %d", got, tt.want)
			}
		})
	}
	if got := summary(nil); got != 1 {
		t.Errorf("summary without files: exit code %d, want 1", got)
	}
}

// TestSVGFromJSON: `replay svg` draws from the JSON exactly the chart the
// replay drew with --svg, so docs/replay's charts can be redrawn without the
// trace.
func TestSVGFromJSON(t *testing.T) {
	dir := t.TempDir()
	out := func(name string) string { return filepath.Join(dir, name) }
	args := []string{
		"--nodes", scenario, "--pods", scenario, "--tune", "0", "--order", "trace", "--quiet",
		"--devicefit-config", "../../manifests/scheduler-config.yaml",
		"--json", out("r.json"), "--svg", out("replayed.svg"),
	}
	if code := run(args, io.Discard, io.Discard); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if code := svg([]string{out("r.json"), out("redrawn.svg")}); code != 0 {
		t.Fatalf("svg: exit code %d", code)
	}
	replayed, _ := os.ReadFile(out("replayed.svg"))
	redrawn, err := os.ReadFile(out("redrawn.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if len(replayed) == 0 || !bytes.Equal(replayed, redrawn) {
		t.Errorf("the SVG drawn from the JSON differs from the replay's:\n%s\n---\n%s", replayed, redrawn)
	}
	for _, bad := range [][]string{nil, {out("r.json")}, {out("missing.json"), out("x.svg")}} {
		if code := svg(bad); code != 1 {
			t.Errorf("svg %q: exit code %d, want 1", bad, code)
		}
	}
}
