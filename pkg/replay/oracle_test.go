package replay

import (
	"context"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/dra"
)

// TestShareChoice: which GPU of a node with partly used GPUs each device
// choice gives a share. The fgd rows are FGD's worked example
// (pkg/devices/drafragmentation.go: free shares 1, 0.5 and 0.2, jobs of
// half a GPU and a whole one, equally likely) and one where FGD and best
// fit part: with only small jobs about, a share on the untouched GPU
// strands nothing, where best fit's leaves 0.1 no job can use.
func TestShareChoice(t *testing.T) {
	halfAndWhole := []PodSpec{
		{Name: "half", MilliCPU: 1000, MemoryMiB: 1024, GPUs: 1, GPUMilli: 500},
		{Name: "whole", MilliCPU: 1000, MemoryMiB: 1024, GPUs: 1, GPUMilli: 1000},
	}
	small := []PodSpec{
		{Name: "tenth", MilliCPU: 1000, MemoryMiB: 1024, GPUs: 1, GPUMilli: 100},
		{Name: "third", MilliCPU: 1000, MemoryMiB: 1024, GPUs: 1, GPUMilli: 300},
	}
	tests := []struct {
		name     string
		workload []PodSpec
		used     []int64
		share    int64
		choice   DeviceChoice
		want     int
	}{
		{"first fit takes the first GPU with room", halfAndWhole, []int64{0, 500, 800}, 200, ChoiceFirstFit, 0},
		{"first fit skips full GPUs", halfAndWhole, []int64{900, 500, 800}, 200, ChoiceFirstFit, 1},
		{"best fit takes the least free share that fits", halfAndWhole, []int64{0, 500, 800}, 200, ChoiceBestFit, 2},
		{"best fit: the GPU filled exactly", halfAndWhole, []int64{0, 700, 600}, 300, ChoiceBestFit, 1},
		{"best fit: ties go to the first", halfAndWhole, []int64{0, 600, 600}, 300, ChoiceBestFit, 1},
		// FGD's example: 0.2 on the GPU with 0.2 free strands 0.25 GPU,
		// on the half-free one 0.5, on the untouched one 0.85.
		{"fgd on FGD's example", halfAndWhole, []int64{0, 500, 800}, 200, ChoiceFGD, 2},
		// A half on (1, 0.5, 0.2): on the half-free GPU nothing is
		// left partly used but 0.2 (stranded 0.2 for both jobs); on the
		// untouched one 0.5 and 0.5 stay usable by halves.
		{"fgd keeps the untouched GPU for whole jobs", halfAndWhole, []int64{0, 500, 800}, 500, ChoiceFGD, 1},
		{"fgd parts from best fit", small, []int64{0, 500, 600}, 300, ChoiceFGD, 0},
		{"best fit there", small, []int64{0, 500, 600}, 300, ChoiceBestFit, 2},
		{"no GPU with room", halfAndWhole, []int64{900, 900, 900}, 200, ChoiceFGD, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fleet := []NodeSpec{{Name: "n", MilliCPU: 64000, MemoryMiB: 256 << 10, GPUs: int64(len(tc.used)), Model: "T4"}}
			classes, err := WorkloadClasses(tc.workload)
			if err != nil {
				t.Fatal(err)
			}
			wl, err := devices.NewWorkload(classes)
			if err != nil {
				t.Fatal(err)
			}
			m := newTracker(fleet, []*v1.Node{NewNode(&fleet[0])}, wl)
			st := newShareTracker(fleet)
			copy(st.used[0], tc.used)
			m.withShares(st)
			got := st.choose(0, tc.share, tc.choice, nil, func(used []int64) float64 {
				return m.strandedShares(0, used, 60000, 200<<30)
			})
			if got != tc.want {
				t.Errorf("%s gives %d shares on GPUs used %v to GPU %d, want %d", tc.choice, tc.share, tc.used, got, tc.want)
			}
			if want := []int64(tc.used); !equalInts(st.used[0], want) {
				t.Errorf("choose changed the GPUs' shares: %v, was %v", st.used[0], want)
			}
		})
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestOracleReplay: one node of two GPUs, shares of 500, 700, 200 and 500
// in that order. First fit, upstream's allocator, puts the 200 beside the
// 500 on gpu-0 and leaves 300 free on each GPU: the last half fails (70%
// allocated). Best fit and fgd put it on gpu-1 (900) and the last half
// fits on gpu-0 (95%). The replay moves each share to the oracle's GPU in
// the claim's allocation, and the end-of-replay check that every GPU's
// shares in the allocator's state are the model's passes (the model's
// gpu-1 at 900 could not match an allocation left on gpu-0). The same
// with DevicePack modelling the oracle.
func TestOracleReplay(t *testing.T) {
	fleet := []NodeSpec{{Name: "n", MilliCPU: 64000, MemoryMiB: 256 << 10, GPUs: 2, Model: "T4"}}
	var pods []PodSpec
	for i, milli := range []int64{500, 700, 200, 500} {
		pods = append(pods, PodSpec{Name: "p" + strconv.Itoa(i), MilliCPU: 1000, MemoryMiB: 1024, GPUs: 1, GPUMilli: milli})
	}
	for _, tc := range []struct {
		choice    DeviceChoice
		model     bool
		allocated float64
		last      string
	}{
		{ChoiceFirstFit, false, 70, ""},
		{ChoiceBestFit, false, 95, "n"},
		{ChoiceFGD, false, 95, "n"},
		{ChoiceBestFit, true, 95, "n"},
		{ChoiceFGD, true, 95, "n"},
	} {
		res := run(t, Config{Nodes: fleet, Pods: pods, Fractional: FractionalDRAShares, Arrival: exact,
			Policies: policies(t, PolicyDefault, PolicyDeviceFit),
			Engine:   EngineOptions{Devices: DevicesDRA, DeviceChoice: tc.choice, ModelDeviceChoice: tc.model}})
		for _, p := range res.Policies {
			if p.Final.AllocatedPct != tc.allocated || p.Placements[3] != tc.last {
				t.Errorf("%s (model %v), %s: allocated %v%%, last half on %q; want %v%% and %q",
					tc.choice, tc.model, p.Name, p.Final.AllocatedPct, p.Placements[3], tc.allocated, tc.last)
			}
		}
		for _, p := range res.Policies {
			// The oracles move the 200 off gpu-0.
			if want := map[bool]int{true: 1}[tc.choice != ChoiceFirstFit]; p.MovedShares != want {
				t.Errorf("%s (model %v), %s: %d shares moved off first fit's GPU, want %d", tc.choice, tc.model, p.Name, p.MovedShares, want)
			}
		}
		if tc.choice != ChoiceFirstFit && res.Inputs.DeviceChoice != string(tc.choice) {
			t.Errorf("inputs record device choice %q, want %s", res.Inputs.DeviceChoice, tc.choice)
		}
	}
	if _, err := ParseDeviceChoice("worst-fit"); err == nil || !strings.Contains(err.Error(), "worst-fit") {
		t.Errorf("ParseDeviceChoice(worst-fit): want an error naming it, got %v", err)
	}
}

// TestModelDeviceChoiceWiring: the framework's DRA manager implements
// dra.DeviceChooser (so that DevicePack models the oracle) only with an
// oracle choice and ModelDeviceChoice; first fit never hands it one, and
// its answer for a share of a node is the oracle's GPU among the
// candidates.
func TestModelDeviceChoiceWiring(t *testing.T) {
	fleet := []NodeSpec{{Name: "n", MilliCPU: 64000, MemoryMiB: 256 << 10, GPUs: 3, Model: "T4"}}
	pods := []PodSpec{{Name: "p", MilliCPU: 1000, MemoryMiB: 1024, GPUs: 1, GPUMilli: 200}}
	arrivals, err := Arrivals(pods, Capacity(fleet), exact)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		choice DeviceChoice
		model  bool
		want   bool
	}{
		{ChoiceFirstFit, false, false},
		{ChoiceFirstFit, true, false},
		{ChoiceFGD, false, false},
		{ChoiceFGD, true, true},
		{ChoiceBestFit, true, true},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		s, err := newSimulation(ctx, policies(t, PolicyDeviceFit)[0], fleet, arrivals, nil,
			EngineOptions{Devices: DevicesDRA, Shares: true, DeviceChoice: tc.choice, ModelDeviceChoice: tc.model})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		chooser, ok := s.fw.SharedDRAManager().(dra.DeviceChooser)
		if ok != tc.want {
			t.Errorf("%s, model %v: the framework's DRA manager implements DeviceChooser: %v, want %v", tc.choice, tc.model, ok, tc.want)
		}
		if ok {
			// GPUs used 0, 500, 900: a share of 100 goes to gpu-2 by
			// best fit, and by fgd (no workload: no stranding, the first
			// GPU) to gpu-0.
			copy(s.shares.used[0], []int64{0, 500, 900})
			s.request = podRequest{milliCPU: 1000, memory: 1 << 30, share: 100}
			v, err := dra.NewTracker().View(ctx, s.fw.SharedDRAManager())
			if err != nil {
				cancel()
				t.Fatal(err)
			}
			n := v.Node("n")
			want := map[DeviceChoice]int{ChoiceBestFit: 2, ChoiceFGD: 0}[tc.choice]
			if got := chooser.ChooseDevice(n, sharesRequest(100), n.Devices); got != want {
				t.Errorf("%s: ChooseDevice gives %d, want %d", tc.choice, got, want)
			}
		}
		cancel()
	}
}

// TestOraclePrescreen: with an oracle device choice the pre-screen's
// verdicts (a GPU with the share left, by the shares model) are still the
// allocator's: every policy places the same with the pre-screen off, and
// the oracle does move shares in the scenario (a fleet of 4-GPU nodes and
// shares of many sizes among whole-GPU pods).
func TestOraclePrescreen(t *testing.T) {
	var fleet []NodeSpec
	for i := range 6 {
		fleet = append(fleet, NodeSpec{Name: "n" + strconv.Itoa(i), MilliCPU: 32000, MemoryMiB: 128 << 10, GPUs: 4, Model: "T4"})
	}
	var pods []PodSpec
	for i, milli := range []int64{100, 200, 300, 500, 700, 900, 1000, 250, 600, 400, 1000, 150} {
		pods = append(pods, PodSpec{Name: "p" + strconv.Itoa(i), MilliCPU: 2000, MemoryMiB: 4096, GPUs: 1, GPUMilli: milli})
	}
	for _, model := range []bool{false, true} {
		cfg := Config{Nodes: fleet, Pods: pods, Fractional: FractionalDRAShares,
			Arrival:  ArrivalOptions{Tune: 1.3, Order: OrderShuffle, Seed: 7},
			Policies: policies(t, PolicyDefault, PolicyDeviceFit),
			Engine:   EngineOptions{Devices: DevicesDRA, DeviceChoice: ChoiceFGD, ModelDeviceChoice: model}}
		screened := run(t, cfg)
		cfg.Engine.NoPrescreen = true
		sameReplay(t, screened, run(t, cfg), "the pre-screen changed the replay with the fgd oracle")
		moved := 0
		for _, p := range screened.Policies {
			moved += p.MovedShares
		}
		if moved == 0 {
			t.Errorf("model %v: the fgd oracle moved no share: the scenario does not test it", model)
		}
	}
}
