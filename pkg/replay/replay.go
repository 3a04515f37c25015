package replay

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/devicefit/devicefit/pkg/devices"
)

// Config is one replay: a fleet, a trace, the arrival method and the
// policies to compare.
type Config struct {
	Nodes []NodeSpec
	// Pods is the trace as read (fractions not yet handled).
	Pods []PodSpec
	// NodesFile and PodsFile name the inputs in the report (base names, so
	// that the JSON does not depend on where the files are).
	NodesFile, PodsFile string
	Fractional          Fractional
	Arrival             ArrivalOptions
	Policies            []Policy
	Engine              EngineOptions
	// Offline also replays each policy on the pods arrived by 100%, all
	// at once, largest first (OfflineArrivals), without moves: the
	// clairvoyant packing a defragmenter's moves approach.
	Offline bool
	// Timing adds wall_seconds to each policy. Off, the JSON is
	// byte-identical for the same inputs and flags.
	Timing bool
	// Version of the binary (plugins included), recorded in the result.
	Version string
}

// Inputs records how the pod sequence was made.
type Inputs struct {
	Nodes      string  `json:"nodes"`
	Pods       string  `json:"pods"`
	Fractional string  `json:"fractional"`
	Tune       float64 `json:"tune"`
	Order      string  `json:"order"`
	Seed       int64   `json:"seed"`
	AllNodes   bool    `json:"all_nodes"`
	// Devices is plugin or dra (EngineOptions.Devices); empty in results
	// written before DRA mode, which were plugin.
	Devices string `json:"devices,omitempty"`
	// DeviceChoice is an oracle's device choice of share claims
	// (EngineOptions.DeviceChoice), ModelDeviceChoice whether DevicePack
	// modelled it; empty and false for upstream's first fit.
	DeviceChoice      string `json:"device_choice,omitempty"`
	ModelDeviceChoice bool   `json:"model_device_choice,omitempty"`
}

// Result is the replay of every policy: the JSON of --json.
type Result struct {
	CapacityDevices int64           `json:"capacity_devices"`
	Policies        []*PolicyResult `json:"policies"`
	Resource        string          `json:"resource"`
	Nodes           int             `json:"nodes"`
	// TracePods counts the pods of the trace after --fractional;
	// FractionalPods those that were rounded up or skipped; Pods the
	// arrivals after tuning.
	TracePods       int    `json:"trace_pods"`
	FractionalPods  int    `json:"fractional_pods"`
	Pods            int    `json:"pods"`
	WorkloadClasses int    `json:"workload_classes"`
	Inputs          Inputs `json:"inputs"`
	Version         string `json:"version,omitempty"`
}

// Run replays every policy, one after another, each on a fresh fleet with
// the same pod sequence.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	capacity := Capacity(cfg.Nodes)
	if capacity == 0 {
		return nil, errors.New("the fleet has no devices")
	}
	cfg.Engine.Shares = cfg.Fractional == FractionalDRAShares
	if cfg.Engine.Shares && cfg.Engine.Devices != DevicesDRA {
		return nil, fmt.Errorf("--fractional %s needs --devices %s: the shares are DRA consumable capacity", FractionalDRAShares, DevicesDRA)
	}
	pods, nFrac, err := ApplyFractional(cfg.Pods, cfg.Fractional)
	if err != nil {
		return nil, err
	}
	if len(pods) == 0 {
		return nil, errors.New("no pods left after --fractional")
	}
	classes, err := WorkloadClasses(pods)
	if err != nil {
		return nil, err
	}
	var wl *devices.Workload
	if len(classes) > 0 {
		if wl, err = devices.NewWorkload(classes); err != nil {
			return nil, err
		}
	}
	arrivals, err := Arrivals(pods, capacity, cfg.Arrival)
	if err != nil {
		return nil, err
	}
	res := &Result{
		CapacityDevices: capacity,
		Resource:        string(DeviceResource),
		Nodes:           len(cfg.Nodes),
		TracePods:       len(pods),
		FractionalPods:  nFrac,
		Pods:            len(arrivals),
		WorkloadClasses: len(classes),
		Version:         cfg.Version,
		Inputs: Inputs{
			Nodes:      filepath.Base(cfg.NodesFile),
			Pods:       filepath.Base(cfg.PodsFile),
			Fractional: string(cfg.Fractional),
			Tune:       cfg.Arrival.Tune,
			Order:      string(cfg.Arrival.Order),
			Seed:       cfg.Arrival.Seed,
			AllNodes:   cfg.Engine.AllNodes,
			Devices:    string(cfg.Engine.Devices),
		},
	}
	if cfg.Engine.oracle() {
		res.Inputs.DeviceChoice = string(cfg.Engine.DeviceChoice)
		res.Inputs.ModelDeviceChoice = cfg.Engine.ModelDeviceChoice
	}
	for _, pol := range cfg.Policies {
		pr, err := RunPolicy(ctx, pol, cfg.Nodes, arrivals, wl, cfg.Engine)
		if err != nil {
			return nil, err
		}
		if cfg.Offline {
			engine := cfg.Engine
			engine.Defrag, engine.Progress = DefragOptions{}, nil
			off, err := RunPolicy(ctx, pol, cfg.Nodes, OfflineArrivals(arrivals, capacity), wl, engine)
			if err != nil {
				return nil, fmt.Errorf("policy %s, offline packing: %w", pol.Name, err)
			}
			pr.Offline = &off.Final
		}
		if !cfg.Timing {
			pr.WallSeconds = nil
		}
		res.Policies = append(res.Policies, pr)
	}
	return res, nil
}

// flatObject matches an indented JSON object holding only scalars.
var flatObject = regexp.MustCompile(`\{\n[^{}\[\]]*\n\s*\}`)
var indent = regexp.MustCompile(`\n\s*`)

// WriteJSON writes the result indented, each point on one line, with a
// final newline.
func WriteJSON(w io.Writer, res *Result) error {
	data, err := json.MarshalIndent(res, "", " ")
	if err != nil {
		return err
	}
	data = flatObject.ReplaceAllFunc(data, func(obj []byte) []byte {
		flat := indent.ReplaceAll(obj, []byte(" "))
		return bytes.Replace(bytes.Replace(flat, []byte("{ "), []byte("{"), 1), []byte(" }"), []byte("}"), 1)
	})
	_, err = w.Write(append(data, '\n'))
	return err
}

// ReadJSON reads a result written by WriteJSON.
func ReadJSON(r io.Reader) (*Result, error) {
	var res Result
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&res); err != nil {
		return nil, err
	}
	return &res, nil
}

// At returns the point at a whole arrived percent, if the replay got there.
func (p *PolicyResult) At(pct int) (Point, bool) {
	if pct < 0 || pct >= len(p.Points) {
		return Point{}, false
	}
	return p.Points[pct], true
}

// tablePercents are the arrived percents of the stdout table.
var tablePercents = []int{50, 80, 90, 100, 110, 120}

// WriteTable writes the human-readable summary: a header, then for each
// policy its state at some arrived percents and at the end.
func WriteTable(w io.Writer, res *Result) error {
	in := res.Inputs
	tune := "no tuning"
	if in.Tune > 0 {
		tune = fmt.Sprintf("tune %g", in.Tune)
	}
	order := in.Order
	if order == string(OrderShuffle) {
		order = fmt.Sprintf("shuffle seed %d", in.Seed)
	}
	fmt.Fprintf(w, "fleet %s: %d nodes, %d %s; pods %s: %d (%d fractional, %s), %s, %s -> %d arrivals\n",
		in.Nodes, res.Nodes, res.CapacityDevices, res.Resource, in.Pods, res.TracePods, res.FractionalPods, in.Fractional, tune, order, res.Pods)
	if in.DeviceChoice != "" {
		model := "DevicePack models first fit"
		if in.ModelDeviceChoice {
			model = "DevicePack models it"
		}
		fmt.Fprintf(w, "device choice of share claims: %s oracle in place of the allocator's first fit (%s)\n", in.DeviceChoice, model)
	}
	if d := defragOf(res); d != nil {
		fmt.Fprintf(w, "defragmenter in the loop: at most %g%% of the arrivals moved, %d per pending pod\n", 100*d.Budget, d.MaxMoves)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	moves := defragOf(res) != nil
	header := "policy\tarrived%\tallocated%\tunallocated%\tfragmented%\tfailed pods\tfailed device pods\t"
	if moves {
		header += "moves\t"
	}
	fmt.Fprintln(tw, header+"wall s\t")
	for _, p := range res.Policies {
		wall := "-"
		if p.WallSeconds != nil {
			wall = fmt.Sprintf("%.1f", *p.WallSeconds)
		}
		row := func(label string, pt Point, wall string) {
			fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.2f\t%.2f\t%d\t%d\t", p.Name, label, pt.AllocatedPct, pt.UnallocatedPct, pt.FragmentedPct, pt.FailedPods, pt.FailedDevicePods)
			if moves {
				fmt.Fprintf(tw, "%d\t", pt.Moves)
			}
			fmt.Fprintf(tw, "%s\t\n", wall)
		}
		for _, pct := range tablePercents {
			if pt, ok := p.At(pct); ok {
				row(fmt.Sprint(pct), pt, "")
			}
		}
		row(fmt.Sprintf("end %.2f", p.Final.ArrivedPct), p.Final, wall)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range res.Policies {
		if o := p.Offline; o != nil {
			if _, err := fmt.Fprintf(w, "%s: offline, the pods arrived by 100%% all at once, largest first: allocated %.2f%%, %d pods left out\n", p.Name, o.AllocatedPct, o.FailedPods); err != nil {
				return err
			}
		}
		if d := p.Defrag; d != nil {
			if _, err := fmt.Fprintf(w, "%s: %d pods moved, %d pending pods placed after moves, %d moved pods placed nowhere again\n", p.Name, d.Moves, d.Rescued, d.Lost); err != nil {
				return err
			}
		}
	}
	if in.DeviceChoice != "" {
		for _, p := range res.Policies {
			if _, err := fmt.Fprintf(w, "%s: the %s oracle gave %d of the %d shares placed another GPU than first fit's\n", p.Name, in.DeviceChoice, p.MovedShares, p.SharesPlaced); err != nil {
				return err
			}
		}
	}
	return writeFailures(w, res)
}

// defragOf is the first policy's defragmenter result (all policies of a
// run share the options), nil when it was off.
func defragOf(res *Result) *DefragResult {
	for _, p := range res.Policies {
		if p.Defrag != nil {
			return p.Defrag
		}
	}
	return nil
}

func writeFailures(w io.Writer, res *Result) error {
	for _, p := range res.Policies {
		if len(p.FailedBy) == 0 {
			continue
		}
		var parts []string
		for _, k := range sortedKeys(p.FailedBy) {
			parts = append(parts, fmt.Sprintf("%s %d", k, p.FailedBy[k]))
		}
		if _, err := fmt.Fprintf(w, "%s: failed pods rejected by %s\n", p.Name, strings.Join(parts, ", ")); err != nil {
			return err
		}
	}
	return nil
}

// WriteFailures writes every failed pod of every policy as CSV:
// policy,index,arrived_pct,name,gpus,cpu_milli,memory_mib,products,rejected_by.
func WriteFailures(w io.Writer, res *Result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"policy", "index", "arrived_pct", "name", "gpus", "cpu_milli", "memory_mib", "products", "rejected_by"}); err != nil {
		return err
	}
	for _, p := range res.Policies {
		for _, f := range p.Failures {
			rec := []string{p.Name, strconv.Itoa(f.Index), strconv.FormatFloat(f.ArrivedPct, 'f', 2, 64), f.Name,
				strconv.FormatInt(f.Pod.GPUs, 10), strconv.FormatInt(f.Pod.MilliCPU, 10), strconv.FormatInt(f.Pod.MemoryMiB, 10),
				strings.Join(f.Pod.Products, "|"), strings.Join(f.RejectedBy, "|")}
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// WritePlacements writes, per arrival, the node each policy bound it to as
// CSV: index,<policy>... ("" where the pod failed). Two policies place
// alike when their columns are equal.
func WritePlacements(w io.Writer, res *Result) error {
	cw := csv.NewWriter(w)
	header := []string{"index"}
	n := 0
	for _, p := range res.Policies {
		header = append(header, p.Name)
		n = max(n, len(p.Placements))
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	rec := make([]string, len(header))
	for i := range n {
		rec[0] = strconv.Itoa(i)
		for j, p := range res.Policies {
			rec[j+1] = ""
			if i < len(p.Placements) {
				rec[j+1] = p.Placements[i]
			}
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
