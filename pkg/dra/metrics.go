package dra

import (
	"context"

	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/metrics"
)

// InventorySource returns what devicefit_devices reads of the DRA devices
// at scrape time: every node's entries in a view of t. Scrapes run beside
// scheduling cycles: t should be a tracker of their own, not one that
// cycles read, whose held state a scrape would move between two cycles.
func InventorySource(t *Tracker, m func() fwk.SharedDRAManager) func() (map[string][]metrics.DRAEntry, error) {
	return func() (map[string][]metrics.DRAEntry, error) {
		v, err := t.View(context.Background(), m())
		if err != nil || v == nil {
			return nil, err
		}
		out := make(map[string][]metrics.DRAEntry, len(v.Nodes()))
		for name := range v.Nodes() {
			for _, e := range v.Entries(name) {
				out[name] = append(out[name], metrics.DRAEntry{Resource: e.Resource, Device: e.Device, Total: e.Total, Held: e.Held, Free: e.Free,
					Size: e.Size, Partial: e.Partial, Sample: e.Sample})
			}
		}
		return out, nil
	}
}
