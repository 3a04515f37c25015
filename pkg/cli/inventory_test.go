package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/devicefit/devicefit/internal/nvdra"
	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/dra"
	"github.com/devicefit/devicefit/pkg/metrics"
)

const (
	gpu   = devices.NVIDIAGPU
	mig1g = v1.ResourceName("nvidia.com/mig-1g.10gb")
	h100  = "NVIDIA-H100-80GB-HBM3"
	l4    = "NVIDIA-L4"
)

func gpuNode(name, product, gpus string, labels ...string) *v1.Node {
	w := st.MakeNode().Name(name).Capacity(map[v1.ResourceName]string{
		v1.ResourceCPU: "64", v1.ResourceMemory: "512Gi", gpu: gpus,
	}).Label(devices.LabelGPUProduct, product)
	for i := 0; i+1 < len(labels); i += 2 {
		w = w.Label(labels[i], labels[i+1])
	}
	return w.Obj()
}

func pod(name, node string, res map[v1.ResourceName]string) *v1.Pod {
	return st.MakePod().Name(name).Namespace("ns").UID(name).Node(node).Res(res).Obj()
}

func gpus(n string) map[v1.ResourceName]string {
	return map[v1.ResourceName]string{v1.ResourceCPU: "1", gpu: n}
}

func resourceSet(t testing.TB) devices.ResourceSet {
	t.Helper()
	set, err := devices.NewResourceSet(devices.DefaultResourcePatterns())
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// fleet: two H100 nodes (one half used), an L4 node time-sliced 4 ways, a
// MIG node under the mixed strategy.
func fleet() ([]*v1.Node, []*v1.Pod) {
	mig := st.MakeNode().Name("mig").Capacity(map[v1.ResourceName]string{
		v1.ResourceCPU: "64", v1.ResourceMemory: "512Gi", mig1g: "7", gpu: "1",
	}).Label(devices.LabelMIGStrategy, "mixed").Label(devices.LabelGPUProduct, "NVIDIA-A100-SXM4-80GB").
		Label("nvidia.com/mig-1g.10gb.product", "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb").
		Label("nvidia.com/mig-1g.10gb.count", "7").Obj()
	nodes := []*v1.Node{
		gpuNode("h100-b", h100, "8", devices.LabelGPUCount, "8"),
		gpuNode("h100-a", h100, "8", devices.LabelGPUCount, "8"),
		gpuNode("l4", l4+"-SHARED", "16", devices.LabelGPUCount, "4", devices.LabelGPUReplicas, "4", "nvidia.com/gpu.sharing-strategy", "time-slicing"),
		mig,
	}
	pods := []*v1.Pod{
		pod("a", "h100-a", gpus("4")),
		pod("b", "l4", gpus("3")),
		pod("c", "mig", map[v1.ResourceName]string{mig1g: "2"}),
		pod("pending", "", gpus("8")),
	}
	done := pod("done", "h100-b", gpus("8"))
	done.Status.Phase = v1.PodSucceeded
	return nodes, append(pods, done)
}

func TestBuildInventoryByProduct(t *testing.T) {
	nodes, pods := fleet()
	inv := BuildInventory(nodes, pods, resourceSet(t), nil, nil, ByProduct)
	want := []InventoryRow{
		{Resource: "nvidia.com/gpu", Product: "NVIDIA-A100-SXM4-80GB", Nodes: 1, Allocatable: 1, Free: 1, MIGStrategy: "mixed"},
		{Resource: "nvidia.com/gpu", Product: h100, Nodes: 2, Allocatable: 16, Allocated: 4, Free: 12, Physical: 16},
		{Resource: "nvidia.com/gpu", Product: l4 + "-SHARED", Nodes: 1, Allocatable: 16, Allocated: 3, Free: 13, Replicas: 4, Physical: 4},
		{Resource: "nvidia.com/mig-1g.10gb", Product: "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb", Nodes: 1, Allocatable: 7, Allocated: 2, Free: 5, MIGStrategy: "mixed", Physical: 7},
	}
	if diff := cmp.Diff(want, inv.Rows); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	wantTotals := []InventoryRow{
		{Resource: "nvidia.com/gpu", Nodes: 4, Allocatable: 33, Allocated: 7, Free: 26, Physical: 20},
		{Resource: "nvidia.com/mig-1g.10gb", Nodes: 1, Allocatable: 7, Allocated: 2, Free: 5, Physical: 7},
	}
	if diff := cmp.Diff(wantTotals, inv.Totals); diff != "" {
		t.Errorf("totals (-want +got):\n%s", diff)
	}
}

func TestBuildInventoryByNode(t *testing.T) {
	nodes, pods := fleet()
	inv := BuildInventory(nodes, pods, resourceSet(t), nil, nil, ByNode)
	var got []string
	for _, r := range inv.Rows {
		got = append(got, fmt.Sprintf("%s %s %d/%d", r.Node, r.Resource, r.Allocated, r.Allocatable))
	}
	want := []string{
		"h100-a nvidia.com/gpu 4/8",
		"h100-b nvidia.com/gpu 0/8",
		"l4 nvidia.com/gpu 3/16",
		"mig nvidia.com/gpu 0/1",
		"mig nvidia.com/mig-1g.10gb 2/7",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
}

// TestInventoryIsTheGauges: on random fleets, the inventory by product
// counts what devicefit_devices does (metrics.Summarize over all nodes at
// once), stranded included, whatever the order of the nodes.
func TestInventoryIsTheGauges(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	w, err := devices.NewWorkload([]devices.Class{
		{Resource: gpu, Devices: 1, MilliCPU: 1000, Weight: 3},
		{Resource: gpu, Devices: 4, MilliCPU: 8000, Weight: 1},
		{Resource: gpu, Devices: 2, Weight: 1, Selector: mustSelector(t, h100)},
	})
	if err != nil {
		t.Fatal(err)
	}
	set := resourceSet(t)
	for round := range 20 {
		var nodes []*v1.Node
		var pods []*v1.Pod
		for i := range 1 + rng.IntN(30) {
			product := []string{h100, l4, "Tesla-T4"}[rng.IntN(3)]
			name := fmt.Sprintf("n%d", i)
			nodes = append(nodes, gpuNode(name, product, fmt.Sprint(1+rng.IntN(8))))
			for j := range rng.IntN(3) {
				pods = append(pods, pod(fmt.Sprintf("p%d-%d", i, j), name, map[v1.ResourceName]string{
					v1.ResourceCPU: fmt.Sprint(rng.IntN(40)), gpu: fmt.Sprint(rng.IntN(3)),
				}))
			}
		}
		rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
		inv := BuildInventory(nodes, pods, set, w, nil, ByProduct)
		gauges := metrics.Summarize(nodes, pods, set, w)
		if len(inv.Rows) != len(gauges.Devices) {
			t.Fatalf("round %d: %d rows, %d gauge keys", round, len(inv.Rows), len(gauges.Devices))
		}
		for _, r := range inv.Rows {
			c := gauges.Devices[metrics.DeviceKey{Resource: v1.ResourceName(r.Resource), Product: r.Product}]
			if c == nil || c.Allocatable != r.Allocatable || c.Allocated != r.Allocated || c.Free != r.Free ||
				math.Abs(c.Stranded-r.Stranded) > 1e-9 {
				t.Errorf("round %d, %s %s: inventory %+v, gauges %+v", round, r.Resource, r.Product, r, c)
			}
		}
	}
}

func mustSelector(t *testing.T, products string) devices.Selector {
	t.Helper()
	s, err := devices.ParseSelector(map[string]string{devices.AnnotationProducts: products})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPrintInventory(t *testing.T) {
	nodes, pods := fleet()
	inv := BuildInventory(nodes, pods, resourceSet(t), nil, nil, ByProduct)
	tests := []struct {
		output string
		want   []string
		absent []string
	}{
		{output: "", want: []string{"RESOURCE", "STRANDED", "NVIDIA-H100-80GB-HBM3", "(total)"}, absent: []string{"REPLICAS"}},
		{output: "wide", want: []string{"REPLICAS", "MIG", "mixed"}},
		{output: "json", want: []string{`"apiVersion": "devicefit.io/v1alpha1"`, `"kind": "DeviceInventory"`, `"allocatable": 16`}},
		{output: "yaml", want: []string{"kind: DeviceInventory", "product: NVIDIA-L4-SHARED"}},
		{output: "jsonpath={.totals[0].free}", want: []string{"26"}},
	}
	for _, tt := range tests {
		t.Run(tt.output, func(t *testing.T) {
			p := NewPrinter()
			*p.Flags.OutputFormat = tt.output
			if err := p.Validate(); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := p.Print(&out, InventoryTable(inv), "DeviceInventory", inv); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(out.String(), a) {
					t.Errorf("output has %q:\n%s", a, out.String())
				}
			}
		})
	}
	// JSON round-trips to the same report.
	p := NewPrinter()
	*p.Flags.OutputFormat = "json"
	var out bytes.Buffer
	if err := p.Print(&out, InventoryTable(inv), "DeviceInventory", inv); err != nil {
		t.Fatal(err)
	}
	var back Inventory
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(inv, back); diff != "" {
		t.Errorf("JSON round trip (-printed +read):\n%s", diff)
	}
}

func TestPrinterRejectsUnknownOutput(t *testing.T) {
	p := NewPrinter()
	*p.Flags.OutputFormat = "xml"
	err := p.Validate()
	if err == nil || !strings.Contains(err.Error(), "-o xml") || !strings.Contains(err.Error(), "table, wide") {
		t.Errorf("want an error naming -o xml and the allowed formats, got %v", err)
	}
}

// TestBuildInventoryWithDRA: the DRA entries of the objects the API server
// holds (DRAEntries over slices, classes and claims) join the device-plugin
// rows under the class's extended resource name and the devices' product.
func TestBuildInventoryWithDRA(t *testing.T) {
	objects := &dra.Objects{
		Slices:  []*resourceapi.ResourceSlice{nvdra.NodeSlice("dra-0", nvdra.GPUs(0, 8, "NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", "80Gi")...)},
		Classes: []*resourceapi.DeviceClass{nvdra.Class("gpu.nvidia.com", nvdra.WholeGPUs, "nvidia.com/gpu")},
		Claims:  []*resourceapi.ResourceClaim{nvdra.Allocated("ns", "held", "dra-0/gpu-0", "dra-0/gpu-1")},
	}
	entries, err := DRAEntries(objects)
	if err != nil {
		t.Fatal(err)
	}
	nodes, pods := fleet()
	draNode := &v1.Node{}
	draNode.Name = "dra-0"
	inv := BuildInventory(append(nodes, draNode), pods, resourceSet(t), nil, entries, ByProduct)
	var h100Row *InventoryRow
	for i := range inv.Rows {
		if inv.Rows[i].Product == h100 {
			h100Row = &inv.Rows[i]
		}
	}
	want := InventoryRow{Resource: "nvidia.com/gpu", Product: h100, Nodes: 3, Allocatable: 24, Allocated: 6, Free: 18, Physical: 16}
	if h100Row == nil || *h100Row != want {
		t.Errorf("H100 row with the DRA node: got %+v, want %+v", h100Row, want)
	}
}
