package dra

import (
	"github.com/devicefit/devicefit/pkg/devices"
)

// DeviceChooser is an optional interface of the framework's
// SharedDRAManager, for simulators only. Upstream's allocator gives a
// request the first devices of the node, in slice order, that fit (first
// fit: devices.DRAUsage.FirstFit), and that is what the view's Picks model.
// A simulator whose allocations follow another device choice on the node
// (an oracle placement study: the replay's --device-choice) implements
// DeviceChooser on the manager it hands the framework, so that DevicePack
// scores the placement that choice will make. Upstream's manager does not
// implement it, so production is first fit.
//
// Only requests for one device with a capacity request (a share of a
// shared device, KEP-5075) are asked about: where devices are taken whole,
// which free device of a node a request gets does not change what the
// node has left.
type DeviceChooser interface {
	// ChooseDevice returns the index in candidates of the device a request
	// for one device with capacity r gets on node n; candidates are the
	// devices of n it could get now, in slice order (candidates[0] is
	// first fit's). A negative index (or one out of range) means first fit.
	ChooseDevice(n *devices.DRANode, r devices.CapacityRequest, candidates []*devices.DRADevice) int
}

// choose returns the devices of n a request for count devices matching
// match, each with capacity r, gets: the chooser's pick for a share
// request, else first fit's. ok is false when none fits.
func (v *View) choose(n *devices.DRANode, match func(*devices.DRADevice) bool, count int64, r devices.CapacityRequest, out []*devices.DRADevice) ([]*devices.DRADevice, bool) {
	if v.chooser == nil || count != 1 || r.Empty() || n == nil {
		return v.usage.FirstFit(n, match, count, r, out)
	}
	start := len(out)
	for _, d := range n.Devices {
		if match(d) && v.usage.AvailableFor(d, r) {
			out = append(out, d)
		}
	}
	cands := out[start:]
	if len(cands) == 0 {
		return out, false
	}
	i := v.chooser.ChooseDevice(n, r, cands)
	if i < 0 || i >= len(cands) {
		i = 0
	}
	out[start] = cands[i]
	return out[:start+1], true
}
