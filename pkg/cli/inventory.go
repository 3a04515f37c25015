package cli

import (
	"sort"
	"strconv"

	v1 "k8s.io/api/core/v1"

	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/metrics"
)

// InventoryRow is one device resource and product, on one node or summed
// over the nodes (Node empty). The counts are devicefit_devices' (pkg/metrics
// Summarize): allocatable, allocated by the bound pods that have not
// terminated, free, and stranded against the workload.
type InventoryRow struct {
	Resource    string  `json:"resource"`
	Product     string  `json:"product"`
	Node        string  `json:"node,omitempty"`
	Nodes       int     `json:"nodes"`
	Allocatable int64   `json:"allocatable"`
	Allocated   int64   `json:"allocated"`
	Free        int64   `json:"free"`
	Stranded    float64 `json:"stranded"`
	// MIGStrategy is GFD's nvidia.com/mig.strategy of the nodes (none,
	// single, mixed; "" when unlabelled, "various" when they differ).
	MIGStrategy string `json:"migStrategy,omitempty"`
	// Replicas is how many pods share one physical device under
	// time-slicing or MPS (GFD nvidia.com/gpu.replicas), 0 when the devices
	// are not shared, -1 when the nodes differ.
	Replicas int64 `json:"replicas,omitempty"`
	// Physical is GFD's count of physical devices behind the allocatable
	// (nvidia.com/gpu.count or the MIG profile's count); 0 when unlabelled.
	Physical int64 `json:"physical,omitempty"`
}

// Inventory is `kubectl devicefit inventory`: rows by product or by node,
// totals per resource, and the DRA pools.
type Inventory struct {
	// By is product or node.
	By   string         `json:"by"`
	Rows []InventoryRow `json:"rows"`
	// Totals has one row per device resource, Product empty.
	Totals []InventoryRow `json:"totals"`
	// Workload says what stranded is counted against.
	Workload string    `json:"workload"`
	Pools    []PoolRow `json:"pools,omitempty"`
	// ExtendedResources are the extended resources DeviceClasses name and
	// the class serving each (ExtendedResources).
	ExtendedResources []ExtendedResourceRow `json:"extendedResources,omitempty"`
	// OtherSchedulers are the bound device pods schedulers other than
	// devicefit placed (OtherSchedulers).
	OtherSchedulers []OtherScheduler `json:"otherSchedulers,omitempty"`
}

// Views of the inventory.
const (
	ByProduct = "product"
	ByNode    = "node"
	ByPool    = "pool"
)

// BuildInventory counts the devices of nodes, the requests of the bound pods
// among pods, the nodes' DRA devices (dra, by node; DRAEntries) and
// stranded against w (nil: none known stranded), exactly as the scheduler's
// devicefit_devices gauges do, per node and then summed per resource and
// product (by ByProduct) or kept per node (ByNode).
func BuildInventory(nodes []*v1.Node, pods []*v1.Pod, set devices.ResourceSet, w *devices.Workload, dra map[string][]metrics.DRAEntry, by string) Inventory {
	byNode := make(map[string][]*v1.Pod, len(nodes))
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
		}
	}
	sorted := append([]*v1.Node(nil), nodes...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })

	var perNode []InventoryRow
	for _, n := range sorted {
		s := metrics.SummarizeWithDRA([]*v1.Node{n}, byNode[n.Name], set, w, dra)
		for _, k := range s.Keys() {
			c := s.Devices[k]
			d := describe(k.Resource, n.Labels)
			perNode = append(perNode, InventoryRow{
				Resource: string(k.Resource), Product: k.Product, Node: n.Name, Nodes: 1,
				Allocatable: c.Allocatable, Allocated: c.Allocated, Free: c.Free, Stranded: c.Stranded,
				MIGStrategy: string(d.MIGStrategy), Replicas: replicas(d, n.Labels), Physical: d.Count,
			})
		}
	}
	inv := Inventory{By: by}
	switch by {
	case ByNode:
		inv.Rows = perNode
		sort.SliceStable(inv.Rows, func(i, j int) bool {
			a, b := inv.Rows[i], inv.Rows[j]
			if a.Node != b.Node {
				return a.Node < b.Node
			}
			return a.Resource < b.Resource
		})
	default:
		inv.Rows = sum(perNode, func(r InventoryRow) [2]string { return [2]string{r.Resource, r.Product} })
	}
	inv.Totals = sum(perNode, func(r InventoryRow) [2]string { return [2]string{r.Resource, ""} })
	for i := range inv.Totals {
		inv.Totals[i].Product, inv.Totals[i].MIGStrategy, inv.Totals[i].Replicas = "", "", 0
	}
	return inv
}

// sum adds rows up by key, in the order of rows (so float sums are those
// of a walk over the nodes by name), and sorts the result by key.
func sum(rows []InventoryRow, key func(InventoryRow) [2]string) []InventoryRow {
	index := map[[2]string]int{}
	var out []InventoryRow
	for _, r := range rows {
		k := key(r)
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			first := r
			first.Node, first.Nodes = "", 0
			first.Allocatable, first.Allocated, first.Free, first.Stranded, first.Physical = 0, 0, 0, 0, 0
			out = append(out, first)
		}
		o := &out[i]
		o.Nodes++
		o.Allocatable += r.Allocatable
		o.Allocated += r.Allocated
		o.Free += r.Free
		o.Stranded += r.Stranded
		o.Physical += r.Physical
		if o.MIGStrategy != r.MIGStrategy {
			o.MIGStrategy = "various"
		}
		if o.Replicas != r.Replicas {
			o.Replicas = -1
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := key(out[i]), key(out[j])
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		return a[1] < b[1]
	})
	return out
}

func describe(resource v1.ResourceName, labels map[string]string) devices.Device {
	l := devices.NewDeviceLabels(resource)
	return l.Describe(labels)
}

// replicas is GFD's replica count for a shared device, 0 otherwise.
func replicas(d devices.Device, labels map[string]string) int64 {
	if !d.Shared {
		return 0
	}
	n, err := strconv.ParseInt(labels[devices.LabelGPUReplicas], 10, 64)
	if err != nil || n < 1 {
		return 0
	}
	return n
}
