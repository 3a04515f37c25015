package replay

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestLoadNodesCSV(t *testing.T) {
	nodes, err := LoadNodes("testdata/nodes.csv")
	if err != nil {
		t.Fatal(err)
	}
	want := []NodeSpec{
		{Name: "fake-node-a", MilliCPU: 64000, MemoryMiB: 262144, GPUs: 8, Model: "V100M32", Source: "nodes.csv:2"},
		{Name: "fake-node-b", MilliCPU: 64000, MemoryMiB: 262144, GPUs: 8, Model: "V100M32", Source: "nodes.csv:3"},
		{Name: "fake-node-c", MilliCPU: 32000, MemoryMiB: 131072, GPUs: 2, Model: "T4", Source: "nodes.csv:4"},
		{Name: "fake-node-d", MilliCPU: 32000, MemoryMiB: 131072, GPUs: 2, Model: "T4", Source: "nodes.csv:5"},
		{Name: "fake-node-e", MilliCPU: 16000, MemoryMiB: 65536, Source: "nodes.csv:6"},
	}
	if diff := cmp.Diff(want, nodes); diff != "" {
		t.Errorf("nodes (-want,+got):\n%s", diff)
	}
	if got := Capacity(nodes); got != 20 {
		t.Errorf("capacity %d, want 20", got)
	}
}

func TestReadNodesCSVErrors(t *testing.T) {
	const header = "sn,cpu_milli,memory_mib,gpu,model\n"
	tests := []struct {
		name, in, want string
	}{
		{name: "empty", in: "", want: "n.csv:1: empty file: want a header line"},
		{name: "header only", in: header, want: "n.csv: no nodes"},
		{name: "wrong header", in: "sn,cpu,memory_mib,gpu,model\n", want: `n.csv:1: header: got "sn,cpu,memory_mib,gpu,model", want sn,cpu_milli,memory_mib,gpu,model`},
		{name: "not an integer", in: header + "n1,64000,1024x,8,V100M32\n", want: `n.csv:2:10: memory_mib: "1024x" is not an integer`},
		{name: "empty integer", in: header + "n1,,1024,8,V100M32\n", want: "n.csv:2:4: cpu_milli: empty; want an integer"},
		{name: "zero cpu", in: header + "n1,0,1024,8,V100M32\n", want: "n.csv:2:4: cpu_milli: 0 is out of range [1, 1099511627776]"},
		{name: "negative gpu", in: header + "n1,1000,1024,-1,V100M32\n", want: "n.csv:2:14: gpu: -1 is out of range [0, 1024]"},
		{name: "gpu without model", in: header + "n1,1000,1024,2,\n", want: "n.csv:2:16: model: empty; a node with 2 devices needs a model"},
		{name: "model without gpu", in: header + "n1,1000,1024,0,T4\n", want: `n.csv:2:16: model: model "T4" given for a node without devices`},
		{name: "bad model", in: header + "n1,1000,1024,1,T 4\n", want: `n.csv:2:16: model: "T 4" cannot be a label value`},
		{name: "bad name", in: header + "Node_1,1000,1024,0,\n", want: `n.csv:2:1: sn: "Node_1" is not a valid node name`},
		{name: "duplicate", in: header + "n1,1000,1024,0,\nn1,1000,1024,0,\n", want: `n.csv:3:1: sn: duplicate node "n1" (first on line 2)`},
		{name: "field count", in: header + "n1,1000,1024,0\n", want: "n.csv:2:1: want 5 fields as in the header"},
		{name: "bad quoting", in: header + "n1,\"1000,1024,0,\n", want: "n.csv:2:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadNodesCSV("n.csv", strings.NewReader(tt.in))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("got error %v, want one starting with %q", err, tt.want)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Errorf("error %T is not a *ParseError", err)
			}
		})
	}
}

func TestLoadPodsCSV(t *testing.T) {
	tests := []struct {
		file string
		want []PodSpec
	}{
		{
			file: "testdata/pods_long.csv",
			want: []PodSpec{
				{Name: "fake-pod-0", MilliCPU: 4000, MemoryMiB: 16384, GPUs: 1, GPUMilli: 1000},
				{Name: "fake-pod-1", MilliCPU: 2000, MemoryMiB: 8192, GPUs: 1, GPUMilli: 500, Products: []string{"T4"}},
				// Repeated models are dropped and the list sorted.
				{Name: "fake-pod-2", MilliCPU: 8000, MemoryMiB: 32768, GPUs: 2, GPUMilli: 1000, Products: []string{"T4", "V100M32"}},
				{Name: "fake-pod-3", MilliCPU: 1000, MemoryMiB: 2048},
				{Name: "fake-pod-4", MilliCPU: 16000, MemoryMiB: 65536, GPUs: 4, GPUMilli: 1000},
			},
		},
		{
			file: "testdata/pods_short.csv",
			want: []PodSpec{
				{Name: "fake-pod-0", MilliCPU: 4000, MemoryMiB: 16384, GPUs: 1, GPUMilli: 1000},
				{Name: "fake-pod-1", MilliCPU: 2000, MemoryMiB: 0, GPUs: 1, GPUMilli: 250},
				{Name: "fake-pod-2", MilliCPU: 8000, MemoryMiB: 32768, GPUs: 8, GPUMilli: 1000},
				{Name: "fake-pod-3", MilliCPU: 500, MemoryMiB: 1024},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			pods, err := LoadPods(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, pods, cmpopts.IgnoreFields(PodSpec{}, "Source")); diff != "" {
				t.Errorf("pods (-want,+got):\n%s", diff)
			}
			if pods[1].Source == "" || !strings.HasSuffix(pods[1].Source, ".csv:3") {
				t.Errorf("source %q, want <file>.csv:3", pods[1].Source)
			}
		})
	}
}

func TestReadPodsCSVErrors(t *testing.T) {
	const short = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
	const long = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
	tests := []struct {
		name, in, want string
	}{
		{name: "wrong header", in: "name,cpu_milli,memory_mib,num_gpu\n", want: `p.csv:1: header: got "name,cpu_milli,memory_mib,num_gpu", want name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time or name,cpu_milli,memory_mib,num_gpu,gpu_milli`},
		{name: "short row in long file", in: long + "p1,1000,1024,1,1000\n", want: "p.csv:2:1: want 11 fields as in the header"},
		{name: "gpu_milli above 1000", in: short + "p1,1000,1024,1,1001\n", want: "p.csv:2:16: gpu_milli: 1001 is out of range [0, 1000]"},
		{name: "share without device", in: short + "p1,1000,1024,0,500\n", want: "p.csv:2:16: gpu_milli: 500 for a pod without devices; want 0"},
		{name: "zero share", in: short + "p1,1000,1024,1,0\n", want: "p.csv:2:16: gpu_milli: 0 for a pod with one device; want 1..1000"},
		{name: "share of several devices", in: short + "p1,1000,1024,2,500\n", want: "p.csv:2:16: gpu_milli: 500 for a pod with 2 devices"},
		{name: "negative memory", in: short + "p1,1000,-1,1,1000\n", want: "p.csv:2:9: memory_mib: -1 is out of range"},
		{name: "empty model in spec", in: long + "p1,1000,1024,1,1000,T4||V100M32,LS,Running,1,2,3\n", want: "p.csv:2:21: gpu_spec: empty model at position 2"},
		{name: "spec on cpu pod", in: long + "p1,1000,1024,0,0,T4,LS,Running,1,2,3\n", want: "p.csv:2:18: gpu_spec: a pod without devices cannot select device models"},
		{name: "bad time", in: long + "p1,1000,1024,1,1000,,LS,Running,1,soon,3\n", want: `p.csv:2:35: deletion_time: "soon" is not an integer`},
		{name: "duplicate", in: short + "p1,1,1,0,0\np1,1,1,0,0\n", want: `p.csv:3:1: name: duplicate pod "p1" (first on line 2)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadPodsCSV("p.csv", strings.NewReader(tt.in))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("got error %v, want one starting with %q", err, tt.want)
			}
		})
	}
}

func TestLoadYAML(t *testing.T) {
	nodes, err := LoadNodes("testdata/mixed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 9 || nodes[0].Name != "v100-0" || nodes[8].Name != "cpu-1" {
		t.Fatalf("got %d nodes %q..%q, want 9 v100-0..cpu-1", len(nodes), nodes[0].Name, nodes[len(nodes)-1].Name)
	}
	if want := (NodeSpec{Name: "t4-0", MilliCPU: 32000, MemoryMiB: 131072, GPUs: 2, Model: "T4", Source: "mixed.yaml:11"}); !cmp.Equal(nodes[3], want) {
		t.Errorf("node 3: %s", cmp.Diff(want, nodes[3]))
	}
	pods, err := LoadPods("testdata/mixed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 26 {
		t.Fatalf("got %d pods, want 26", len(pods))
	}
	if got := pods[0]; got.Name != "share-0" || got.GPUMilli != 300 || !got.Fractional() {
		t.Errorf("pod 0 = %+v, want share-0 with a 300 milli share", got)
	}
	if got := pods[6]; got.Name != "one-0" || got.GPUMilli != 1000 || got.Fractional() {
		t.Errorf("pod 6 = %+v, want one-0 with gpuMilli defaulted to 1000", got)
	}
	if got := pods[14]; got.Name != "pair-0" || !cmp.Equal(got.Products, []string{"T4", "V100M32"}) {
		t.Errorf("pod 14 = %+v, want pair-0 accepting T4 and V100M32", got)
	}
	if got := pods[22]; got.Name != "cpu-3" || got.GPUs != 0 || got.GPUMilli != 0 {
		t.Errorf("pod 22 = %+v, want cpu-3 without devices", got)
	}
	if got := pods[25]; got.Name != "halft4-2" || !got.Fractional() || !cmp.Equal(got.Products, []string{"T4"}) {
		t.Errorf("pod 25 = %+v, want halft4-2, half a T4", got)
	}
}

func TestReadYAMLErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
		pods           bool
	}{
		{name: "unknown field", in: "nodes:\n- name: a\n  cpus: 4\n", want: "y.yaml:3: field cpus not found in type replay.yamlNode"},
		{name: "not yaml", in: "nodes: [\n", want: "y.yaml:"},
		{name: "wrong type", in: "nodes:\n- name: a\n  gpus: many\n", want: "y.yaml:3: cannot unmarshal !!str `many` into int64"},
		{name: "no nodes", in: "pods: []\n", want: "y.yaml: nodes: no nodes"},
		{name: "bad cpu", in: "nodes:\n- name: a\n  cpu: lots\n  memory: 1Gi\n", want: `y.yaml:2: nodes[0].cpu: "lots" is not a quantity`},
		{name: "memory not whole MiB", in: "nodes:\n- name: a\n  cpu: 1\n  memory: 1000k\n", want: "y.yaml:2: nodes[0].memory: 1000k is not a whole number of MiB"},
		{name: "count zero", in: "nodes:\n- name: a\n  count: 0\n  cpu: 1\n  memory: 1Gi\n", want: "y.yaml:2: nodes[0].count: count 0 is out of range"},
		{name: "gpus without model", in: "nodes:\n- name: a\n  cpu: 1\n  memory: 1Gi\n- name: b\n  cpu: 1\n  memory: 1Gi\n  gpus: 2\n", want: "y.yaml:5: nodes[1].model: empty; a node with 2 devices needs a model"},
		{name: "bad label", in: "nodes:\n- name: a\n  cpu: 1\n  memory: 1Gi\n  labels: {zone: \"a b\"}\n", want: `y.yaml:2: nodes[0].labels: value "a b" of "zone"`},
		{name: "duplicate expanded", in: "nodes:\n- name: a-0\n  cpu: 1\n  memory: 1Gi\n- name: a\n  count: 2\n  cpu: 1\n  memory: 1Gi\n", want: `y.yaml:5: nodes[1].name: duplicate node "a-0"`},
		{pods: true, name: "share of two", in: "pods:\n- name: p\n  cpu: 1\n  memory: 1Gi\n  gpus: 2\n  gpuMilli: 500\n", want: "y.yaml:2: pods[0].gpuMilli: 500 for a pod with 2 devices"},
		{pods: true, name: "products without devices", in: "pods:\n- name: p\n  cpu: 1\n  memory: 1Gi\n  products: [T4]\n", want: "y.yaml:2: pods[0].products: a pod without devices cannot select device models"},
		{pods: true, name: "glob product", in: "pods:\n- name: p\n  cpu: 1\n  memory: 1Gi\n  gpus: 1\n  products: [\"T*\"]\n", want: "y.yaml:2: pods[0].products: model \"T*\""},
		{pods: true, name: "two documents", in: "pods: []\n---\npods: []\n", want: "y.yaml: want one YAML document, found more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.pods {
				_, err = ReadPodsYAML("y.yaml", []byte(tt.in))
			} else {
				_, err = ReadNodesYAML("y.yaml", []byte(tt.in))
			}
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("got error %v, want one starting with %q", err, tt.want)
			}
		})
	}
}

func TestLoadUnknownExtension(t *testing.T) {
	if _, err := LoadPods("testdata/pods.json"); err == nil {
		t.Fatal("want an error for a missing file")
	}
	if _, err := LoadNodes("trace_test.go"); err == nil || !strings.Contains(err.Error(), `unknown file type ".go"`) {
		t.Fatalf("got %v, want an unknown file type error", err)
	}
}
