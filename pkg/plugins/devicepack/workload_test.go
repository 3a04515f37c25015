package devicepack

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/devicefit/devicefit/pkg/apis/config"
	"github.com/devicefit/devicefit/pkg/devices"
)

func TestRoundUp6(t *testing.T) {
	// 3152m is 3200m (three bits made it 3584m), 41560 MiB 41984 MiB
	// (49152), 12000m 12032m (12288): never more than 1/32 over.
	for in, want := range map[int64]int64{0: 0, 63: 63, 64: 64, 65: 66, 100: 100, 129: 132, 1000: 1008, 3152: 3200, 4000: 4032, 12000: 12032, 41560: 41984, 88000: 88064, 12288: 12288} {
		if got := roundUp6(in); got != want {
			t.Errorf("roundUp6(%d) = %d, want %d", in, got, want)
		}
		if got := roundUp6(in); got < in || in > 64 && float64(got-in) > float64(in)/32 {
			t.Errorf("roundUp6(%d) = %d: below it or more than 1/32 over", in, got)
		}
	}
}

// weights returns the snapshot's class weights by device count.
func weightsByDevices(t *testing.T, w *workload) map[int64]float64 {
	t.Helper()
	wl, err := w.snapshot()
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]float64{}
	for _, c := range wl.Classes() {
		out[c.Devices] += math.Round(c.Weight*1000) / 1000
	}
	return out
}

func TestObservedWorkload(t *testing.T) {
	w, err := newWorkload(config.WorkloadSpec{
		Mode: config.WorkloadObserved, HalfLifePods: 2, PriorPods: 1,
		Classes: []config.WorkloadClass{{Resource: string(gpu), Devices: 8, Weight: 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	demand := func(n int64) devices.Demand { return devices.Demand{{Name: gpu, Count: n}} }
	// Only the prior so far.
	if diff := cmp.Diff(map[int64]float64{8: 1}, weightsByDevices(t, w)); diff != "" {
		t.Errorf("prior (-want,+got):\n%s", diff)
	}
	// Weights: prior 1; obs #0 weight 2^(0/2) = 1; obs #1 2^(1/2) ≈ 1.414.
	w.observe("a", demand(1), nil, 1000, 1<<30, "", devices.Selector{})
	w.observe("a", demand(1), nil, 1000, 1<<30, "", devices.Selector{}) // a retry: ignored
	w.observe("b", demand(2), nil, 1000, 1<<30, "", devices.Selector{})
	total := 1 + 1 + math.Sqrt2
	want := map[int64]float64{
		8: math.Round(1/total*1000) / 1000,
		1: math.Round(1/total*1000) / 1000,
		2: math.Round(math.Sqrt2/total*1000) / 1000,
	}
	if diff := cmp.Diff(want, weightsByDevices(t, w)); diff != "" {
		t.Errorf("after two pods (-want,+got):\n%s", diff)
	}
}

func TestStaticWorkloadIgnoresPods(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pl := newPlugin(t, staticArgs(t, gpuClass(4, 1)))
	if _, s := pl.PreFilter(ctx, framework.NewCycleState(), gpuPod("p", "1"), nil); !s.IsSkip() {
		t.Fatalf("PreFilter: %v, want Skip", s)
	}
	if diff := cmp.Diff(map[int64]float64{4: 1}, weightsByDevices(t, pl.workload)); diff != "" {
		t.Errorf("static workload changed (-want,+got):\n%s", diff)
	}
}

func TestPreFilterObserves(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	args := defaultArgs(t)
	args.Workload.PriorPods = 0
	pl := newPlugin(t, args)
	for _, p := range []*v1.Pod{gpuPod("a", "2"), gpuPod("b", "2"), gpuPod("c", "8")} {
		if _, s := pl.PreFilter(ctx, framework.NewCycleState(), p, nil); !s.IsSkip() {
			t.Fatalf("PreFilter(%s): %v, want Skip", p.Name, s)
		}
	}
	got := weightsByDevices(t, pl.workload)
	if len(got) != 2 || got[2] <= got[8] {
		t.Errorf("want two classes with 2-GPU jobs heavier than 8-GPU jobs, got %v", got)
	}
}

func TestSnapshotKeepsHeaviestClasses(t *testing.T) {
	w, err := newWorkload(config.WorkloadSpec{Mode: config.WorkloadObserved, HalfLifePods: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	// 300 distinct classes (by device count), class i observed i+1 times.
	const n = 300
	for i := int64(0); i < n; i++ {
		for j := int64(0); j <= i; j++ {
			uid := string(rune('A'+i)) + string(rune('A'+j))
			w.observe(uid, devices.Demand{{Name: gpu, Count: i + 1}}, nil, 0, 0, "", devices.Selector{})
		}
	}
	wl, err := w.snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(wl.Classes()); n != maxClasses {
		t.Fatalf("kept %d classes, want %d", n, maxClasses)
	}
	// The lightest kept class is the 45th (300 - 256 + 1 devices).
	for _, c := range wl.Classes() {
		if c.Devices < n-maxClasses+1 {
			t.Errorf("kept a light class: %d devices", c.Devices)
		}
	}
}

// TestObservedClassesKeyOnEverySelector: two 2-GPU jobs, one asking for 60Gi
// of device memory and one for the ampere family, accept different nodes, so
// they are two classes, each with its own selector; a static class with a
// product list and a pod with the same list are one.
func TestObservedClassesKeyOnEverySelector(t *testing.T) {
	w, err := newWorkload(config.WorkloadSpec{
		Mode: config.WorkloadObserved, HalfLifePods: 1000, PriorPods: 1,
		Classes: []config.WorkloadClass{{Resource: string(gpu), Devices: 2, MilliCPU: 1000, MemoryMiB: 1024, Products: "H100*", Weight: 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	observe := func(uid string, annotations map[string]string) {
		t.Helper()
		sel, err := devices.ParseSelector(annotations)
		if err != nil {
			t.Fatal(err)
		}
		w.observe(uid, devices.Demand{{Name: gpu, Count: 2}}, nil, 1000, 1<<30, selectorKey(annotations), sel)
	}
	observe("bigmem", map[string]string{devices.AnnotationMinMemory: "60Gi"})
	observe("ampere", map[string]string{devices.AnnotationFamilies: "ampere"})
	observe("h100", map[string]string{devices.AnnotationProducts: "H100*"})
	wl, err := w.snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range wl.Classes() {
		got = append(got, fmt.Sprintf("min-memory %d MiB, families %v, products %d", c.Selector.MinMemoryMiB, c.Selector.Families, len(c.Selector.Products)))
	}
	sort.Strings(got)
	want := []string{
		"min-memory 0 MiB, families [], products 1",
		"min-memory 0 MiB, families [ampere], products 0",
		"min-memory 61440 MiB, families [], products 0",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("classes (-want,+got):\n%s", diff)
	}
}

// TestSnapshotKeepsRareJobTypes: a job type split by CPU into many light
// classes, as the default Alibaba trace's 2-GPU jobs are, stays in the
// distribution beside a heavy tail of 1-GPU classes.
func TestSnapshotKeepsRareJobTypes(t *testing.T) {
	w, err := newWorkload(config.WorkloadSpec{Mode: config.WorkloadObserved, HalfLifePods: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	uid := 0
	observe := func(devs, milliCPU int64, times int) {
		for range times {
			uid++
			w.observe(fmt.Sprint(uid), devices.Demand{{Name: gpu, Count: devs}}, nil, milliCPU, 0, "", devices.Selector{})
		}
	}
	// 120 classes of 1-GPU jobs (by CPU), three jobs each; 2-GPU jobs in
	// 8 classes of one job each.
	for c := range int64(120) {
		observe(1, 1000*(c+1), 3)
	}
	for c := range int64(8) {
		observe(2, 1000*(c+1), 1)
	}
	wl, err := w.snapshot()
	if err != nil {
		t.Fatal(err)
	}
	twoGPU := 0
	for _, c := range wl.Classes() {
		if c.Devices == 2 {
			twoGPU++
		}
	}
	if twoGPU != 8 {
		t.Errorf("%d of the 8 classes of 2-GPU jobs kept among %d classes", twoGPU, len(wl.Classes()))
	}
}

// TestObservedClassesStayBounded: a scheduler that runs for months sees ever
// new pod shapes. 20000 device pods of 5000 shapes (device counts: each a
// class) and one shape seen all along, every other pod: the class map
// never holds more than maxTracked, the shape seen all along stays, and
// the snapshot still holds maxClasses classes.
func TestObservedClassesStayBounded(t *testing.T) {
	w, err := newWorkload(config.WorkloadSpec{Mode: config.WorkloadObserved, HalfLifePods: 2000})
	if err != nil {
		t.Fatal(err)
	}
	most := 0
	for i := range 20000 {
		count := int64(2 + i%5000)
		if i%2 == 0 {
			count = 1 // the shape seen all along
		}
		w.observe(fmt.Sprint(i), devices.Demand{{Name: gpu, Count: count}}, nil, 7000, 0, "", devices.Selector{})
		most = max(most, len(w.classes))
	}
	if most > maxTracked {
		t.Errorf("the class map held %d classes, want at most %d", most, maxTracked)
	}
	if most <= keepTracked {
		t.Fatalf("the class map held at most %d classes: the test never made it prune", most)
	}
	if _, ok := w.classes[classOf(devices.Demand{{Name: gpu, Count: 1}}, 7000, 0, "")]; !ok {
		t.Error("the shape seen all along was pruned")
	}
	wl, err := w.snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(wl.Classes()); n != maxClasses {
		t.Errorf("snapshot has %d classes, want %d", n, maxClasses)
	}
}

// TestSeenSet: a pod is counted once while it is among the last max to
// max*2 pods seen, and the two generations bound what is kept.
func TestSeenSet(t *testing.T) {
	s := newSeenSet(4)
	for i := range 4 {
		if !s.insert("uid-" + strconv.Itoa(i)) {
			t.Fatalf("uid-%d: not new", i)
		}
	}
	if s.insert("uid-0") {
		t.Error("uid-0 counted twice")
	}
	for i := 4; i < 8; i++ {
		s.insert("uid-" + strconv.Itoa(i))
	}
	// uid-0..3 are the old generation now, uid-4..7 the current one.
	if s.insert("uid-3") || s.insert("uid-7") {
		t.Error("a pod of either generation counted twice")
	}
	s.insert("uid-8") // a new generation: uid-0..3 are forgotten
	if !s.insert("uid-0") {
		t.Error("uid-0 remembered past two generations")
	}
	if n := len(s.cur) + len(s.old); n > 2*4 {
		t.Errorf("%d hashes kept, bound 8", n)
	}
}
