package localup

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"

	"github.com/devicefit/devicefit/internal/nvdra"
)

// sharedGPU is what the claims consume of one shared GPU's shares
// (consumable capacity, KEP-5075), as the allocator recorded it in each
// claim's status.allocation.devices.results[].consumedCapacity: the
// record the kubelet plugin is handed, not devicefit's model of it.
type sharedGPU struct {
	node, device string
	used, total  int64
	claims       int
}

// sharedGPUs lists every device the slices publish with
// allowMultipleAllocations and a "shares" capacity, in slice order per
// node, with the shares the claims consume of it. A claim that asked for
// no capacity consumes all of them (the allocator records that too).
func sharedGPUs(sl []*resourceapi.ResourceSlice, claims []*resourceapi.ResourceClaim) []sharedGPU {
	type key struct{ driver, pool, device string }
	index := map[key]int{}
	var out []sharedGPU
	for _, s := range sl {
		for _, d := range s.Spec.Devices {
			c, ok := d.Capacity[nvdra.Shares]
			if !ptr.Deref(d.AllowMultipleAllocations, false) || !ok {
				continue
			}
			node := ptr.Deref(s.Spec.NodeName, ptr.Deref(d.NodeName, ""))
			index[key{s.Spec.Driver, s.Spec.Pool.Name, d.Name}] = len(out)
			out = append(out, sharedGPU{node: node, device: d.Name, total: c.Value.Value()})
		}
	}
	for _, c := range claims {
		if c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			i, ok := index[key{r.Driver, r.Pool, r.Device}]
			if !ok {
				continue
			}
			out[i].claims++
			if q, ok := r.ConsumedCapacity[nvdra.Shares]; ok {
				out[i].used += q.Value()
			}
		}
	}
	slices.SortStableFunc(out, func(a, b sharedGPU) int { return cmp.Compare(a.node, b.node) })
	return out
}

// fewestGPUs is how few of gpus could hold what they hold together: the
// largest first until their shares cover it. A bound, not a packing: with
// halves and quarters of equal GPUs it is reached exactly.
func fewestGPUs(gpus []sharedGPU) (n, used int) {
	var sum int64
	totals := make([]int64, 0, len(gpus))
	for _, g := range gpus {
		sum += g.used
		totals = append(totals, g.total)
		if g.used > 0 {
			used++
		}
	}
	slices.SortFunc(totals, func(a, b int64) int { return cmp.Compare(b, a) })
	for _, t := range totals {
		if sum <= 0 {
			break
		}
		sum -= t
		n++
	}
	return n, used
}

// printShares shows per shared GPU the shares its claims consume, and how
// many GPUs the shares are on against the fewest that could hold them.
func printShares(out io.Writer, gpus []sharedGPU) {
	if len(gpus) == 0 {
		return
	}
	fmt.Fprintln(out, "\nShared GPUs (consumable capacity; shares consumed per the claims' status.allocation.devices.results[].consumedCapacity):")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	usage := make([]string, len(gpus))
	width := 0
	for i, g := range gpus {
		usage[i] = fmt.Sprintf("%d/%d", g.used, g.total)
		width = max(width, len(usage[i]))
	}
	var sum int64
	claims := 0
	for i, g := range gpus {
		held := ""
		switch g.claims {
		case 0:
		case 1:
			held = "  (1 claim)"
		default:
			held = fmt.Sprintf("  (%d claims)", g.claims)
		}
		// Right-aligned usage, so the shares line up.
		fmt.Fprintf(tw, "  %s\t%s\t%*s shares%s\n", g.node, g.device, width, usage[i], held)
		sum += g.used
		claims += g.claims
	}
	tw.Flush()
	fewest, used := fewestGPUs(gpus)
	fmt.Fprintf(out, "  %d shares of %d claims on %d of %d GPUs (the fewest that could hold them: %d)\n", sum, claims, used, len(gpus), fewest)
}

// checkShares is the shared GPUs' part of the run's checks: no GPU gives
// more shares than it has.
func checkShares(gpus []sharedGPU) []string {
	var problems []string
	for _, g := range gpus {
		if g.used > g.total {
			problems = append(problems, fmt.Sprintf("%s %s: claims consume %d of its %d shares", g.node, g.device, g.used, g.total))
		}
	}
	return problems
}

// checkShareMetrics compares what devicefit_device_shares counts as used
// with what the claims' allocations consume, in whole devices: the
// scheduler's model of consumable capacity against the allocator's record.
func (m *devicefitMetrics) checkShareMetrics(gpus []sharedGPU) []string {
	var fromAPI, fromMetrics float64
	for _, g := range gpus {
		if g.total > 0 {
			fromAPI += float64(g.used) / float64(g.total)
		}
	}
	for _, g := range m.shares {
		fromMetrics += g.used
	}
	if math.Abs(fromAPI-fromMetrics) > 1e-6 {
		return []string{fmt.Sprintf("shared GPUs: %.3f used according to the claims' consumedCapacity, %.3f according to devicefit_device_shares", fromAPI, fromMetrics)}
	}
	return nil
}
