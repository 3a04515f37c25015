// Command replay replays a GPU-cluster trace (the Alibaba GPU trace v2023
// CSVs, or the own YAML format) through the real kube-scheduler framework,
// under several scheduling profiles, and reports how many devices each
// leaves unallocated and stranded as demand arrives. See pkg/replay and
// docs/placement.md.
//
//	replay --nodes NODES.csv --pods PODS.csv [flags]
//	replay summary [--fgd FILE] RESULT.json...  # Markdown tables over several --json results
//	replay svg RESULT.json OUT.svg  # the --svg chart again, from a --json result
//	replay variant --pods FILE --out FILE [flags]  # a workload drawn from a trace
//	replay soak [flags]  # arrivals and departures for a long time: does memory or CPU grow?
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"syscall"

	"k8s.io/component-base/version"
	"k8s.io/klog/v2"

	"github.com/devicefit/devicefit/internal/cmdflags"
	"github.com/devicefit/devicefit/pkg/replay"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "summary":
			os.Exit(summary(os.Args[2:]))
		case "budgets":
			os.Exit(budgets(os.Args[2:]))
		case "svg":
			os.Exit(svg(os.Args[2:]))
		case "variant":
			os.Exit(variant(os.Args[2:], os.Stdout, os.Stderr))
		case "soak":
			os.Exit(soak(os.Args[2:], os.Stdout, os.Stderr))
		}
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// newFlags is the replay's command line: its own flags, then klog's.
func newFlags() *cmdflags.Command {
	return cmdflags.New("replay", "replay --nodes FILE --pods FILE [flags]\n  replay summary [--fgd FILE] RESULT.json...\n  replay budgets [--fgd FILE] [--svg OUT.svg] RESULT.json...\n  replay svg RESULT.json OUT.svg\n  replay variant --pods FILE --out FILE [flags]\n  replay soak [flags]")
}

// run replays with the flags in args; the table goes to stdout, the help and
// flag errors to stdout and stderr.
func run(args []string, stdout, stderr io.Writer) int {
	cmd := newFlags()
	fs := cmd.Flags()
	var (
		nodesFile   = fs.String("nodes", "", "node list: trace CSV (sn,cpu_milli,memory_mib,gpu,model) or YAML (required)")
		podsFile    = fs.String("pods", "", "pod list: trace CSV (name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,...]) or YAML (required)")
		fractional  = fs.String("fractional", string(replay.FractionalRoundUp), "pods with gpu_milli < 1000: round-up (one whole device), skip, or dra-shares (a claim for gpu_milli shares of one shared DRA GPU; needs --devices dra; allocation in milli-GPU)")
		tune        = fs.Float64("tune", 1.3, "FGD workload tuning ratio: resize the pod sequence to about this × the fleet's devices (0: replay the pods exactly)")
		order       = fs.String("order", string(replay.OrderShuffle), "arrival order of the trace's pods: shuffle (by --seed), fgd (the sequence FGD's simulator builds for --seed) or trace (file order)")
		seed        = fs.Int64("seed", 42, "seed of the shuffle and of the tuning draws")
		policies    = fs.String("policies", "default,mostallocated,devicefit", "comma-separated built-in policies: default, mostallocated, devicefit (empty for none)")
		dfConfig    = fs.String("devicefit-config", "manifests/scheduler-config.yaml", "KubeSchedulerConfiguration of the devicefit policy")
		jsonFile    = fs.String("json", "", "write the result as JSON to this file")
		svgFile     = fs.String("svg", "", "write allocated vs arrived as an SVG chart to this file")
		failedFile  = fs.String("failed-pods", "", "write every failed pod (policy, position, request, rejecting plugins) as CSV to this file")
		placeFile   = fs.String("placements", "", "write the node each policy bound each pod to (index,<policy>...) as CSV to this file")
		title       = fs.String("title", "", "chart title (default: the pod file and flags)")
		timing      = fs.Bool("timing", false, "add wall_seconds per policy to the JSON (which then differs between runs)")
		allNodes    = fs.Bool("all-nodes", false, "score every feasible node, ignoring the profiles' percentageOfNodesToScore")
		par         = fs.Int("parallelism", runtime.GOMAXPROCS(0), "workers for Filter and Score (does not change results)")
		noPrescreen = fs.Bool("no-prescreen", false, "hand every node to the Filter plugins, even those NodeResourcesFit must reject (slower; same placements)")
		devicesMode = fs.String("devices", string(replay.DevicesPlugin), "how the fleet's GPUs reach the scheduler: plugin (node allocatable) or dra (ResourceSlices and a DeviceClass serving nvidia.com/gpu)")
		choice      = fs.String("device-choice", string(replay.ChoiceFirstFit), "with --fractional dra-shares, the GPU of the chosen node a share claim gets: first-fit (upstream's allocator), or an oracle the replay puts in its place: best-fit (the least free share that fits) or fgd (the GPU leaving the node least fragmented for the trace's workload)")
		modelChoice = fs.Bool("model-device-choice", false, "with an oracle --device-choice, DevicePack scores the placements that choice makes, not first fit's")
		quiet       = fs.Bool("quiet", false, "no progress on stderr")
		cpuProfile  = fs.String("cpuprofile", "", "write a CPU profile (pprof) to this file")
		memProfile  = fs.String("memprofile", "", "write a heap profile (pprof, allocations included) to this file at the end")
		gcPercent   = fs.Int("gc-percent", replayGCPercent, "the Go garbage collector's target (GOGC) for this process; the GOGC environment variable, when set, wins (does not change results)")
		moveBudget  = fs.Float64("move-budget", 0, "run the defragmenter in the loop: when a pod fits nowhere, move at most --max-moves pods so that it fits, the moves totalling at most this percent of the arrivals so far (0: off; 1 is one move per hundred arrivals)")
		maxMoves    = fs.Int("max-moves", 2, "with --move-budget, the most pods moved for one pending pod")
		movesUntil  = fs.Float64("moves-until", 0, "with --move-budget, no move once this percent of the fleet's GPUs has arrived (FGD's figures are at 100%; 0: no end)")
		moveDelay   = fs.Int("move-delay", 0, "with --move-budget, arrivals a moved pod's replacement waits before it is scheduled (a controller that does not recreate it at once); meanwhile it holds no devices and arrivals may take its room (0: at once)")
		consolidate = fs.Float64("consolidate", 0, "with --move-budget, also move a device-free pod with no pod pending when that frees at least this many stranded devices (0: only for pending pods)")
		offline     = fs.Bool("offline", false, "also replay each policy on the pods arrived by 100%, all at once, largest first, without moves (a clairvoyant packing, beside what moves reach)")
		profiles    = fs.StringArray("profile", nil, "KubeSchedulerConfiguration file to replay as a further policy, named by the file's base name (repeatable)")
	)
	rest, code, exit := cmd.Parse(args, stdout, stderr)
	if exit {
		return code
	}
	if len(rest) > 0 {
		return fail(fmt.Errorf("unexpected arguments %q", rest))
	}
	defer klog.Flush()
	if *nodesFile == "" || *podsFile == "" {
		return fail(errors.New("--nodes and --pods are required"))
	}
	frac, err := replay.ParseFractional(*fractional)
	if err != nil {
		return fail(err)
	}
	ord, err := replay.ParseOrder(*order)
	if err != nil {
		return fail(err)
	}
	mode, err := replay.ParseDeviceMode(*devicesMode)
	if err != nil {
		return fail(err)
	}
	devChoice, err := replay.ParseDeviceChoice(*choice)
	if err != nil {
		return fail(err)
	}
	if devChoice != replay.ChoiceFirstFit && frac != replay.FractionalDRAShares {
		return fail(fmt.Errorf("--device-choice %s needs --fractional %s", devChoice, replay.FractionalDRAShares))
	}
	if *modelChoice && devChoice == replay.ChoiceFirstFit {
		return fail(errors.New("--model-device-choice needs an oracle --device-choice (best-fit or fgd)"))
	}
	if math.IsNaN(*moveBudget) || *moveBudget < 0 || *moveBudget > 100 {
		return fail(fmt.Errorf("--move-budget %v: want a percent of the arrivals from 0 to 100", *moveBudget))
	}
	defrag := replay.DefragOptions{Budget: *moveBudget / 100, MaxMoves: *maxMoves, Consolidate: *consolidate, Until: *movesUntil, Delay: *moveDelay}
	if err := defrag.Validate(); err != nil {
		return fail(fmt.Errorf("--move-budget %v, --max-moves %d, --consolidate %v, --moves-until %v, --move-delay %d: %w", *moveBudget, *maxMoves, *consolidate, *movesUntil, *moveDelay, err))
	}
	nodes, err := replay.LoadNodes(*nodesFile)
	if err != nil {
		return fail(err)
	}
	pods, err := replay.LoadPods(*podsFile)
	if err != nil {
		return fail(err)
	}
	var names []string
	for _, n := range strings.Split(*policies, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	pols, err := replay.ResolvePolicies(names, *dfConfig, *profiles)
	if err != nil {
		return fail(err)
	}
	var progress io.Writer = os.Stderr
	if *quiet {
		progress = nil
	}
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(*gcPercent)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fail(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fail(err)
		}
		defer pprof.StopCPUProfile()
	}
	if *memProfile != "" {
		defer func() {
			f, err := os.Create(*memProfile)
			if err == nil {
				err = pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "memprofile:", err)
			}
		}()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := replay.Run(ctx, replay.Config{
		Nodes:      nodes,
		Pods:       pods,
		NodesFile:  *nodesFile,
		PodsFile:   *podsFile,
		Fractional: frac,
		Arrival:    replay.ArrivalOptions{Tune: *tune, Order: ord, Seed: *seed},
		Policies:   pols,
		Engine: replay.EngineOptions{Defrag: defrag, Parallelism: *par, AllNodes: *allNodes, NoPrescreen: *noPrescreen, Progress: progress, Devices: mode,
			DeviceChoice: devChoice, ModelDeviceChoice: *modelChoice},
		Timing:  *timing,
		Offline: *offline,
		Version: version.Get().GitVersion,
	})
	if err != nil {
		return fail(err)
	}
	if err := replay.WriteTable(stdout, res); err != nil {
		return fail(err)
	}
	if *jsonFile != "" {
		if err := writeFile(*jsonFile, func(w io.Writer) error { return replay.WriteJSON(w, res) }); err != nil {
			return fail(err)
		}
	}
	if *failedFile != "" {
		if err := writeFile(*failedFile, func(w io.Writer) error { return replay.WriteFailures(w, res) }); err != nil {
			return fail(err)
		}
	}
	if *placeFile != "" {
		if err := writeFile(*placeFile, func(w io.Writer) error { return replay.WritePlacements(w, res) }); err != nil {
			return fail(err)
		}
	}
	if *svgFile != "" {
		t := *title
		if t == "" {
			t = replay.ChartTitle(res.Inputs)
		}
		if err := writeFile(*svgFile, func(w io.Writer) error { return replay.WriteSVG(w, res, t) }); err != nil {
			return fail(err)
		}
	}
	return 0
}

// summary prints a Markdown table over several --json results and, with
// --fgd FILE (the authors' analysis_allo_discrete.csv), the fractional
// replays against FGD's published allocation.
func summary(args []string) int {
	fgd, svgFile, results, err := readResults("summary", args)
	if err != nil {
		return fail(err)
	}
	if svgFile != "" {
		return fail(errors.New("summary: --svg is for replay budgets"))
	}
	if err := replay.WriteSummary(os.Stdout, results); err != nil {
		return fail(err)
	}
	if fgd != nil {
		fmt.Println()
		if err := replay.WriteFGDComparison(os.Stdout, results, fgd); err != nil {
			return fail(err)
		}
	}
	return 0
}

// budgets prints the defragmentation table over --move-budget replays
// (hack/replay-defrag.sh) and, with --svg, draws it.
func budgets(args []string) int {
	fgd, svgFile, results, err := readResults("budgets", args)
	if err != nil {
		return fail(err)
	}
	if err := replay.WriteBudgetTable(os.Stdout, results, fgd); err != nil {
		return fail(err)
	}
	if svgFile == "" {
		return 0
	}
	f, err := os.Create(svgFile)
	if err != nil {
		return fail(err)
	}
	err = replay.WriteBudgetSVG(f, results, fgd, "GPUs allocated at 100% arrived against the move budget (fractional as DRA shares, FGD's order)")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fail(err)
	}
	return 0
}

// readResults reads the --json results named after the options --fgd FILE
// (the authors' analysis_allo_discrete.csv) and --svg FILE.
func readResults(cmd string, args []string) (replay.FGDResults, string, []*replay.Result, error) {
	var fgd replay.FGDResults
	var svgFile string
	for len(args) > 0 && (args[0] == "--fgd" || args[0] == "--svg") {
		if len(args) < 2 {
			return nil, "", nil, fmt.Errorf("%s: %s wants a file", cmd, args[0])
		}
		if args[0] == "--svg" {
			svgFile, args = args[1], args[2:]
			continue
		}
		f, err := os.Open(args[1])
		if err != nil {
			return nil, "", nil, err
		}
		fgd, err = replay.ReadFGDResults(f)
		f.Close()
		if err != nil {
			return nil, "", nil, fmt.Errorf("%s: %w", args[1], err)
		}
		args = args[2:]
	}
	if len(args) == 0 {
		return nil, "", nil, fmt.Errorf("%s: want RESULT.json files", cmd)
	}
	var results []*replay.Result
	for _, name := range args {
		f, err := os.Open(name)
		if err != nil {
			return nil, "", nil, err
		}
		res, err := replay.ReadJSON(f)
		f.Close()
		if err != nil {
			return nil, "", nil, fmt.Errorf("%s: %w", name, err)
		}
		results = append(results, res)
	}
	return fgd, svgFile, results, nil
}

// svg draws the chart of a --json result again, as --svg drew it with the
// default title: the committed charts of docs/replay are redrawn from their
// JSON without the trace.
func svg(args []string) int {
	if len(args) != 2 {
		return fail(errors.New("svg: want RESULT.json OUT.svg"))
	}
	f, err := os.Open(args[0])
	if err != nil {
		return fail(err)
	}
	res, err := replay.ReadJSON(f)
	f.Close()
	if err != nil {
		return fail(fmt.Errorf("%s: %w", args[0], err))
	}
	if err := writeFile(args[1], func(w io.Writer) error { return replay.WriteSVG(w, res, replay.ChartTitle(res.Inputs)) }); err != nil {
		return fail(err)
	}
	return 0
}

// writeFile writes through a temporary file, so a failed run leaves no
// half-written result.
func writeFile(name string, write func(io.Writer) error) error {
	if dir := filepath.Dir(name); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}

func fail(err error) int {
	fmt.Fprintln(os.Stderr, "replay:", err)
	return 1
}

// replayGCPercent is the replay's garbage collector target: a replay is one
// batch process whose scheduling cycles allocate several GB over a live heap
// of ~250 MB, and with Go's default of 100 the collector took a sixth of a
// shares replay's CPU (docs/performance.md, branch sharespeed). 400 trades
// that for about 730 MB resident instead of 310 MB.
const replayGCPercent = 400
