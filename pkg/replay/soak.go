package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/devicefit/devicefit/pkg/plugins/devicepack"
)

// A soak replays a long stream of arrivals and departures through one
// policy, as a scheduler that runs for months sees them: pods of many
// distinct shapes arrive one by one, and whenever the fleet's devices are
// more than soakHigh taken, pods chosen at random depart until they are
// below soakLow again. It reports, for each tenth of the arrivals, the live
// heap after a garbage collection, the process CPU time per arrival, and
// the size of DevicePack's observed workload, so that state which grows
// with the pods seen, not with the pods running, shows.
const (
	soakHigh = 0.90
	soakLow  = 0.80
)

// SoakOptions configure Soak.
type SoakOptions struct {
	// Nodes is the size of the generated fleet (GeneratedFleet).
	Nodes int
	// Arrivals is the number of pods that arrive.
	Arrivals int
	// Seed draws the pods and the departures.
	Seed int64
	// Samples is how many equal parts of the arrivals are measured (10).
	Samples int
	// Progress receives a line per sample; nil for none.
	Progress io.Writer
	// AfterPart, when set, runs after each part (numbered from 1), its CPU
	// time left out of the next part's (a heap profile, say).
	AfterPart func(part int) error
}

// SoakSample is the state after one part of the arrivals.
type SoakSample struct {
	Arrivals   int `json:"arrivals"`
	Departures int `json:"departures"`
	Failed     int `json:"failed"`
	// Running is the pods placed and not departed at the part's end.
	Running int `json:"running"`
	// LiveHeapBytes is the highest heap in use right after a garbage
	// collection, over heapProbes readings spread over the part.
	LiveHeapBytes uint64 `json:"live_heap_bytes"`
	// CPUPerArrival is the process's user and system CPU time over the
	// part, per arrival, the heap readings' collections left out.
	CPUPerArrival time.Duration `json:"cpu_per_arrival_ns"`
	// Classes is the number of job classes DevicePack's observed workload
	// tracks (-1: DevicePack is not in the policy).
	Classes int `json:"classes"`
}

// heapProbes is how many times per part the live heap is read. State that is
// bounded but cycles shows as a sawtooth: DevicePack's set of pods already
// observed starts a new generation every 65536 device pods, and its class
// map is pruned from 1024 classes to 512. One reading per part lands
// anywhere on those teeth (28.3 to 31.1 MiB in the first half of a
// million-arrival soak, 2026-12-03); the highest of several readings, a
// tooth's peak, is what a part is compared by.
const heapProbes = 8

// Soak runs opts.Arrivals arrivals, and the departures they cause, through
// pol on a generated fleet of opts.Nodes nodes.
func Soak(ctx context.Context, pol Policy, opts SoakOptions) ([]SoakSample, error) {
	if opts.Nodes <= 0 || opts.Arrivals <= 0 {
		return nil, errors.New("a soak needs nodes and arrivals")
	}
	samples := max(opts.Samples, 1)
	fleet := GeneratedFleet(opts.Nodes)
	capacity := Capacity(fleet)
	var pack *devicepack.DevicePack
	s, err := newSimulation(ctx, pol, fleet, nil, nil, EngineOptions{Parallelism: 2, onPlugin: func(p fwk.Plugin) {
		if dp, ok := p.(*devicepack.DevicePack); ok {
			pack = dp
		}
	}})
	if err != nil {
		return nil, err
	}
	// Bound pods are added to, and departing ones removed from, the node
	// infos, as the scheduler's cache does on bind and delete (a new
	// generation each time), not assumed in the snapshot.
	s.bound = true
	logger := klog.FromContext(ctx)
	rng := newRNG(opts.Seed)
	type running struct {
		pod  *v1.Pod
		node int
		gpus int64
	}
	var live []running
	var taken int64
	var out []SoakSample
	cur := SoakSample{Classes: -1}
	start := cpuTime()
	for i := range opts.Arrivals {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		spec := soakPod(rng, i)
		a := Arrival{Pod: &spec, Name: spec.Name}
		pod := NewPod(&a, "soak-"+strconv.Itoa(i), pol.Profile.SchedulerName, s.style)
		s.request = podRequest{milliCPU: spec.MilliCPU, memory: spec.MemoryMiB << 20, devices: spec.GPUs}
		o, err := s.schedule(ctx, pod)
		if err != nil {
			return nil, fmt.Errorf("soak arrival %d: %w", i, err)
		}
		cur.Arrivals++
		if o.node < 0 {
			cur.Failed++
		} else {
			live = append(live, running{pod: pod, node: o.node, gpus: spec.GPUs})
			taken += spec.GPUs
		}
		if float64(taken) > soakHigh*float64(capacity) {
			for float64(taken) > soakLow*float64(capacity) && len(live) > 0 {
				k := rng.intn(len(live))
				r := live[k]
				live[k] = live[len(live)-1]
				// The slot past the end would keep a departed pod alive.
				live[len(live)-1] = running{}
				live = live[:len(live)-1]
				if err := s.depart(logger, r.pod, r.node); err != nil {
					return nil, fmt.Errorf("soak departure of %s: %w", r.pod.Name, err)
				}
				taken -= r.gpus
				cur.Departures++
			}
		}
		if (i+1)*samples*heapProbes/opts.Arrivals != i*samples*heapProbes/opts.Arrivals {
			before := cpuTime()
			cur.LiveHeapBytes = max(cur.LiveHeapBytes, liveHeap())
			start += cpuTime() - before
		}
		if (i+1)*samples/opts.Arrivals != i*samples/opts.Arrivals {
			used := cpuTime() - start
			cur.CPUPerArrival = used / time.Duration(cur.Arrivals)
			cur.Running = len(live)
			if pack != nil {
				cur.Classes = pack.ObservedClasses()
			}
			out = append(out, cur)
			if opts.Progress != nil {
				fmt.Fprintf(opts.Progress, "%s: %d arrivals, %d departures, %d failed, %d running, live heap %.1f MiB, %.0f µs CPU per arrival, %d classes\n",
					pol.Name, i+1, cur.Departures, cur.Failed, cur.Running, float64(cur.LiveHeapBytes)/(1<<20), float64(cur.CPUPerArrival)/1e3, cur.Classes)
			}
			if opts.AfterPart != nil {
				if err := opts.AfterPart(len(out)); err != nil {
					return nil, err
				}
			}
			cur = SoakSample{Classes: -1}
			start = cpuTime()
		}
	}
	return out, nil
}

// soakPod draws the i-th pod of a soak. Shapes vary in every dimension the
// scheduler reads (devices, CPU, memory, accepted products), so that the
// stream holds thousands of distinct job classes: 1-8 GPUs or none, CPU in
// 250-millicore steps, memory in 1 GiB steps, and a quarter of the GPU pods
// restricted to one or two of the fleet's models.
func soakPod(rng *rng, i int) PodSpec {
	sizes := []int64{0, 1, 1, 1, 1, 2, 2, 4, 8}
	p := PodSpec{
		Name:      "soak-" + strconv.Itoa(i),
		GPUs:      sizes[rng.intn(len(sizes))],
		MilliCPU:  250 * int64(1+rng.intn(64)),
		MemoryMiB: 1024 * int64(1+rng.intn(96)),
	}
	if p.GPUs > 0 {
		p.GPUMilli = 1000
		if rng.intn(4) == 0 {
			models := generatedModels
			first := rng.intn(len(models))
			p.Products = []string{models[first]}
			if rng.intn(2) == 0 {
				second := (first + 1 + rng.intn(len(models)-1)) % len(models)
				p.Products = sortedPair(models[first], models[second])
			}
		}
	}
	return p
}

func sortedPair(a, b string) []string {
	if b < a {
		a, b = b, a
	}
	return []string{a, b}
}

// generatedModels are the device models of GeneratedFleet.
var generatedModels = []string{"V100M16", "T4", "A10", "G3"}

// GeneratedFleet is a fleet in the shape of the Alibaba GPU trace's: 2-, 4-
// and 8-GPU nodes of four models, and a fifth of the nodes CPU-only; 96
// cores and 768 GiB each.
func GeneratedFleet(nodes int) []NodeSpec {
	gpus := []int64{8, 2, 4, 8, 0}
	ns := make([]NodeSpec, 0, nodes)
	for i := range nodes {
		n := NodeSpec{Name: fmt.Sprint("node-", i), MilliCPU: 96000, MemoryMiB: 786432, GPUs: gpus[i%len(gpus)]}
		if n.GPUs > 0 {
			n.Model = generatedModels[i%len(generatedModels)]
		}
		ns = append(ns, n)
	}
	return ns
}

// depart removes a bound pod from its node, as the scheduler's cache does
// when the pod is deleted.
func (s *simulation) depart(logger klog.Logger, pod *v1.Pod, node int) error {
	ni, ok := s.nodes[node].(*framework.NodeInfo)
	if !ok {
		return fmt.Errorf("node info of %T", s.nodes[node])
	}
	if err := ni.RemovePod(logger, pod); err != nil {
		return err
	}
	s.refresh(node)
	return nil
}

// liveHeap is the heap in use right after a garbage collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
