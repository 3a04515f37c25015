package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/devicefit/devicefit/internal/cmdflags"
	"github.com/devicefit/devicefit/pkg/replay"
)

// variant writes a workload drawn from a trace (replay.Variant): the shapes
// of FGD's gpushare and cpu traces from any pod list, for replays that judge
// a packing on workloads it was not tuned on (docs/placement.md).
func variant(args []string, stdout, stderr io.Writer) int {
	cmd := cmdflags.New("replay variant", "replay variant --pods FILE --out FILE [flags]")
	fs := cmd.Flags()
	var (
		podsFile   = fs.String("pods", "", "pod list to draw from: trace CSV or YAML (required)")
		outFile    = fs.String("out", "", "write the variant as a trace CSV to this file, - for stdout (required)")
		seed       = fs.Int64("seed", 42, "seed of the draws")
		fractional = fs.Float64("fractional-share", -1, "share of the GPU pods that ask for part of one device, 0 to 1, the number of GPU pods kept (-1: keep the trace's)")
		cpuPods    = fs.Float64("cpu-pods", 1, "number of CPU-only pods as a multiple of the trace's")
		cpuScale   = fs.Float64("cpu-scale", 1, "multiply each CPU-only pod's CPU request by this")
		noProducts = fs.Bool("no-products", false, "drop every pod's accepted device models (gpu_spec); gpuspec10 without them is the default trace")
	)
	rest, code, exit := cmd.Parse(args, stdout, stderr)
	if exit {
		return code
	}
	if len(rest) > 0 {
		return fail(fmt.Errorf("variant: unexpected arguments %q", rest))
	}
	if *podsFile == "" || *outFile == "" {
		return fail(errors.New("variant: --pods and --out are required"))
	}
	pods, err := replay.LoadPods(*podsFile)
	if err != nil {
		return fail(err)
	}
	o := replay.VariantOptions{Seed: *seed, CPUPods: *cpuPods, CPUScale: *cpuScale, NoProducts: *noProducts}
	if *fractional != -1 {
		o.FractionalShare = fractional
	}
	out, err := replay.Variant(pods, o)
	if err != nil {
		return fail(fmt.Errorf("variant: %w", err))
	}
	write := func(w io.Writer) error { return replay.WritePodsCSV(w, out) }
	if *outFile == "-" {
		err = write(stdout)
	} else {
		err = writeFile(*outFile, write)
	}
	if err != nil {
		return fail(err)
	}
	fmt.Fprintf(stderr, "%s: %s\n", *podsFile, replay.VariantSummary(pods))
	fmt.Fprintf(stderr, "variant: %s\n", replay.VariantSummary(out))
	return 0
}
