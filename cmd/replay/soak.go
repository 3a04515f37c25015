package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"

	"github.com/devicefit/devicefit/internal/cmdflags"
	"github.com/devicefit/devicefit/pkg/replay"
)

// Bounds of a soak's last tenth against its first: a scheduler that runs
// for months must not grow with the pods it has seen.
const (
	soakHeapGrowth = 0.10
	soakCPUGrowth  = 0.20
)

// soak replays a long stream of arrivals and departures through one policy
// (replay.Soak) and fails when the live heap or the CPU time per arrival of
// the last tenth exceeds the first tenth's by more than the bounds above.
func soak(args []string, stdout, stderr io.Writer) int {
	cmd := cmdflags.New("replay soak", "replay soak [flags]")
	fs := cmd.Flags()
	var (
		nodes    = fs.Int("nodes", 1000, "nodes of the generated fleet")
		arrivals = fs.Int("arrivals", 1000000, "pod arrivals (pods depart whenever more than 90% of the devices are taken, until 80% are)")
		seed     = fs.Int64("seed", 42, "seed of the pods and departures")
		policy   = fs.String("policy", replay.PolicyDeviceFit, "built-in policy to soak: default, mostallocated or devicefit")
		config   = fs.String("devicefit-config", "manifests/scheduler-config.yaml", "KubeSchedulerConfiguration of the devicefit policy")
		memProf  = fs.String("memprofile", "", "write heap profiles (pprof), after a garbage collection, to FILE.1 … FILE.10 after each tenth (compare two with go tool pprof -base; GODEBUG=memprofilerate=4096 for finer ones)")
	)
	rest, code, exit := cmd.Parse(args, stdout, stderr)
	if exit {
		return code
	}
	if len(rest) > 0 {
		return fail(fmt.Errorf("soak: unexpected arguments %q", rest))
	}
	pols, err := replay.ResolvePolicies([]string{*policy}, *config, nil)
	if err != nil {
		return fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts := replay.SoakOptions{Nodes: *nodes, Arrivals: *arrivals, Seed: *seed, Samples: 10, Progress: stderr}
	if *memProf != "" {
		opts.AfterPart = func(part int) error {
			runtime.GC()
			return writeFile(fmt.Sprintf("%s.%d", *memProf, part), pprof.WriteHeapProfile)
		}
	}
	samples, err := replay.Soak(ctx, pols[0], opts)
	if err != nil {
		return fail(err)
	}
	first, last := samples[0], samples[len(samples)-1]
	heap := float64(last.LiveHeapBytes)/float64(first.LiveHeapBytes) - 1
	cpu := float64(last.CPUPerArrival)/float64(first.CPUPerArrival) - 1
	var departures int
	for _, s := range samples {
		departures += s.Departures
	}
	fmt.Fprintf(stdout, "soak %s: %d nodes, %d arrivals, %d departures\n", pols[0].Name, *nodes, *arrivals, departures)
	fmt.Fprintf(stdout, "live heap: first tenth %.1f MiB, last tenth %.1f MiB (%+.1f%%, bound %+.0f%%)\n",
		mib(first.LiveHeapBytes), mib(last.LiveHeapBytes), 100*heap, 100*soakHeapGrowth)
	fmt.Fprintf(stdout, "CPU per arrival: first tenth %.0f µs, last tenth %.0f µs (%+.1f%%, bound %+.0f%%)\n",
		float64(first.CPUPerArrival)/1e3, float64(last.CPUPerArrival)/1e3, 100*cpu, 100*soakCPUGrowth)
	fmt.Fprintf(stdout, "observed job classes at the end: %d\n", last.Classes)
	if heap > soakHeapGrowth || cpu > soakCPUGrowth {
		return fail(errors.New("soak: the last tenth grew past the bounds"))
	}
	return 0
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
