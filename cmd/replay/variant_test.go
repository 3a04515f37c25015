package main

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/devicefit/devicefit/pkg/replay"
)

// longCSV has fractional, whole-device and CPU-only pods.
const longCSV = "../../pkg/replay/testdata/pods_long.csv"

func TestVariantCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "v.csv")
	args := []string{"--pods", longCSV, "--out", out, "--fractional-share", "1", "--cpu-pods", "2", "--seed", "3"}
	if code := variant(args, io.Discard, io.Discard); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	pods, err := replay.LoadPods(out)
	if err != nil {
		t.Fatal(err)
	}
	in, _ := replay.LoadPods(longCSV)
	var gpuIn, gpuOut int
	for _, p := range in {
		if p.GPUs > 0 {
			gpuIn++
		}
	}
	for _, p := range pods {
		if p.GPUs > 0 {
			gpuOut++
			if !p.Fractional() {
				t.Errorf("%s asks %d whole devices; --fractional-share 1 wants every GPU pod fractional", p.Name, p.GPUs)
			}
		}
	}
	if gpuOut != gpuIn {
		t.Errorf("%d GPU pods, want the trace's %d", gpuOut, gpuIn)
	}
}

func TestVariantCommandErrors(t *testing.T) {
	for name, args := range map[string][]string{
		"no output":      {"--pods", scenario},
		"share above 1":  {"--pods", scenario, "--out", "-", "--fractional-share", "2"},
		"missing file":   {"--pods", "no-such.csv", "--out", "-"},
		"extra argument": {"--pods", scenario, "--out", "-", "x"},
	} {
		if code := variant(args, io.Discard, io.Discard); code != 1 {
			t.Errorf("%s: exit code %d, want 1", name, code)
		}
	}
}
