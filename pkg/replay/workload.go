package replay

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/devicefit/devicefit/pkg/devices"
)

// WorkloadClasses returns the job distribution fragmentation is measured
// against: the trace's device pods grouped by (devices, cpu, memory,
// accepted models), weighted by how often each occurs. This is FGD's
// "typical pods" made discrete. Pass the trace's own pods (after
// ApplyFractional), not the tuned sequence: the copies only repeat them.
// Classes are sorted, so the same pods give the same workload. A pod
// asking for a share of a device (kept by --fractional dra-shares) is a
// class of its own share: its capacity request of shares, FGD's gpu_milli.
func WorkloadClasses(pods []PodSpec) ([]devices.Class, error) {
	type key struct {
		gpus, cpu, mem int64
		products       string
		milli          int64
	}
	counts := map[key]int{}
	for i := range pods {
		p := &pods[i]
		if p.GPUs == 0 {
			continue
		}
		k := key{p.GPUs, p.MilliCPU, p.MemoryMiB, strings.Join(p.Products, ","), 1000}
		if p.Fractional() {
			if p.GPUMilli <= 0 {
				return nil, fmt.Errorf("pod %s (%s) asks for %d milli-GPU", p.Name, p.Source, p.GPUMilli)
			}
			k.milli = p.GPUMilli
		}
		counts[k]++
	}
	keys := make([]key, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.gpus, b.gpus), cmp.Compare(a.cpu, b.cpu), cmp.Compare(a.mem, b.mem), strings.Compare(a.products, b.products),
			cmp.Compare(a.milli, b.milli))
	})
	classes := make([]devices.Class, 0, len(keys))
	for _, k := range keys {
		c := devices.Class{
			Resource:    DeviceResource,
			Devices:     k.gpus,
			MilliCPU:    k.cpu,
			MemoryBytes: k.mem << 20,
			Weight:      float64(counts[k]),
		}
		if k.milli < 1000 {
			c.Capacity = sharesRequest(k.milli)
		}
		if k.products != "" {
			sel, err := devices.ParseSelector(map[string]string{devices.AnnotationProducts: k.products})
			if err != nil {
				return nil, err
			}
			c.Selector = sel
		}
		classes = append(classes, c)
	}
	return classes, nil
}
