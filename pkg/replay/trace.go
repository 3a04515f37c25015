package replay

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/devicefit/devicefit/pkg/devices"
)

// NodeSpec is one node of the simulated fleet, as a trace describes it.
type NodeSpec struct {
	Name      string
	MilliCPU  int64
	MemoryMiB int64
	// GPUs is the number of whole devices (nvidia.com/gpu).
	GPUs int64
	// Model is the device model; it becomes the GFD label
	// nvidia.com/gpu.product. Empty exactly when GPUs is 0.
	Model string
	// Labels are extra node labels (own YAML format only).
	Labels map[string]string
	// Source is where the node was read ("file:line").
	Source string
}

// PodSpec is one pod of a trace.
type PodSpec struct {
	Name      string
	MilliCPU  int64
	MemoryMiB int64
	// GPUs is the number of devices (num_gpu); 0 for a CPU-only pod.
	GPUs int64
	// GPUMilli is the share of each device in thousandths (gpu_milli):
	// 1000 for whole devices, less for a GPU-sharing pod (GPUs == 1 only),
	// 0 for a CPU-only pod.
	GPUMilli int64
	// Products are the device models the pod accepts (gpu_spec "A|B");
	// empty accepts any. Sorted, without duplicates.
	Products []string
	// Source is where the pod was read ("file:line").
	Source string
}

// Fractional reports whether the pod asks for a share of one device.
func (p *PodSpec) Fractional() bool { return p.GPUs == 1 && p.GPUMilli < 1000 }

// MilliGPUs is the pod's device demand in milli-GPU, as FGD counts it: its
// share for a fractional pod, 1000 per device otherwise.
func (p *PodSpec) MilliGPUs() int64 {
	if p.Fractional() {
		return p.GPUMilli
	}
	return p.GPUs * 1000
}

// ParseError locates a problem in an input file. Line and Column are
// 1-based; Column is 0 when the problem concerns a whole row.
type ParseError struct {
	File   string
	Line   int
	Column int
	// Field names the column or YAML field at fault, if any.
	Field   string
	Problem string
}

func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ":%d", e.Column)
		}
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Problem)
	return b.String()
}

// Column sets of the Alibaba GPU trace v2023 (cluster-trace-gpu-v2023).
var (
	nodeColumns      = []string{"sn", "cpu_milli", "memory_mib", "gpu", "model"}
	podColumnsShort  = []string{"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"}
	podColumnsLong   = append(slices.Clone(podColumnsShort), "gpu_spec", "qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time")
	maxDevicesPerPod = int64(1024)
)

// csvFile reads a trace CSV with a fixed header and reports problems with
// file, line and column.
type csvFile struct {
	name   string
	r      *csv.Reader
	header []string
	record []string
}

func openCSV(name string, in io.Reader, want ...[]string) (*csvFile, error) {
	r := csv.NewReader(in)
	r.ReuseRecord = true
	// Every row must have as many fields as the header.
	r.FieldsPerRecord = 0
	f := &csvFile{name: name, r: r}
	header, err := r.Read()
	if err == io.EOF {
		return nil, &ParseError{File: name, Line: 1, Problem: "empty file: want a header line"}
	}
	if err != nil {
		return nil, f.wrap(err)
	}
	for _, w := range want {
		if slices.Equal(header, w) {
			f.header = slices.Clone(header)
			return f, nil
		}
	}
	alternatives := make([]string, len(want))
	for i, w := range want {
		alternatives[i] = strings.Join(w, ",")
	}
	return nil, &ParseError{File: name, Line: 1, Field: "header",
		Problem: fmt.Sprintf("got %q, want %s", strings.Join(header, ","), strings.Join(alternatives, " or "))}
}

// next reads a row; it returns io.EOF at the end.
func (f *csvFile) next() error {
	rec, err := f.r.Read()
	if err != nil {
		if err == io.EOF {
			return err
		}
		return f.wrap(err)
	}
	f.record = rec
	return nil
}

func (f *csvFile) wrap(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		problem := pe.Err.Error()
		if errors.Is(pe.Err, csv.ErrFieldCount) {
			problem = fmt.Sprintf("want %d fields as in the header, got another count", len(f.header))
		}
		return &ParseError{File: f.name, Line: pe.Line, Column: pe.Column, Problem: problem}
	}
	return fmt.Errorf("%s: %w", f.name, err)
}

// line returns the line of the current row.
func (f *csvFile) line() int {
	line, _ := f.r.FieldPos(0)
	return line
}

// fail reports a problem with field i of the current row.
func (f *csvFile) fail(i int, format string, args ...any) error {
	line, col := f.r.FieldPos(i)
	return &ParseError{File: f.name, Line: line, Column: col, Field: f.header[i], Problem: fmt.Sprintf(format, args...)}
}

// uniqueName reads the record's first column as an object name: a valid DNS
// subdomain, not seen before in the file (seen maps names to their line).
func (f *csvFile) uniqueName(kind string, seen map[string]int) (string, error) {
	name := f.record[0]
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return "", f.fail(0, "%q is not a valid %s name: %s", name, kind, strings.Join(errs, "; "))
	}
	if first, dup := seen[name]; dup {
		return "", f.fail(0, "duplicate %s %q (first on line %d)", kind, name, first)
	}
	seen[name] = f.line()
	return name, nil
}

func (f *csvFile) source() string { return fmt.Sprintf("%s:%d", filepath.Base(f.name), f.line()) }

// int reads field i as a decimal integer in [min, max].
func (f *csvFile) int(i int, min, max int64) (int64, error) {
	s := f.record[i]
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		if s == "" {
			return 0, f.fail(i, "empty; want an integer")
		}
		return 0, f.fail(i, "%q is not an integer", s)
	}
	if n < min || n > max {
		return 0, f.fail(i, "%d is out of range [%d, %d]", n, min, max)
	}
	return n, nil
}

// ReadNodesCSV reads a node list of the Alibaba GPU trace v2023
// (sn,cpu_milli,memory_mib,gpu,model). name is used in error messages.
func ReadNodesCSV(name string, in io.Reader) ([]NodeSpec, error) {
	f, err := openCSV(name, in, nodeColumns)
	if err != nil {
		return nil, err
	}
	var nodes []NodeSpec
	seen := map[string]int{}
	for {
		if err := f.next(); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		var n NodeSpec
		if n.Name, err = f.uniqueName("node", seen); err != nil {
			return nil, err
		}
		if n.MilliCPU, err = f.int(1, 1, 1<<40); err != nil {
			return nil, err
		}
		if n.MemoryMiB, err = f.int(2, 1, 1<<40); err != nil {
			return nil, err
		}
		if n.GPUs, err = f.int(3, 0, maxDevicesPerPod); err != nil {
			return nil, err
		}
		n.Model = f.record[4]
		if err := checkModel(n.GPUs, n.Model); err != "" {
			return nil, f.fail(4, "%s", err)
		}
		n.Source = f.source()
		nodes = append(nodes, n)
	}
	if len(nodes) == 0 {
		return nil, &ParseError{File: name, Problem: "no nodes"}
	}
	return nodes, nil
}

// checkModel returns a problem with a node's device model, or "".
func checkModel(gpus int64, model string) string {
	switch {
	case gpus == 0 && model != "":
		return fmt.Sprintf("model %q given for a node without devices", model)
	case gpus > 0 && model == "":
		return fmt.Sprintf("empty; a node with %d devices needs a model", gpus)
	case model != "":
		if errs := validation.IsValidLabelValue(model); len(errs) > 0 {
			return fmt.Sprintf("%q cannot be a label value: %s", model, strings.Join(errs, "; "))
		}
		if _, err := devices.ParseProductPattern(model); err != nil {
			return err.Error()
		}
	}
	return ""
}

// ReadPodsCSV reads a pod list of the Alibaba GPU trace v2023: either all
// eleven columns or only the first five (the multigpu files).
func ReadPodsCSV(name string, in io.Reader) ([]PodSpec, error) {
	f, err := openCSV(name, in, podColumnsLong, podColumnsShort)
	if err != nil {
		return nil, err
	}
	long := len(f.header) == len(podColumnsLong)
	var pods []PodSpec
	seen := map[string]int{}
	for {
		if err := f.next(); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		var p PodSpec
		if p.Name, err = f.uniqueName("pod", seen); err != nil {
			return nil, err
		}
		if p.MilliCPU, err = f.int(1, 0, 1<<40); err != nil {
			return nil, err
		}
		if p.MemoryMiB, err = f.int(2, 0, 1<<40); err != nil {
			return nil, err
		}
		if p.GPUs, err = f.int(3, 0, maxDevicesPerPod); err != nil {
			return nil, err
		}
		if p.GPUMilli, err = f.int(4, 0, 1000); err != nil {
			return nil, err
		}
		if problem := checkGPUMilli(p.GPUs, p.GPUMilli); problem != "" {
			return nil, f.fail(4, "%s", problem)
		}
		if long {
			if p.Products, err = parseGPUSpec(f.record[5]); err != nil {
				return nil, f.fail(5, "%v", err)
			}
			if len(p.Products) > 0 && p.GPUs == 0 {
				return nil, f.fail(5, "a pod without devices cannot select device models")
			}
			// qos and pod_phase are free text; the times are seconds when set.
			for i := 8; i <= 10; i++ {
				if f.record[i] != "" {
					if _, err := f.int(i, 0, 1<<62); err != nil {
						return nil, err
					}
				}
			}
		}
		p.Source = f.source()
		pods = append(pods, p)
	}
	if len(pods) == 0 {
		return nil, &ParseError{File: name, Problem: "no pods"}
	}
	return pods, nil
}

// checkGPUMilli returns a problem with a pod's device share, or "".
func checkGPUMilli(gpus, milli int64) string {
	switch {
	case gpus == 0 && milli != 0:
		return fmt.Sprintf("%d for a pod without devices; want 0", milli)
	case gpus == 1 && milli == 0:
		return "0 for a pod with one device; want 1..1000"
	case gpus > 1 && milli != 1000:
		return fmt.Sprintf("%d for a pod with %d devices; a share is possible only with one device, want 1000", milli, gpus)
	}
	return ""
}

// parseGPUSpec reads gpu_spec: empty, or models separated by '|'.
// Repeated models are dropped; the result is sorted.
func parseGPUSpec(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	return normaliseProducts(strings.Split(s, "|"))
}

func normaliseProducts(in []string) ([]string, error) {
	var out []string
	for i, m := range in {
		if m == "" {
			return nil, fmt.Errorf("empty model at position %d", i+1)
		}
		if errs := validation.IsValidLabelValue(m); len(errs) > 0 {
			return nil, fmt.Errorf("model %q cannot be a label value: %s", m, strings.Join(errs, "; "))
		}
		if strings.Contains(m, ",") || strings.Contains(m, "*") {
			return nil, fmt.Errorf("model %q: ',' and '*' are not allowed", m)
		}
		if _, err := devices.ParseProductPattern(m); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// LoadNodes reads a node file: .csv (the trace) or .yaml/.yml (own format).
func LoadNodes(path string) ([]NodeSpec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".csv":
		return ReadNodesCSV(path, strings.NewReader(string(data)))
	case ".yaml", ".yml":
		return ReadNodesYAML(path, data)
	default:
		return nil, fmt.Errorf("%s: unknown file type %q; want .csv, .yaml or .yml", path, ext)
	}
}

// LoadPods reads a pod file: .csv (the trace) or .yaml/.yml (own format).
func LoadPods(path string) ([]PodSpec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".csv":
		return ReadPodsCSV(path, strings.NewReader(string(data)))
	case ".yaml", ".yml":
		return ReadPodsYAML(path, data)
	default:
		return nil, fmt.Errorf("%s: unknown file type %q; want .csv, .yaml or .yml", path, ext)
	}
}
