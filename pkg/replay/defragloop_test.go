package replay

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// TestDefragMovesForPendingPods: a pod fits nowhere until one pod moves,
// through the real profile (and, with DRA, the allocator: the claims'
// state must match the shares model afterwards).
//
// "cpu pod": a: 1 GPU, 8 CPU, holding a CPU-only pod of 6; b: its GPU held
// by a pod of 7 CPU; c: no GPU, 8 CPU. A 1-GPU pod of 4 CPU (a share of
// 500 in dra-shares mode) fits nowhere. Moving b's pod helps nothing (it
// fits nowhere else); moving a's CPU pod to c lets the pending pod fit a.
//
// "device pod": a: its GPU held by a pod of 2 CPU (a share of 600), 6 CPU
// left; b: a free GPU, its CPU held by a pod of 7; c: a free GPU, 3 CPU.
// The pending pod fits a once a's device pod has moved to c, its claim
// deallocated.
//
// The defragmenter makes the move when the budget allows it.
func TestDefragMovesForPendingPods(t *testing.T) {
	type scenario struct {
		fleet  []NodeSpec
		specs  []PodSpec
		pinned []string
		// after: the placements after the move.
		after []string
		// placed: milli-GPU placed after the move, of which the pending
		// pod's share.
		placed int64
	}
	shares := EngineOptions{Devices: DevicesDRA, Shares: true}
	cpuPod := func(share int64) scenario {
		return scenario{
			fleet: []NodeSpec{
				{Name: "a", MilliCPU: 8000, MemoryMiB: 64 << 10, GPUs: 1, Model: "T4"},
				{Name: "b", MilliCPU: 8000, MemoryMiB: 64 << 10, GPUs: 1, Model: "T4"},
				{Name: "c", MilliCPU: 8000, MemoryMiB: 64 << 10},
			},
			specs: []PodSpec{
				{Name: "cpu", MilliCPU: 6000, MemoryMiB: 1024},
				{Name: "held", MilliCPU: 7000, MemoryMiB: 1024, GPUs: 1, GPUMilli: 1000},
				{Name: "pending", MilliCPU: 4000, MemoryMiB: 1024, GPUs: 1, GPUMilli: share},
			},
			pinned: []string{"a", "b", ""},
			after:  []string{"c", "b", "a"},
			placed: 1000 + share,
		}
	}
	devicePod := func(held, share int64) scenario {
		return scenario{
			fleet: []NodeSpec{
				{Name: "a", MilliCPU: 8000, MemoryMiB: 64 << 10, GPUs: 1, Model: "T4"},
				{Name: "b", MilliCPU: 8000, MemoryMiB: 64 << 10, GPUs: 1, Model: "T4"},
				{Name: "c", MilliCPU: 3000, MemoryMiB: 64 << 10, GPUs: 1, Model: "T4"},
			},
			specs: []PodSpec{
				{Name: "held", MilliCPU: 2000, MemoryMiB: 1024, GPUs: 1, GPUMilli: held},
				{Name: "cpu", MilliCPU: 7000, MemoryMiB: 1024},
				{Name: "pending", MilliCPU: 4000, MemoryMiB: 1024, GPUs: 1, GPUMilli: share},
			},
			pinned: []string{"a", "b", ""},
			after:  []string{"c", "b", "a"},
			placed: held + share,
		}
	}
	for _, tc := range []struct {
		name   string
		scen   scenario
		opts   EngineOptions
		budget float64
		// moves: the move is made; else the pod stays pending.
		moves bool
	}{
		{name: "cpu pod", scen: cpuPod(1000), budget: 0.5, moves: true},
		{name: "cpu pod, dra-shares", scen: cpuPod(500), opts: shares, budget: 0.5, moves: true},
		{name: "cpu pod, budget spent", scen: cpuPod(1000), budget: 0.3},
		{name: "cpu pod, dra-shares, budget spent", scen: cpuPod(500), opts: shares, budget: 0.3},
		{name: "device pod", scen: devicePod(1000, 1000), budget: 0.5, moves: true},
		{name: "device pod, dra-shares", scen: devicePod(600, 500), opts: shares, budget: 0.5, moves: true},
		{name: "device pod, dra, whole GPUs", scen: devicePod(1000, 1000), opts: EngineOptions{Devices: DevicesDRA}, budget: 0.5, moves: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fleet, specs, pinned := tc.scen.fleet, tc.scen.specs, tc.scen.pinned
			arrivals := make([]Arrival, len(specs))
			for i := range specs {
				arrivals[i] = Arrival{Pod: &specs[i], Name: specs[i].Name}
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s, err := newSimulation(ctx, policies(t, PolicyDeviceFit)[0], fleet, arrivals, nil, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			s.bound = true
			d := newDefragger(DefragOptions{Budget: tc.budget, MaxMoves: 1}, len(arrivals), len(fleet))
			res := &PolicyResult{FailedBy: s.failed, Placements: make([]string, len(arrivals))}
			r := &policyRun{s: s, res: res, arrivals: arrivals, d: d, name: "devicefit"}
			for i := range arrivals {
				arrive(t, ctx, r, i, pinned[i], tc.opts.Shares)
			}
			if got := res.Placements; !slices.Equal(got, pinned) {
				t.Fatalf("set-up placements %q, want %q", got, pinned)
			}
			if err := d.step(ctx, s, len(arrivals)-1, r.record); err != nil {
				t.Fatal(err)
			}
			want := pinned
			if tc.moves {
				want = tc.scen.after
			}
			for i, w := range want {
				if got := res.Placements[i]; got != w {
					t.Errorf("%s on %q, want %q", specs[i].Name, got, w)
				}
			}
			wantMoves, wantPending := 0, 1
			if tc.moves {
				wantMoves, wantPending = 1, 0
			}
			m := s.metrics
			if m.moves != wantMoves || d.rescued != wantMoves || d.lost != 0 || len(d.pending) != wantPending || m.failed != wantPending || len(res.Failures) != wantPending {
				t.Errorf("moves %d, rescued %d, lost %d, pending %d, failed %d, failures %d; want %d moves and rescues, none lost, %d pending",
					m.moves, d.rescued, d.lost, len(d.pending), m.failed, len(res.Failures), wantMoves, wantPending)
			}
			if allowed := int(tc.budget * float64(len(arrivals))); m.moves > allowed {
				t.Errorf("%d moves after %d arrivals exceed the budget of %d", m.moves, len(arrivals), allowed)
			}
			placed := specs[0].MilliGPUs() + specs[1].MilliGPUs()
			if tc.moves {
				placed = tc.scen.placed
			}
			if m.allocated != placed {
				t.Errorf("allocated %d milli-GPU, want %d", m.allocated, placed)
			}
			if tc.opts.Shares {
				if err := s.checkShares(s.shares, fleet, m.allocated); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// arrive schedules arrival i of r, on node pinned when not "", as the
// replay's loop does.
func arrive(t *testing.T, ctx context.Context, r *policyRun, i int, pinned string, shares bool) {
	t.Helper()
	s, a := r.s, &r.arrivals[i]
	pod := NewPod(a, "uid-"+a.Name, policies(t, PolicyDeviceFit)[0].Profile.SchedulerName, s.style)
	s.request = requestOf(a.Pod, shares)
	if shares && a.Pod.Fractional() {
		withShareClaim(pod, a)
	}
	if pinned != "" {
		pod.Spec.NodeSelector = map[string]string{v1.LabelHostname: pinned}
	}
	out, err := s.schedule(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.record(i, pod, out, arrived); err != nil {
		t.Fatal(err)
	}
	if p := r.d.placed[i]; p != nil {
		// The setup pins the pods; their controllers' new pods are free
		// to go anywhere.
		p.pod.Spec.NodeSelector = nil
	}
}

// TestDefragDelay: with a delay, a moved pod's replacement is scheduled
// that many arrivals after the move, holding nothing meanwhile; an arrival
// in between may take the room it would have had. The fleet is
// TestDefragMovesForPendingPods' "device pod": "held" moves off a so that
// "pending" fits there, and its only home is c; "thief" arrives pinned to
// c after the move, and has no other home (b's CPU is taken), so no move
// gives c back.
func TestDefragDelay(t *testing.T) {
	fleet := []NodeSpec{
		{Name: "a", MilliCPU: 8000, MemoryMiB: 64 << 10, GPUs: 1, Model: "T4"},
		{Name: "b", MilliCPU: 8000, MemoryMiB: 64 << 10, GPUs: 1, Model: "T4"},
		{Name: "c", MilliCPU: 3000, MemoryMiB: 64 << 10, GPUs: 1, Model: "T4"},
	}
	specs := []PodSpec{
		{Name: "held", MilliCPU: 2000, MemoryMiB: 1024, GPUs: 1, GPUMilli: 1000},
		{Name: "cpu", MilliCPU: 7000, MemoryMiB: 1024},
		{Name: "pending", MilliCPU: 4000, MemoryMiB: 1024, GPUs: 1, GPUMilli: 1000},
		{Name: "thief", MilliCPU: 2000, MemoryMiB: 1024, GPUs: 1, GPUMilli: 1000},
	}
	for _, tc := range []struct {
		name  string
		thief bool
		// held: where held's replacement goes ("": nowhere, lost).
		held string
	}{
		{name: "room kept", held: "c"},
		{name: "room taken", thief: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			arrivals := make([]Arrival, len(specs))
			for i := range specs {
				arrivals[i] = Arrival{Pod: &specs[i], Name: specs[i].Name}
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s, err := newSimulation(ctx, policies(t, PolicyDeviceFit)[0], fleet, arrivals, nil, EngineOptions{})
			if err != nil {
				t.Fatal(err)
			}
			s.bound = true
			const delay = 2
			d := newDefragger(DefragOptions{Budget: 0.5, MaxMoves: 1, Delay: delay}, len(arrivals), len(fleet))
			res := &PolicyResult{FailedBy: s.failed, Placements: make([]string, len(arrivals))}
			r := &policyRun{s: s, res: res, arrivals: arrivals, d: d, name: "devicefit"}
			for i, node := range []string{"a", "b", ""} {
				arrive(t, ctx, r, i, node, false)
			}
			if err := d.step(ctx, s, 2, r.record); err != nil {
				t.Fatal(err)
			}
			m := s.metrics
			if res.Placements[2] != "a" || d.placed[0] != nil || len(d.delayed) != 1 || m.allocated != 1000 || m.failed != 0 {
				t.Fatalf("after the move: pending on %q, held placed %v, %d delayed, %d milli-GPU allocated, %d failed; want pending on a, held waiting, 1000 allocated, none failed",
					res.Placements[2], d.placed[0], len(d.delayed), m.allocated, m.failed)
			}
			if tc.thief {
				arrive(t, ctx, r, 3, "c", false)
			}
			if err := d.step(ctx, s, 2+delay-1, r.record); err != nil {
				t.Fatal(err)
			}
			if len(d.delayed) != 1 {
				t.Fatalf("held's replacement scheduled before its delay ran out")
			}
			if err := d.step(ctx, s, 2+delay, r.record); err != nil {
				t.Fatal(err)
			}
			lost := 0
			if tc.held == "" {
				lost = 1
			}
			if got := res.Placements[0]; got != tc.held || len(d.delayed) != 0 || d.lost != lost || m.failed != lost || len(d.pending) != lost {
				t.Errorf("held on %q, %d delayed, lost %d, failed %d, pending %d; want on %q, lost %d", got, len(d.delayed), d.lost, m.failed, len(d.pending), tc.held, lost)
			}
		})
	}
}

// TestDefragInTheLoop replays the mixed scenario with the defragmenter:
// with a budget too small for one move it is the plain replay (moved pods
// need bound, not assumed, pods: that changes no placement); with a budget
// it moves pods, never more than the budget allows at any point, and, in
// dra-shares mode, the allocator's state matches the shares model at the
// end (RunPolicy checks it). --offline adds each policy's packing of the
// arrived pods, largest first; Until ends the moves; Delay holds the moved
// pods' replacements back.
func TestDefragInTheLoop(t *testing.T) {
	for _, mode := range []struct {
		name       string
		fractional Fractional
		devices    DeviceMode
	}{
		{"device plugin", FractionalRoundUp, DevicesPlugin},
		{"dra-shares", FractionalDRAShares, DevicesDRA},
	} {
		t.Run(mode.name, func(t *testing.T) {
			cfg := mixedConfig(t)
			cfg.Fractional, cfg.Engine.Devices = mode.fractional, mode.devices
			plain := run(t, cfg)
			cfg.Engine.Defrag = DefragOptions{Budget: 1e-9, MaxMoves: 2}
			sameReplay(t, plain, run(t, cfg), "a defragmenter that may not move changed the replay")

			const budget = 0.2
			cfg.Engine.Defrag = DefragOptions{Budget: budget, MaxMoves: 2}
			cfg.Offline = true
			res := run(t, cfg)
			var moves int
			for _, p := range res.Policies {
				if p.Defrag == nil || p.Offline == nil {
					t.Fatalf("%s: defragmenter result %v, offline %v", p.Name, p.Defrag, p.Offline)
				}
				for _, pt := range append(p.Points, p.Final) {
					if allowed := int(budget * float64(pt.Pods)); pt.Moves > allowed {
						t.Errorf("%s: %d moves after %d pods, the budget allows %d", p.Name, pt.Moves, pt.Pods, allowed)
					}
				}
				if p.Final.Moves != p.Defrag.Moves {
					t.Errorf("%s: final point has %d moves, the result %d", p.Name, p.Final.Moves, p.Defrag.Moves)
				}
				// Pods placed after waiting leave the failures; moved pods
				// placed nowhere join them.
				unplaced := 0
				for _, node := range p.Placements {
					if node == "" {
						unplaced++
					}
				}
				if p.Final.FailedPods != unplaced || len(p.Failures) != unplaced {
					t.Errorf("%s: %d pods without a node, %d failed pods counted, %d listed", p.Name, unplaced, p.Final.FailedPods, len(p.Failures))
				}
				moves += p.Defrag.Moves
			}
			if moves == 0 {
				t.Error("no policy moved a pod; the scenario should make moves, to cover them")
			}

			// Until: no move once that percent has arrived. The point of
			// each later percent holds every move made.
			until := -1
			for _, p := range res.Policies {
				for i, pt := range p.Points {
					if pt.Moves > 0 && pt.Moves < p.Final.Moves {
						until = i
						break
					}
				}
				if until >= 0 {
					break
				}
			}
			if until < 0 {
				t.Fatal("no policy moved pods at two arrived percents; the scenario should, to cover Until")
			}
			cfg.Engine.Defrag.Until = float64(until)
			cut := run(t, cfg)
			for i, p := range cut.Policies {
				if len(p.Points) <= until+1 {
					continue
				}
				if after := p.Points[until+1].Moves; p.Final.Moves != after {
					t.Errorf("%s: %d moves at %d%% arrived, %d at the end: moves after --moves-until %d", p.Name, after, until+1, p.Final.Moves, until)
				}
				if p.Final.Moves > res.Policies[i].Final.Moves {
					t.Errorf("%s: %d moves until %d%%, more than the %d without an end", p.Name, p.Final.Moves, until, res.Policies[i].Final.Moves)
				}
			}
			if cut.Policies[0].Final.Moves == res.Policies[0].Final.Moves && cut.Policies[len(cut.Policies)-1].Final.Moves == res.Policies[len(res.Policies)-1].Final.Moves {
				t.Errorf("Until %d%% changed no policy's moves", until)
			}

			// Delay: the replacements still waiting at the end are
			// scheduled then (a pod in flight has no node and has not
			// failed); the books (and, in dra-shares mode, the allocator
			// against the shares model) agree at the end.
			// A delay longer than the replay: every moved pod is in
			// flight until the end.
			const delay = 1 << 20
			cfg.Engine.Defrag.Until, cfg.Engine.Defrag.Delay = 0, delay
			moved := 0
			for _, p := range run(t, cfg).Policies {
				moved += p.Defrag.Moves
				unplaced := 0
				for _, node := range p.Placements {
					if node == "" {
						unplaced++
					}
				}
				if p.Defrag.Delay != delay || p.Final.FailedPods != unplaced || len(p.Failures) != unplaced {
					t.Errorf("%s, delay %d: %d pods without a node, %d failed pods counted, %d listed", p.Name, p.Defrag.Delay, unplaced, p.Final.FailedPods, len(p.Failures))
				}
			}
			if moved == 0 {
				t.Error("no pod moved with a delay; the scenario should move some, to cover it")
			}
		})
	}
}

func TestDefragOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		opts DefragOptions
		want string // "" for valid
	}{
		{DefragOptions{}, ""},
		{DefragOptions{Budget: 0.01, MaxMoves: 2}, ""},
		{DefragOptions{Budget: -0.01, MaxMoves: 2}, "move budget -0.01: want a fraction of the arrivals from 0 to 1"},
		{DefragOptions{Budget: 1.5, MaxMoves: 2}, "move budget 1.5: want a fraction of the arrivals from 0 to 1"},
		{DefragOptions{Budget: math.NaN(), MaxMoves: 2}, "move budget NaN: want a fraction of the arrivals from 0 to 1"},
		{DefragOptions{Budget: 0.01}, "max moves 0: want at least 1 with a move budget"},
		{DefragOptions{Budget: 0.01, MaxMoves: 1, Consolidate: -1}, "consolidate -1: want the devices a move must free, 0 for none"},
		{DefragOptions{Budget: 0.01, MaxMoves: 1, Until: -5}, "moves until -5: want an arrived percent, 0 for no end"},
		{DefragOptions{Budget: 0.01, MaxMoves: 1, Delay: -1}, "move delay -1: want a number of arrivals, 0 for none"},
	} {
		err := tc.opts.Validate()
		if got := fmt.Sprint(err); tc.want == "" && err != nil || tc.want != "" && got != tc.want {
			t.Errorf("%+v: %v, want %q", tc.opts, err, tc.want)
		}
	}
}

// TestPlaceableElsewhereLeavesTheModel: judging whether two moved share
// pods have homes takes their room on the nodes found, one after the
// other, and must leave the capacity model as it was, also when both go to
// the same node (a replay of the default trace, seed 44, ended with the
// model 220 shares short of the allocator when it did not).
func TestPlaceableElsewhereLeavesTheModel(t *testing.T) {
	fleet := []NodeSpec{
		{Name: "x", MilliCPU: 8000, MemoryMiB: 8 << 10, GPUs: 1, Model: "T4"},
		{Name: "y", MilliCPU: 8000, MemoryMiB: 8 << 10, GPUs: 1, Model: "T4"},
	}
	s := &simulation{
		nodes:  make([]fwk.NodeInfo, len(fleet)),
		models: []string{"T4", "T4"},
		shares: newShareTracker(fleet),
		free:   []podRequest{{milliCPU: 2000, memory: 1 << 30}, {milliCPU: 8000, memory: 8 << 30, devices: 1}},
		slots:  []int{8, 10},
	}
	specs := []PodSpec{
		{Name: "p", MilliCPU: 3000, MemoryMiB: 1024, GPUs: 1, GPUMilli: 300},
		{Name: "q", MilliCPU: 3000, MemoryMiB: 1024, GPUs: 1, GPUMilli: 400},
	}
	d := newDefragger(DefragOptions{Budget: 1, MaxMoves: 2}, len(specs), len(fleet))
	for i := range specs {
		gpus, err := s.shares.place(0, &specs[i], -1)
		if err != nil {
			t.Fatal(err)
		}
		d.bind(i, &v1.Pod{}, &specs[i], 0, gpus)
	}
	usedBefore := slices.Clone(s.shares.used[1])
	freeBefore, slotsBefore := slices.Clone(s.free), slices.Clone(s.slots)
	if !d.placeableElsewhere(s, 0, []int{0, 1}) {
		t.Fatal("both pods fit y, one after the other; placeableElsewhere says they do not")
	}
	if !slices.Equal(s.shares.used[1], usedBefore) || !slices.EqualFunc(s.free, freeBefore, sameRoom) || !slices.Equal(s.slots, slotsBefore) {
		t.Errorf("the model changed: y's GPU used %v (was %v), free %v (was %v), slots %v (was %v)",
			s.shares.used[1], usedBefore, s.free, freeBefore, s.slots, slotsBefore)
	}
	specs[1].GPUMilli = 800
	if d.placeableElsewhere(s, 0, []int{0, 1}) {
		t.Error("300 and 800 shares fit one GPU, says placeableElsewhere")
	}
}

func sameRoom(a, b podRequest) bool {
	return a.milliCPU == b.milliCPU && a.memory == b.memory && a.devices == b.devices && a.share == b.share
}
