package cli

import (
	"sort"

	resourceapi "k8s.io/api/resource/v1"
)

// PoolRow is one DRA resource pool (a driver's pool, published in one or
// more ResourceSlices): its devices and how many allocated claims hold.
type PoolRow struct {
	Driver string `json:"driver"`
	Pool   string `json:"pool"`
	// Node is the node of a node-local pool; "" for a pool its slices
	// publish for all nodes or a node selector.
	Node string `json:"node,omitempty"`
	// Slices counts the slices of the pool's newest generation; Complete is
	// false while fewer of them than spec.pool.resourceSliceCount exist
	// (the scheduler does not allocate from an incomplete pool).
	Slices   int  `json:"slices"`
	Complete bool `json:"complete"`
	Devices  int  `json:"devices"`
	// Allocated counts devices some claim's allocation holds; a device
	// with allowMultipleAllocations (consumable capacity) counts once
	// however many claims share it.
	Allocated int `json:"allocated"`
	Free      int `json:"free"`
	// Shareable counts the devices that allow multiple allocations.
	Shareable int `json:"shareable,omitempty"`
}

type poolKey struct{ driver, pool string }

type deviceKey struct{ driver, pool, device string }

// BuildPools lists the pools of the slices, the newest generation of each
// (older slices are being replaced, KEP-4381), with the devices allocated
// to claims.
func BuildPools(slices []*resourceapi.ResourceSlice, claims []*resourceapi.ResourceClaim) []PoolRow {
	newest := map[poolKey]int64{}
	for _, s := range slices {
		k := poolKey{s.Spec.Driver, s.Spec.Pool.Name}
		if g, ok := newest[k]; !ok || s.Spec.Pool.Generation > g {
			newest[k] = s.Spec.Pool.Generation
		}
	}
	allocated := map[deviceKey]bool{}
	for _, c := range claims {
		if c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			allocated[deviceKey{r.Driver, r.Pool, r.Device}] = true
		}
	}
	rows := map[poolKey]*PoolRow{}
	want := map[poolKey]int64{}
	for _, s := range slices {
		k := poolKey{s.Spec.Driver, s.Spec.Pool.Name}
		if s.Spec.Pool.Generation != newest[k] {
			continue
		}
		r := rows[k]
		if r == nil {
			r = &PoolRow{Driver: k.driver, Pool: k.pool}
			rows[k] = r
			if s.Spec.NodeName != nil {
				r.Node = *s.Spec.NodeName
			}
		}
		want[k] = s.Spec.Pool.ResourceSliceCount
		r.Slices++
		for _, d := range s.Spec.Devices {
			r.Devices++
			if d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations {
				r.Shareable++
			}
			if allocated[deviceKey{k.driver, k.pool, d.Name}] {
				r.Allocated++
			}
		}
	}
	out := make([]PoolRow, 0, len(rows))
	for k, r := range rows {
		r.Complete = int64(r.Slices) >= want[k]
		r.Free = r.Devices - r.Allocated
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Driver != out[j].Driver {
			return out[i].Driver < out[j].Driver
		}
		return out[i].Pool < out[j].Pool
	})
	return out
}
