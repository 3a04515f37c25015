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
// Classes are sorted, so the same pods give the same workload.
func WorkloadClasses(pods []PodSpec) ([]devices.Class, error) {
	type key struct {
		gpus, cpu, mem int64
		products       string
	}
	counts := map[key]int{}
	for i := range pods {
		p := &pods[i]
		if p.GPUs == 0 {
			continue
		}
		if p.Fractional() {
			return nil, fmt.Errorf("pod %s (%s) asks for a share of a device; handle fractions first", p.Name, p.Source)
		}
		counts[key{p.GPUs, p.MilliCPU, p.MemoryMiB, strings.Join(p.Products, ",")}]++
	}
	keys := make([]key, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.gpus, b.gpus), cmp.Compare(a.cpu, b.cpu), cmp.Compare(a.mem, b.mem), strings.Compare(a.products, b.products))
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
