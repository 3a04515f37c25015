package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/klog/v2/ktesting"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
)

// manifestsConfig is the deployed profile, which the devicefit policy uses.
const manifestsConfig = "../../manifests/scheduler-config.yaml"

func policies(t *testing.T, names ...string) []Policy {
	t.Helper()
	pols, err := ResolvePolicies(names, manifestsConfig, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pols
}

func load(t *testing.T, nodesFile, podsFile string) ([]NodeSpec, []PodSpec) {
	t.Helper()
	nodes, err := LoadNodes(nodesFile)
	if err != nil {
		t.Fatal(err)
	}
	pods, err := LoadPods(podsFile)
	if err != nil {
		t.Fatal(err)
	}
	return nodes, pods
}

func run(t *testing.T, cfg Config) *Result {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	if cfg.Engine.Parallelism == 0 {
		cfg.Engine.Parallelism = 2
	}
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// exact replays the pods in file order without tuning.
var exact = ArrivalOptions{Tune: 0, Order: OrderTrace}

// TestEngineStrand: two 4-GPU nodes, two 1-GPU pods, then a 4-GPU job. The
// upstream default (LeastAllocated) spreads the small pods, one per node,
// and the job fits nowhere; MostAllocated and the devicefit profile pack
// them and the job runs.
func TestEngineStrand(t *testing.T) {
	nodes, pods := load(t, "testdata/strand.yaml", "testdata/strand.yaml")
	res := run(t, Config{Nodes: nodes, Pods: pods, Fractional: FractionalRoundUp, Arrival: exact,
		Policies: policies(t, PolicyDefault, PolicyMostAllocated, PolicyDeviceFit)})
	want := map[string][]string{
		PolicyDefault:       {"gpu-0", "gpu-1", ""},
		PolicyMostAllocated: {"gpu-0", "gpu-0", "gpu-1"},
		PolicyDeviceFit:     {"gpu-0", "gpu-0", "gpu-1"},
	}
	for _, p := range res.Policies {
		if diff := cmp.Diff(want[p.Name], p.Placements); diff != "" {
			t.Errorf("%s placements (-want,+got):\n%s", p.Name, diff)
		}
	}
	def, packed := res.Policies[0].Final, res.Policies[1].Final
	if def.FailedPods != 1 || def.AllocatedPct != 25 || def.UnallocatedPct != 75 {
		t.Errorf("default final %+v, want 1 failed pod and 25%% allocated", def)
	}
	if packed.FailedPods != 0 || packed.AllocatedPct != 75 {
		t.Errorf("mostallocated final %+v, want no failure and 75%% allocated", packed)
	}
	// Spread, each node has 3 free devices that the 4-GPU class (a third of
	// the device pods) cannot use: 2 × 3 × 1/3 = 2 of 8 devices stranded.
	if def.FragmentedPct != 25 {
		t.Errorf("default fragmented %.2f%%, want 25%%", def.FragmentedPct)
	}
	if p := res.Policies[0]; p.Selector != "affinity" || res.Policies[2].Selector != "annotation" {
		t.Errorf("selectors %q, %q: want affinity for default, annotation for devicefit", p.Selector, res.Policies[2].Selector)
	}
}

// TestEngineProducts: a model constraint holds under every policy, as node
// affinity (default, mostallocated) or as devicefit.io/products (devicefit),
// even though the tie-break alone would pick the first node.
func TestEngineProducts(t *testing.T) {
	const scenario = `nodes:
- {name: v100, cpu: "32", memory: 64Gi, gpus: 8, model: V100M32}
- {name: t4, cpu: "32", memory: 64Gi, gpus: 2, model: T4}
pods:
- {name: t4only, cpu: "1", memory: 1Gi, gpus: 1, products: [T4]}
- {name: picky, cpu: "1", memory: 1Gi, gpus: 1, products: [A100]}
- {name: any, cpu: "1", memory: 1Gi, gpus: 1}
`
	nodes, err := ReadNodesYAML("s.yaml", []byte(scenario))
	if err != nil {
		t.Fatal(err)
	}
	pods, err := ReadPodsYAML("s.yaml", []byte(scenario))
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, Config{Nodes: nodes, Pods: pods, Fractional: FractionalRoundUp, Arrival: exact,
		Policies: policies(t, PolicyDefault, PolicyMostAllocated, PolicyDeviceFit)})
	for _, p := range res.Policies {
		if p.Placements[0] != "t4" || p.Placements[1] != "" {
			t.Errorf("%s: placements %q, want the T4 pod on t4 and the A100 pod nowhere", p.Name, p.Placements)
		}
		if p.Final.FailedDevicePods != 1 {
			t.Errorf("%s: %d failed device pods, want 1", p.Name, p.Final.FailedDevicePods)
		}
	}
	if got := res.Policies[0].FailedBy; !cmp.Equal(got, map[string]int{"NodeAffinity": 1}) {
		t.Errorf("default failed by %v, want NodeAffinity", got)
	}
	if got := res.Policies[2].FailedBy; !cmp.Equal(got, map[string]int{"DeviceFit (PreFilter)": 1}) {
		t.Errorf("devicefit failed by %v, want DeviceFit at PreFilter", got)
	}
}

// TestEngineCPUPods: CPU-only pods take CPU and memory, which can leave a
// node's devices unusable, but count in no device figure but failures.
func TestEngineCPUPods(t *testing.T) {
	const scenario = `nodes:
- {name: g, cpu: "8", memory: 32Gi, gpus: 4, model: T4}
pods:
- {name: hog, cpu: "7", memory: 8Gi}
- {name: gpu, cpu: "2", memory: 1Gi, gpus: 1}
- {name: late, cpu: "2", memory: 1Gi}
`
	nodes, _ := ReadNodesYAML("s.yaml", []byte(scenario))
	pods, _ := ReadPodsYAML("s.yaml", []byte(scenario))
	res := run(t, Config{Nodes: nodes, Pods: pods, Fractional: FractionalRoundUp, Arrival: exact, Policies: policies(t, PolicyDefault)})
	p := res.Policies[0]
	if diff := cmp.Diff([]string{"g", "", ""}, p.Placements); diff != "" {
		t.Errorf("placements (-want,+got):\n%s", diff)
	}
	want := Point{ArrivedPct: 25, ArrivedExactPct: 25, AllocatedPct: 0, UnallocatedPct: 100, FragmentedPct: 100, FailedPods: 2, FailedDevicePods: 1, Pods: 3}
	if diff := cmp.Diff(want, p.Final); diff != "" {
		t.Errorf("final (-want,+got):\n%s", diff)
	}
	// Point 0 is the state before the GPU pod arrived: the hog already
	// strands all four devices.
	if pt := p.Points[0]; pt.Pods != 1 || pt.FragmentedPct != 100 || pt.ArrivedPct != 0 {
		t.Errorf("point 0 = %+v", pt)
	}
}

func TestNumFeasibleNodesToFind(t *testing.T) {
	tests := []struct {
		percent int32
		nodes   int
		want    int
	}{
		{0, 50, 50},
		{0, 1213, 497}, // adaptive: 50 - 1213/125 = 41%
		{0, 10000, 500},
		{30, 1000, 300},
		{5, 1000, 100},
		{100, 1213, 1213},
	}
	for _, tt := range tests {
		if got := numFeasibleNodesToFind(tt.percent, tt.nodes); got != tt.want {
			t.Errorf("numFeasibleNodesToFind(%d, %d) = %d, want %d", tt.percent, tt.nodes, got, tt.want)
		}
	}
}

// TestEnginePercentageOfNodesToScore: the default profile's adaptive
// percentage scores 100 of 200 nodes per pod, and the next pod's search
// starts where the last stopped, as upstream's does; --all-nodes scores all.
func TestEnginePercentageOfNodesToScore(t *testing.T) {
	nodes := make([]NodeSpec, 200)
	for i := range nodes {
		nodes[i] = NodeSpec{Name: fmt.Sprintf("n%03d", i), MilliCPU: 8000, MemoryMiB: 8192, GPUs: 1, Model: "T4"}
	}
	pods := []PodSpec{
		{Name: "a", MilliCPU: 1000, MemoryMiB: 1024, GPUs: 1, GPUMilli: 1000},
		{Name: "b", MilliCPU: 1000, MemoryMiB: 1024, GPUs: 1, GPUMilli: 1000},
		{Name: "c", MilliCPU: 1000, MemoryMiB: 1024, GPUs: 1, GPUMilli: 1000},
	}
	for _, tt := range []struct {
		allNodes bool
		want     []string
	}{
		{allNodes: false, want: []string{"n000", "n100", "n001"}},
		{allNodes: true, want: []string{"n000", "n001", "n002"}},
	} {
		res := run(t, Config{Nodes: nodes, Pods: pods, Fractional: FractionalRoundUp, Arrival: exact,
			Policies: policies(t, PolicyDefault), Engine: EngineOptions{AllNodes: tt.allNodes}})
		if diff := cmp.Diff(tt.want, res.Policies[0].Placements); diff != "" {
			t.Errorf("all nodes %v: placements (-want,+got):\n%s", tt.allNodes, diff)
		}
	}
}

// mixedConfig shuffles and tunes the mixed scenario: fractional pods, model
// constraints, CPU-only pods, three policies.
func mixedConfig(t *testing.T) Config {
	nodes, pods := load(t, "testdata/mixed.yaml", "testdata/mixed.yaml")
	return Config{Nodes: nodes, Pods: pods, NodesFile: "testdata/mixed.yaml", PodsFile: "testdata/mixed.yaml",
		Fractional: FractionalRoundUp, Arrival: ArrivalOptions{Tune: 1.6, Order: OrderShuffle, Seed: 3},
		Policies: policies(t, PolicyDefault, PolicyMostAllocated, PolicyDeviceFit)}
}

func jsonOf(t *testing.T, res *Result) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteJSON(&b, res); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestDeterminism: the same inputs and flags give byte-identical JSON, with
// any parallelism; the capacity pre-screen changes no placement.
func TestDeterminism(t *testing.T) {
	cfg := mixedConfig(t)
	first := run(t, cfg)
	firstJSON := jsonOf(t, first)
	cfg.Engine.Parallelism = 1
	if second := jsonOf(t, run(t, cfg)); !bytes.Equal(firstJSON, second) {
		t.Errorf("two runs differ:\n%s", cmp.Diff(string(firstJSON), string(second)))
	}
	cfg.Engine.Parallelism = 4
	cfg.Engine.NoPrescreen = true
	sameReplay(t, first, run(t, cfg), "--no-prescreen changed the replay")
	var failed int
	for _, p := range first.Policies {
		failed += p.Final.FailedPods
	}
	if failed == 0 {
		t.Error("the scenario fails no pod; it should, to cover the failure path")
	}
}

// sameReplay fails t with what when a and b differ in any policy's
// placements, points or final state.
func sameReplay(t *testing.T, a, b *Result, what string) {
	t.Helper()
	for i, p := range b.Policies {
		q := a.Policies[i]
		if !cmp.Equal(p.Placements, q.Placements) || !cmp.Equal(p.Points, q.Points) || p.Final != q.Final {
			t.Errorf("%s: %s:\n%s", p.Name, what, cmp.Diff(q.Placements, p.Placements))
		}
	}
}

// TestJSONShape checks the --json format of the issue: capacity_devices and
// per policy a name and a point at every whole arrived percent with the five
// figures; wall_seconds only with timing.
func TestJSONShape(t *testing.T) {
	cfg := mixedConfig(t)
	cfg.Policies = cfg.Policies[:1]
	for _, timing := range []bool{false, true} {
		cfg.Timing = timing
		var doc struct {
			CapacityDevices *int64 `json:"capacity_devices"`
			Policies        []struct {
				Name        string                       `json:"name"`
				WallSeconds *float64                     `json:"wall_seconds"`
				Points      []map[string]json.RawMessage `json:"points"`
				Final       map[string]float64           `json:"final"`
			} `json:"policies"`
		}
		if err := json.Unmarshal(jsonOf(t, run(t, cfg)), &doc); err != nil {
			t.Fatal(err)
		}
		if doc.CapacityDevices == nil || *doc.CapacityDevices != 32 {
			t.Fatalf("capacity_devices %v, want 32", doc.CapacityDevices)
		}
		if len(doc.Policies) != 1 || doc.Policies[0].Name != PolicyDefault {
			t.Fatalf("policies %+v", doc.Policies)
		}
		p := doc.Policies[0]
		if (p.WallSeconds != nil) != timing {
			t.Errorf("timing %v: wall_seconds %v", timing, p.WallSeconds)
		}
		final := p.Final["arrived_pct"]
		if final < 150 || final > 160 {
			t.Errorf("final arrived %.2f%%, want about 160%% (tune 1.6)", final)
		}
		if want := int(math.Floor(final)) + 1; len(p.Points) != want {
			t.Errorf("%d points, want %d (0..%d%%)", len(p.Points), want, want-1)
		}
		for i, pt := range p.Points {
			for _, k := range []string{"arrived_pct", "allocated_pct", "unallocated_pct", "fragmented_pct", "failed_pods"} {
				if _, ok := pt[k]; !ok {
					t.Fatalf("point %d lacks %s", i, k)
				}
			}
			var arrived, exact, alloc, unalloc float64
			_ = json.Unmarshal(pt["arrived_pct"], &arrived)
			_ = json.Unmarshal(pt["arrived_exact_pct"], &exact)
			_ = json.Unmarshal(pt["allocated_pct"], &alloc)
			_ = json.Unmarshal(pt["unallocated_pct"], &unalloc)
			if arrived != float64(i) || exact > arrived || math.Abs(alloc+unalloc-100) > 0.011 || alloc > exact+1e-9 {
				t.Errorf("point %d: arrived %v (exact %v), allocated %v, unallocated %v", i, arrived, exact, alloc, unalloc)
			}
		}
	}
}

func TestWriteSVG(t *testing.T) {
	res := run(t, mixedConfig(t))
	var b bytes.Buffer
	if err := WriteSVG(&b, res, "mixed <test> & co"); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&b)
	polylines := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			polylines++
		}
	}
	// Two panels, each with the ideal line and one line per policy.
	if want := 2 * (1 + len(res.Policies)); polylines != want {
		t.Errorf("%d polylines, want %d", polylines, want)
	}
}

func TestWriteTableAndSummary(t *testing.T) {
	res := run(t, mixedConfig(t))
	var table bytes.Buffer
	if err := WriteTable(&table, res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fleet mixed.yaml: 9 nodes, 32 nvidia.com/gpu", "tune 1.6, shuffle seed 3", "mostallocated", "end 1"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	// A summary over two seeds reads the JSON back.
	dir := t.TempDir()
	var results []*Result
	for _, seed := range []int64{3, 4} {
		cfg := mixedConfig(t)
		cfg.Arrival.Seed = seed
		path := filepath.Join(dir, fmt.Sprint(seed)+".json")
		if err := os.WriteFile(path, jsonOf(t, run(t, cfg)), 0o644); err != nil {
			t.Fatal(err)
		}
		f, _ := os.Open(path)
		r, err := ReadJSON(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, r)
	}
	var sum bytes.Buffer
	if err := WriteSummary(&sum, results); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(sum.String()), "\n")
	if len(lines) != 2+3 || !strings.HasPrefix(lines[2], "| mixed.yaml | default | 3,4 | ") || !strings.Contains(lines[2], " ± ") {
		t.Errorf("summary:\n%s", sum.String())
	}
	var failures bytes.Buffer
	if err := WriteFailures(&failures, res); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(failures.String(), "policy,index,arrived_pct,name,gpus,cpu_milli,memory_mib,products,rejected_by\n") {
		t.Errorf("failures:\n%s", failures.String())
	}
}

func TestResolvePolicies(t *testing.T) {
	dir := t.TempDir()
	two := filepath.Join(dir, "two.yaml")
	if err := os.WriteFile(two, []byte(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: a
- schedulerName: b
  percentageOfNodesToScore: 30
`), 0o644); err != nil {
		t.Fatal(err)
	}
	typo := filepath.Join(dir, "typo.yaml")
	if err := os.WriteFile(typo, []byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: a\n  plugin: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pols, err := ResolvePolicies([]string{PolicyMostAllocated}, manifestsConfig, []string{two})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pols {
		got = append(got, fmt.Sprintf("%s:%d", p.Name, p.PercentageOfNodesToScore))
	}
	if want := []string{"mostallocated:100", "two/a:0", "two/b:30"}; !slices.Equal(got, want) {
		t.Errorf("policies %v, want %v", got, want)
	}
	var strategy *schedconfig.ScoringStrategy
	for _, pc := range pols[0].Profile.PluginConfig {
		if a, ok := pc.Args.(*schedconfig.NodeResourcesFitArgs); ok {
			strategy = a.ScoringStrategy
		}
	}
	if strategy == nil || strategy.Type != schedconfig.MostAllocated ||
		!slices.Contains(strategy.Resources, schedconfig.ResourceSpec{Name: string(DeviceResource), Weight: MostAllocatedDeviceWeight}) {
		t.Errorf("mostallocated scoring strategy %+v", strategy)
	}
	for _, tt := range []struct {
		names []string
		files []string
		want  string
	}{
		{names: []string{"random"}, want: `unknown policy "random"`},
		{names: []string{PolicyDefault, PolicyDefault}, want: `policy "default" given twice`},
		{files: []string{typo}, want: `unknown field "profiles[0].plugin"`},
		{files: []string{filepath.Join(dir, "missing.yaml")}, want: "no such file"},
		{want: "no policy"},
	} {
		if _, err := ResolvePolicies(tt.names, manifestsConfig, tt.files); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ResolvePolicies(%v, %v) = %v, want an error containing %q", tt.names, tt.files, err, tt.want)
		}
	}
}

// TestContextCancel: a cancelled replay stops with the context's error.
func TestContextCancel(t *testing.T) {
	cfg := mixedConfig(t)
	cfg.Engine.Parallelism = 1
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Run(ctx, cfg); err == nil {
		t.Fatal("a cancelled replay succeeded")
	}
}
