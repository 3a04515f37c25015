package replay

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The own YAML format: one document with a "nodes" list, a "pods" list or
// both (so one file can describe a whole scenario). Unknown fields are
// errors. cpu and memory are Kubernetes quantities ("8", "500m", "32Gi").
//
//	nodes:
//	- name: v100          # with count > 1: v100-0, v100-1, ...
//	  count: 2            # optional, default 1
//	  cpu: "96"
//	  memory: 384Gi       # whole MiB
//	  gpus: 8             # optional, default 0
//	  model: V100M32      # nvidia.com/gpu.product; required exactly when gpus > 0
//	  labels: {zone: a}   # optional extra node labels
//	pods:
//	- name: train         # with count > 1: train-0, train-1, ...
//	  count: 3
//	  cpu: "8"
//	  memory: 32Gi
//	  gpus: 4             # optional, default 0
//	  gpuMilli: 1000      # optional: share of one device (gpus: 1 only); default 1000
//	  products: [V100M16, V100M32]   # optional, as the trace's gpu_spec
//
// Entries keep their order; a count expands in place.
type yamlFile struct {
	Nodes []yamlNode `yaml:"nodes"`
	Pods  []yamlPod  `yaml:"pods"`
}

// omitempty only shapes what WriteClusterYAML writes; reading is the same.
type yamlNode struct {
	Name   string            `yaml:"name"`
	Count  *int64            `yaml:"count,omitempty"`
	CPU    string            `yaml:"cpu"`
	Memory string            `yaml:"memory"`
	GPUs   int64             `yaml:"gpus,omitempty"`
	Model  string            `yaml:"model,omitempty"`
	Labels map[string]string `yaml:"labels,omitempty"`
}

type yamlPod struct {
	Name     string   `yaml:"name"`
	Count    *int64   `yaml:"count,omitempty"`
	CPU      string   `yaml:"cpu"`
	Memory   string   `yaml:"memory"`
	GPUs     int64    `yaml:"gpus,omitempty"`
	GPUMilli *int64   `yaml:"gpuMilli,omitempty"`
	Products []string `yaml:"products,omitempty"`
}

const maxCount = 100000

var yamlLineRE = regexp.MustCompile(`^line (\d+): (.*)$`)

// decodeYAML decodes strictly and returns, for each list, the line of
// every entry.
func decodeYAML(name string, data []byte) (*yamlFile, map[string][]int, error) {
	var f yamlFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		if err == io.EOF {
			return nil, nil, &ParseError{File: name, Problem: "empty document"}
		}
		return nil, nil, yamlError(name, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		return nil, nil, &ParseError{File: name, Problem: "want one YAML document, found more"}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, nil, yamlError(name, err)
	}
	lines := map[string][]int{}
	if len(root.Content) == 1 && root.Content[0].Kind == yaml.MappingNode {
		m := root.Content[0]
		for i := 0; i+1 < len(m.Content); i += 2 {
			for _, item := range m.Content[i+1].Content {
				lines[m.Content[i].Value] = append(lines[m.Content[i].Value], item.Line)
			}
		}
	}
	return &f, lines, nil
}

// yamlError turns yaml.v3's "line N: problem" messages into ParseErrors.
func yamlError(name string, err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		if m := yamlLineRE.FindStringSubmatch(te.Errors[0]); m != nil {
			line, _ := strconv.Atoi(m[1])
			return &ParseError{File: name, Line: line, Problem: m[2]}
		}
		return &ParseError{File: name, Problem: te.Errors[0]}
	}
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &ParseError{File: name, Line: line, Problem: m[2]}
	}
	return &ParseError{File: name, Problem: msg}
}

// expand returns the names of an entry repeated count times.
func expand(name string, count *int64) ([]string, string) {
	n := int64(1)
	if count != nil {
		n = *count
	}
	if n < 1 || n > maxCount {
		return nil, fmt.Sprintf("count %d is out of range [1, %d]", n, maxCount)
	}
	if n == 1 && count == nil {
		return []string{name}, ""
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", name, i)
	}
	return names, ""
}

func quantity(s string, what string) (resource.Quantity, string) {
	if s == "" {
		return resource.Quantity{}, "missing; want a quantity"
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return q, fmt.Sprintf("%q is not a quantity", s)
	}
	if q.Sign() < 0 {
		return q, fmt.Sprintf("%s must not be negative", what)
	}
	return q, ""
}

func milliCPU(s string) (int64, string) {
	q, problem := quantity(s, "cpu")
	if problem != "" {
		return 0, problem
	}
	return q.MilliValue(), ""
}

func memoryMiB(s string) (int64, string) {
	q, problem := quantity(s, "memory")
	if problem != "" {
		return 0, problem
	}
	b := q.Value()
	if b%(1<<20) != 0 {
		return 0, fmt.Sprintf("%s is not a whole number of MiB", s)
	}
	return b >> 20, ""
}

// ReadNodesYAML reads the nodes of an own-format YAML file.
func ReadNodesYAML(name string, data []byte) ([]NodeSpec, error) {
	f, lines, err := decodeYAML(name, data)
	if err != nil {
		return nil, err
	}
	var nodes []NodeSpec
	seen := map[string]bool{}
	for i, y := range f.Nodes {
		line := lines["nodes"][i]
		fail := func(field, format string, args ...any) error {
			return &ParseError{File: name, Line: line, Field: fmt.Sprintf("nodes[%d].%s", i, field), Problem: fmt.Sprintf(format, args...)}
		}
		names, problem := expand(y.Name, y.Count)
		if problem != "" {
			return nil, fail("count", "%s", problem)
		}
		base := NodeSpec{GPUs: y.GPUs, Model: y.Model, Labels: y.Labels}
		if base.MilliCPU, problem = milliCPU(y.CPU); problem != "" {
			return nil, fail("cpu", "%s", problem)
		}
		if base.MilliCPU == 0 {
			return nil, fail("cpu", "must be positive")
		}
		if base.MemoryMiB, problem = memoryMiB(y.Memory); problem != "" {
			return nil, fail("memory", "%s", problem)
		}
		if base.MemoryMiB == 0 {
			return nil, fail("memory", "must be positive")
		}
		if y.GPUs < 0 || y.GPUs > maxDevicesPerPod {
			return nil, fail("gpus", "%d is out of range [0, %d]", y.GPUs, maxDevicesPerPod)
		}
		if problem := checkModel(y.GPUs, y.Model); problem != "" {
			return nil, fail("model", "%s", problem)
		}
		for k, v := range y.Labels {
			if errs := validation.IsQualifiedName(k); len(errs) > 0 {
				return nil, fail("labels", "key %q: %s", k, strings.Join(errs, "; "))
			}
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				return nil, fail("labels", "value %q of %q: %s", v, k, strings.Join(errs, "; "))
			}
		}
		for _, n := range names {
			if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
				return nil, fail("name", "%q is not a valid node name: %s", n, strings.Join(errs, "; "))
			}
			if seen[n] {
				return nil, fail("name", "duplicate node %q", n)
			}
			seen[n] = true
			node := base
			node.Name = n
			node.Source = fmt.Sprintf("%s:%d", filepath.Base(name), line)
			nodes = append(nodes, node)
		}
	}
	if len(nodes) == 0 {
		return nil, &ParseError{File: name, Field: "nodes", Problem: "no nodes"}
	}
	return nodes, nil
}

// ReadPodsYAML reads the pods of an own-format YAML file.
func ReadPodsYAML(name string, data []byte) ([]PodSpec, error) {
	f, lines, err := decodeYAML(name, data)
	if err != nil {
		return nil, err
	}
	var pods []PodSpec
	seen := map[string]bool{}
	for i, y := range f.Pods {
		line := lines["pods"][i]
		fail := func(field, format string, args ...any) error {
			return &ParseError{File: name, Line: line, Field: fmt.Sprintf("pods[%d].%s", i, field), Problem: fmt.Sprintf(format, args...)}
		}
		names, problem := expand(y.Name, y.Count)
		if problem != "" {
			return nil, fail("count", "%s", problem)
		}
		base := PodSpec{GPUs: y.GPUs}
		if base.MilliCPU, problem = milliCPU(y.CPU); problem != "" {
			return nil, fail("cpu", "%s", problem)
		}
		if base.MemoryMiB, problem = memoryMiB(y.Memory); problem != "" {
			return nil, fail("memory", "%s", problem)
		}
		if y.GPUs < 0 || y.GPUs > maxDevicesPerPod {
			return nil, fail("gpus", "%d is out of range [0, %d]", y.GPUs, maxDevicesPerPod)
		}
		switch {
		case y.GPUMilli != nil:
			base.GPUMilli = *y.GPUMilli
		case y.GPUs > 0:
			base.GPUMilli = 1000
		}
		if base.GPUMilli < 0 || base.GPUMilli > 1000 {
			return nil, fail("gpuMilli", "%d is out of range [0, 1000]", base.GPUMilli)
		}
		if problem := checkGPUMilli(base.GPUs, base.GPUMilli); problem != "" {
			return nil, fail("gpuMilli", "%s", problem)
		}
		if len(y.Products) > 0 {
			if y.GPUs == 0 {
				return nil, fail("products", "a pod without devices cannot select device models")
			}
			if base.Products, err = normaliseProducts(y.Products); err != nil {
				return nil, fail("products", "%v", err)
			}
		}
		for _, n := range names {
			if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
				return nil, fail("name", "%q is not a valid pod name: %s", n, strings.Join(errs, "; "))
			}
			if seen[n] {
				return nil, fail("name", "duplicate pod %q", n)
			}
			seen[n] = true
			pod := base
			pod.Name = n
			pod.Source = fmt.Sprintf("%s:%d", filepath.Base(name), line)
			pods = append(pods, pod)
		}
	}
	if len(pods) == 0 {
		return nil, &ParseError{File: name, Field: "pods", Problem: "no pods"}
	}
	return pods, nil
}
