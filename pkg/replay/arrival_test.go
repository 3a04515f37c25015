package replay

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/devicefit/devicefit/pkg/devices"
)

// testPods returns n pods named p000.. with 0, 1, 2, 4 or 8 devices in turn.
func testPods(n int) []PodSpec {
	sizes := []int64{0, 1, 2, 4, 8}
	pods := make([]PodSpec, n)
	for i := range pods {
		g := sizes[i%len(sizes)]
		pods[i] = PodSpec{Name: fmt.Sprintf("p%03d", i), MilliCPU: 1000, MemoryMiB: 1024, GPUs: g}
		if g > 0 {
			pods[i].GPUMilli = 1000
		}
	}
	return pods
}

func arrivalNames(seq []Arrival) []string {
	out := make([]string, len(seq))
	for i, a := range seq {
		out[i] = a.Name
	}
	return out
}

func demand(seq []Arrival) int64 {
	var n int64
	for _, a := range seq {
		n += a.Pod.GPUs
	}
	return n
}

func TestApplyFractional(t *testing.T) {
	pods := []PodSpec{
		{Name: "whole", GPUs: 1, GPUMilli: 1000},
		{Name: "share", GPUs: 1, GPUMilli: 460},
		{Name: "cpu"},
		{Name: "two", GPUs: 2, GPUMilli: 1000},
	}
	tests := []struct {
		mode      Fractional
		wantNames []string
		wantMilli []int64
		wantN     int
	}{
		{mode: FractionalRoundUp, wantNames: []string{"whole", "share", "cpu", "two"}, wantMilli: []int64{1000, 1000, 0, 1000}, wantN: 1},
		{mode: FractionalSkip, wantNames: []string{"whole", "cpu", "two"}, wantMilli: []int64{1000, 0, 1000}, wantN: 1},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode), func(t *testing.T) {
			got, n, err := ApplyFractional(pods, tt.mode)
			if err != nil {
				t.Fatal(err)
			}
			var gotNames []string
			var gotMilli []int64
			for _, p := range got {
				gotNames = append(gotNames, p.Name)
				gotMilli = append(gotMilli, p.GPUMilli)
			}
			if !slices.Equal(gotNames, tt.wantNames) || !slices.Equal(gotMilli, tt.wantMilli) || n != tt.wantN {
				t.Errorf("got %v %v %d, want %v %v %d", gotNames, gotMilli, n, tt.wantNames, tt.wantMilli, tt.wantN)
			}
		})
	}
	if pods[1].GPUMilli != 460 {
		t.Error("ApplyFractional modified its input")
	}
	if _, err := ParseFractional("half"); err == nil {
		t.Error("ParseFractional accepted half")
	}
}

func TestArrivals(t *testing.T) {
	pods := testPods(50) // 150 devices
	tests := []struct {
		name     string
		capacity int64
		opts     ArrivalOptions
		check    func(t *testing.T, seq []Arrival)
	}{
		{
			name: "tune 0 in trace order replays the file", capacity: 100,
			opts: ArrivalOptions{Tune: 0, Order: OrderTrace, Seed: 1},
			check: func(t *testing.T, seq []Arrival) {
				want := make([]string, len(pods))
				for i := range pods {
					want[i] = pods[i].Name
				}
				if diff := cmp.Diff(want, arrivalNames(seq)); diff != "" {
					t.Errorf("sequence (-want,+got):\n%s", diff)
				}
			},
		},
		{
			name: "shuffle is a permutation", capacity: 100,
			opts: ArrivalOptions{Tune: 0, Order: OrderShuffle, Seed: 42},
			check: func(t *testing.T, seq []Arrival) {
				got := arrivalNames(seq)
				if slices.IsSorted(got) {
					t.Error("shuffled sequence is sorted")
				}
				slices.Sort(got)
				if len(slices.Compact(got)) != len(pods) {
					t.Errorf("not a permutation: %v", got)
				}
			},
		},
		{
			name: "tune up adds copies up to the target", capacity: 100,
			opts: ArrivalOptions{Tune: 2, Order: OrderTrace, Seed: 7},
			check: func(t *testing.T, seq []Arrival) {
				if d := demand(seq); d > 200 || d < 192 {
					t.Errorf("demand %d, want in (192, 200]: tuning stops at the first draw that overshoots", d)
				}
				if !slices.Equal(arrivalNames(seq[:len(pods)]), arrivalNames(seqOf(pods))) {
					t.Error("the trace's own pods do not come first, in order")
				}
				for _, a := range seq[len(pods):] {
					if !strings.Contains(a.Name, "-tuned-") {
						t.Errorf("added copy named %q", a.Name)
					}
				}
				got := arrivalNames(seq)
				slices.Sort(got)
				if len(slices.Compact(got)) != len(seq) {
					t.Error("arrival names are not unique")
				}
			},
		},
		{
			name: "tune down removes pods", capacity: 100,
			opts: ArrivalOptions{Tune: 1, Order: OrderShuffle, Seed: 7},
			check: func(t *testing.T, seq []Arrival) {
				if d := demand(seq); d > 100 || d < 92 {
					t.Errorf("demand %d, want in (92, 100]", d)
				}
				if len(seq) >= len(pods) {
					t.Errorf("%d arrivals, want fewer than %d", len(seq), len(pods))
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seq, err := Arrivals(pods, tt.capacity, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, seq)
			again, err := Arrivals(pods, tt.capacity, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(arrivalNames(seq), arrivalNames(again)) {
				t.Error("the same seed gave another sequence")
			}
		})
	}
}

func seqOf(pods []PodSpec) []Arrival {
	seq := make([]Arrival, len(pods))
	for i := range pods {
		seq[i] = Arrival{Pod: &pods[i], Name: pods[i].Name}
	}
	return seq
}

func TestArrivalsSeeds(t *testing.T) {
	pods := testPods(40)
	a, _ := Arrivals(pods, 50, ArrivalOptions{Tune: 1.3, Order: OrderShuffle, Seed: 42})
	b, _ := Arrivals(pods, 50, ArrivalOptions{Tune: 1.3, Order: OrderShuffle, Seed: 43})
	if slices.Equal(arrivalNames(a), arrivalNames(b)) {
		t.Error("seeds 42 and 43 gave the same sequence")
	}
	// Pinned: the generator and the draws are ours, so a seed's sequence
	// never changes with the Go version.
	if got, want := strings.Join(arrivalNames(a[:5]), ","), "p022,p000,p033,p029,p006"; got != want {
		t.Errorf("seed 42 starts %s, want %s", got, want)
	}
}

func TestArrivalsErrors(t *testing.T) {
	cpuOnly := []PodSpec{{Name: "c", MilliCPU: 1}}
	tests := []struct {
		name     string
		pods     []PodSpec
		capacity int64
		opts     ArrivalOptions
		want     string
	}{
		{name: "no pods", capacity: 1, opts: ArrivalOptions{Order: OrderTrace}, want: "no pods"},
		{name: "negative tune", pods: testPods(3), capacity: 1, opts: ArrivalOptions{Tune: -1, Order: OrderTrace}, want: "--tune"},
		{name: "tune without devices", pods: cpuOnly, capacity: 8, opts: ArrivalOptions{Tune: 1.3, Order: OrderTrace}, want: "pods that request devices"},
		{name: "bad order", pods: testPods(3), capacity: 1, opts: ArrivalOptions{Order: "random"}, want: "unknown order"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Arrivals(tt.pods, tt.capacity, tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestRNGIntnUniform(t *testing.T) {
	r := newRNG(1)
	counts := make([]int, 7)
	for range 70000 {
		counts[r.intn(7)]++
	}
	for i, c := range counts {
		if c < 9400 || c > 10600 {
			t.Errorf("value %d drawn %d times of 70000, want about 10000", i, c)
		}
	}
}

func TestNewNode(t *testing.T) {
	gpu := NewNode(&NodeSpec{Name: "g", MilliCPU: 96000, MemoryMiB: 1024, GPUs: 8, Model: "V100M32"})
	wantLabels := map[string]string{
		v1.LabelHostname:         "g",
		"nvidia.com/gpu.present": "true",
		devices.LabelGPUProduct:  "V100M32",
		devices.LabelGPUCount:    "8",
	}
	if diff := cmp.Diff(wantLabels, gpu.Labels); diff != "" {
		t.Errorf("labels (-want,+got):\n%s", diff)
	}
	alloc := gpu.Status.Allocatable
	if alloc.Cpu().MilliValue() != 96000 || alloc.Memory().Value() != 1<<30 || alloc.Pods().Value() != PodsPerNode {
		t.Errorf("allocatable %v", alloc)
	}
	if q := alloc[DeviceResource]; q.Value() != 8 {
		t.Errorf("allocatable %s = %s, want 8", DeviceResource, q.String())
	}
	cpu := NewNode(&NodeSpec{Name: "c", MilliCPU: 1000, MemoryMiB: 1, Labels: map[string]string{"zone": "a"}})
	if diff := cmp.Diff(map[string]string{v1.LabelHostname: "c", "zone": "a"}, cpu.Labels); diff != "" {
		t.Errorf("cpu node labels (-want,+got):\n%s", diff)
	}
	if _, ok := cpu.Status.Allocatable[DeviceResource]; ok {
		t.Error("a node without devices advertises nvidia.com/gpu")
	}
}

func TestNewPod(t *testing.T) {
	spec := &PodSpec{Name: "p", MilliCPU: 4000, MemoryMiB: 1024, GPUs: 2, GPUMilli: 1000, Products: []string{"T4", "V100M32"}}
	a := &Arrival{Pod: spec, Name: "p-tuned-3"}
	tests := []struct {
		style          SelectorStyle
		wantAnnotation string
		wantAffinity   []string
	}{
		{style: SelectByAnnotation, wantAnnotation: "T4,V100M32"},
		{style: SelectByAffinity, wantAffinity: []string{"T4", "V100M32"}},
	}
	for _, tt := range tests {
		pod := NewPod(a, "uid-1", "sched", tt.style)
		if pod.Name != "p-tuned-3" || pod.UID != "uid-1" || pod.Spec.SchedulerName != "sched" {
			t.Errorf("meta %s %s %s", pod.Name, pod.UID, pod.Spec.SchedulerName)
		}
		res := pod.Spec.Containers[0].Resources
		want := v1.ResourceList{
			v1.ResourceCPU:    resource.MustParse("4"),
			v1.ResourceMemory: resource.MustParse("1Gi"),
			DeviceResource:    resource.MustParse("2"),
		}
		for name, q := range want {
			if r, l := res.Requests[name], res.Limits[name]; r.Cmp(q) != 0 || l.Cmp(q) != 0 {
				t.Errorf("%s: request %s limit %s, want both %s", name, r.String(), l.String(), q.String())
			}
		}
		if got := pod.Annotations[devices.AnnotationProducts]; got != tt.wantAnnotation {
			t.Errorf("style %d: annotation %q, want %q", tt.style, got, tt.wantAnnotation)
		}
		var gotAffinity []string
		if aff := pod.Spec.Affinity; aff != nil {
			req := aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0]
			if req.Key != devices.LabelGPUProduct || req.Operator != v1.NodeSelectorOpIn {
				t.Errorf("affinity %+v", req)
			}
			gotAffinity = req.Values
		}
		if !slices.Equal(gotAffinity, tt.wantAffinity) {
			t.Errorf("style %d: affinity values %v, want %v", tt.style, gotAffinity, tt.wantAffinity)
		}
		// The annotation must be what DeviceFit parses.
		if tt.style == SelectByAnnotation {
			sel, err := devices.ParseSelector(pod.Annotations)
			if err != nil || len(sel.Products) != 2 {
				t.Errorf("selector %+v, %v", sel, err)
			}
		}
	}
	cpuPod := NewPod(&Arrival{Pod: &PodSpec{Name: "c", MilliCPU: 500}, Name: "c"}, "u", "s", SelectByAffinity)
	if _, ok := cpuPod.Spec.Containers[0].Resources.Requests[DeviceResource]; ok {
		t.Error("a CPU-only pod requests devices")
	}
	if _, ok := cpuPod.Spec.Containers[0].Resources.Requests[v1.ResourceMemory]; ok {
		t.Error("a pod without memory requests memory")
	}
}

func TestWorkloadClasses(t *testing.T) {
	pods := []PodSpec{
		{Name: "a", MilliCPU: 1000, MemoryMiB: 1024, GPUs: 1, GPUMilli: 1000},
		{Name: "b", MilliCPU: 1000, MemoryMiB: 1024, GPUs: 1, GPUMilli: 1000},
		{Name: "c", MilliCPU: 1000, MemoryMiB: 1024, GPUs: 1, GPUMilli: 1000, Products: []string{"T4"}},
		{Name: "d", MilliCPU: 8000, MemoryMiB: 4096, GPUs: 8, GPUMilli: 1000},
		{Name: "cpu", MilliCPU: 8000},
	}
	classes, err := WorkloadClasses(pods)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		devices, cpu, mem int64
		products          int
		weight            float64
	}
	var g []got
	for _, c := range classes {
		g = append(g, got{c.Devices, c.MilliCPU, c.MemoryBytes, len(c.Selector.Products), c.Weight})
	}
	want := []got{{1, 1000, 1 << 30, 0, 2}, {1, 1000, 1 << 30, 1, 1}, {8, 8000, 4 << 30, 0, 1}}
	if diff := cmp.Diff(want, g, cmp.AllowUnexported(got{})); diff != "" {
		t.Errorf("classes (-want,+got):\n%s", diff)
	}
	// A fractional pod (kept by dra-shares) is a class of its share: a
	// capacity request of 500 shares, apart from whole-GPU pods.
	shares, err := WorkloadClasses([]PodSpec{{Name: "f", GPUs: 1, GPUMilli: 500}, {Name: "w", GPUs: 1, GPUMilli: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	if len(shares) != 2 || shares[0].Capacity.Key() != "shares=500" || !shares[1].Capacity.Empty() {
		t.Errorf("a half and a whole GPU: got %+v", shares)
	}
	if _, err := WorkloadClasses([]PodSpec{{Name: "z", GPUs: 1, GPUMilli: 0}}); err == nil {
		t.Error("a pod asking for 0 milli-GPU made a class")
	}
}

// TestArrivalsFGD pins OrderFGD to sequences FGD's simulator printed
// (hkust-adsl/kubernetes-scheduler-simulator 8f3d641, built with its own
// go.mod, run by scripts/generate_config_and_run.py with --shuffle-pod=true
// -tune 1.3 -tuneseed S; the "attempt to create pod" lines of its log) for
// these generated pods on 25 of the trace's nodes, 68 GPUs: 22 with 2 and 3
// with 8. Tuned up, the 8-GPU copies pass FGD's per-device check and
// overshoot; tuned down, its removals. On the published multigpu40 trace,
// seed 42, the same order gave FGD's 7435 arrivals and its first 1503 names.
func TestArrivalsFGD(t *testing.T) {
	fgdPods := func(n int) []PodSpec {
		sizes := []struct{ gpus, milli int64 }{{0, 0}, {1, 500}, {1, 1000}, {2, 1000}, {4, 1000}, {8, 1000}}
		pods := make([]PodSpec, n)
		for i := range pods {
			s := sizes[i%len(sizes)]
			pods[i] = PodSpec{Name: fmt.Sprintf("p%03d", i), MilliCPU: 1000, MemoryMiB: 1024, GPUs: s.gpus, GPUMilli: s.milli}
		}
		return pods
	}
	tests := []struct {
		name string
		pods int
		seed int64
		want string
	}{
		{"tuned up, seed 42", 24, 42, "p022,p002,p009,p014,p020,p018,p008,p005,p016,p012,p019,p023,p021,p003,p011,p010,p017,p006,p015,p007,p000,p004,p013,p001,p016-tuned-0,p005-tuned-1,p002-tuned-2,p007-tuned-3,p019-tuned-4,p023-tuned-5,p006-tuned-6,p014-tuned-7,p019-tuned-8,p018-tuned-9,p005-tuned-10"},
		{"tuned up, seed 7", 24, 7, "p003,p007,p019,p009,p004,p016,p013,p008,p021,p011,p012,p015,p001,p022,p017,p010,p000,p018,p006,p002,p014,p020,p023,p005,p005-tuned-0,p021-tuned-1,p007-tuned-2,p017-tuned-3,p013-tuned-4,p007-tuned-5,p012-tuned-6,p005-tuned-7"},
		{"tuned down, seed 42", 48, 42, "p039,p026,p019,p031,p038,p000,p011,p037,p020,p010,p017,p036,p032,p033,p012,p044,p041,p005,p045,p030,p029,p022,p040,p013,p046,p025,p043,p034,p016,p001,p028"},
		{"tuned down, seed 7", 48, 7, "p002,p034,p025,p020,p010,p032,p016,p007,p004,p046,p001,p018,p012,p013,p042,p033,p023,p028,p037,p024,p038,p009,p040,p008,p044,p003,p039,p027,p022,p043,p036,p030,p005,p045,p017,p000,p014,p015,p047"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seq, err := Arrivals(fgdPods(tt.pods), 68, ArrivalOptions{Tune: 1.3, Order: OrderFGD, Seed: tt.seed})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(strings.Split(tt.want, ","), arrivalNames(seq)); diff != "" {
				t.Errorf("not FGD's sequence (-FGD's,+got):\n%s", diff)
			}
		})
	}
}
