package replay

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// VariantOptions derive a workload from a trace. The other pod lists of the
// Alibaba GPU trace v2023 (gpushare*, cpu*, multigpu*) "are sampled from the
// default one, emphasizing certain types of workloads" (the trace's README);
// FGD's paper varies the share of GPU-sharing pods and the number of CPU-only
// pods that way. A Variant does the same from any trace, seeded, so a packing
// can be judged on shapes of workload it was not tuned on.
type VariantOptions struct {
	// Seed seeds every draw.
	Seed int64
	// FractionalShare, when set (0 to 1), is the share of the GPU pods that
	// ask for part of one device; the number of GPU pods stays the trace's.
	// Nil keeps the trace's GPU pods.
	FractionalShare *float64
	// CPUPods scales the number of CPU-only pods (1 keeps them, 0 drops
	// them, 2 doubles them).
	CPUPods float64
	// CPUScale multiplies each CPU-only pod's CPU request (1 keeps it).
	CPUScale float64
	// NoProducts drops every pod's accepted device models (gpu_spec):
	// openb_pod_list_default.csv is openb_pod_list_gpuspec10.csv without them.
	NoProducts bool
}

// Variant draws a workload from pods by o. Each group (fractional pods,
// whole-device pods, CPU-only pods) is resized on its own: to fewer pods by
// drawing which to keep without replacement (kept pods keep their order), to
// more by keeping them all and appending copies drawn with replacement (named
// after the pod they copy, "-v" and a number, after the trace's). Kept pods
// keep the trace's order; the replay's shuffle (--order shuffle) decides
// the order in which they arrive.
func Variant(pods []PodSpec, o VariantOptions) ([]PodSpec, error) {
	if !finite(o.CPUPods) || o.CPUPods < 0 {
		return nil, fmt.Errorf("CPU-only pods: scale %v must be a finite number >= 0", o.CPUPods)
	}
	if !finite(o.CPUScale) || o.CPUScale <= 0 {
		return nil, fmt.Errorf("CPU-only pods' CPU: scale %v must be a finite number > 0", o.CPUScale)
	}
	// The groups hold indices into pods.
	var fractional, whole, cpu []int
	for i := range pods {
		switch p := &pods[i]; {
		case p.GPUs == 0:
			cpu = append(cpu, i)
		case p.Fractional():
			fractional = append(fractional, i)
		default:
			whole = append(whole, i)
		}
	}
	wantFractional, wantWhole := len(fractional), len(whole)
	if f := o.FractionalShare; f != nil {
		if !finite(*f) || *f < 0 || *f > 1 {
			return nil, fmt.Errorf("share of fractional GPU pods: %v must be between 0 and 1", *f)
		}
		gpuPods := len(fractional) + len(whole)
		wantFractional = int(math.Round(*f * float64(gpuPods)))
		wantWhole = gpuPods - wantFractional
	}
	wantCPU := int(math.Round(o.CPUPods * float64(len(cpu))))
	// A stream of its own: the replay's shuffle with the same seed draws
	// from newRNG(seed), and the two must not move in step.
	r := &rng{src: rand.NewPCG(uint64(o.Seed), variantStream)}
	keep := make([]bool, len(pods))
	var copies []int
	for _, g := range []struct {
		what  string
		group []int
		want  int
	}{
		{"fractional GPU pods", fractional, wantFractional},
		{"whole-device GPU pods", whole, wantWhole},
		{"CPU-only pods", cpu, wantCPU},
	} {
		drawn, err := resample(r, g.group, g.want, keep)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", g.what, err)
		}
		copies = append(copies, drawn...)
	}
	names := make(map[string]bool, len(pods))
	var out []PodSpec
	for i := range pods {
		names[pods[i].Name] = true
		if keep[i] {
			out = append(out, pods[i])
		}
	}
	for k, i := range copies {
		p := pods[i]
		for n := k + 1; ; n++ {
			if name := fmt.Sprintf("%s-v%d", p.Name, n); !names[name] {
				p.Name = name
				break
			}
		}
		names[p.Name] = true
		out = append(out, p)
	}
	for i := range out {
		p := &out[i]
		if p.GPUs == 0 && o.CPUScale != 1 {
			p.MilliCPU = int64(math.Round(float64(p.MilliCPU) * o.CPUScale))
		}
		if o.NoProducts {
			p.Products = nil
		}
	}
	if len(out) == 0 {
		return nil, errors.New("the variant has no pods")
	}
	return out, nil
}

// resample marks in keep a seeded subset of group, when want is at most its
// size, or else all of it and returns copies drawn with replacement.
func resample(r *rng, group []int, want int, keep []bool) (copies []int, err error) {
	if want <= len(group) {
		// Selection sampling (Knuth's Algorithm S): each pod is kept with
		// probability (still wanted)/(still left), so the subset is uniform.
		kept := 0
		for n, i := range group {
			if r.intn(len(group)-n) < want-kept {
				keep[i] = true
				kept++
			}
		}
		return nil, nil
	}
	if len(group) == 0 {
		return nil, fmt.Errorf("%d wanted but the trace has none to draw from", want)
	}
	for _, i := range group {
		keep[i] = true
	}
	for len(group)+len(copies) < want {
		copies = append(copies, group[r.intn(len(group))])
	}
	return copies, nil
}

// variantStream is the PCG stream of Variant's draws ("variant").
const variantStream = 0x76617269616e74

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// WritePodsCSV writes pods as a pod list of the Alibaba GPU trace v2023 (all
// eleven columns; qos, phase and times empty), which ReadPodsCSV reads back.
func WritePodsCSV(w io.Writer, pods []PodSpec) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(podColumnsLong); err != nil {
		return err
	}
	row := make([]string, len(podColumnsLong))
	for _, p := range pods {
		row[0] = p.Name
		row[1] = strconv.FormatInt(p.MilliCPU, 10)
		row[2] = strconv.FormatInt(p.MemoryMiB, 10)
		row[3] = strconv.FormatInt(p.GPUs, 10)
		row[4] = strconv.FormatInt(p.GPUMilli, 10)
		row[5] = strings.Join(p.Products, "|")
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// VariantSummary describes a workload in the terms the options change.
func VariantSummary(pods []PodSpec) string {
	var gpu, fractional, cpu, constrained int
	var cpuMilli int64
	for _, p := range pods {
		switch {
		case p.GPUs == 0:
			cpu++
			cpuMilli += p.MilliCPU
		default:
			gpu++
			if p.Fractional() {
				fractional++
			}
			if len(p.Products) > 0 {
				constrained++
			}
		}
	}
	return fmt.Sprintf("%d pods: %d GPU pods (%d fractional, %d naming models), %d CPU-only pods asking %d cores",
		len(pods), gpu, fractional, constrained, cpu, (cpuMilli+500)/1000)
}
