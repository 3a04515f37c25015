package devicepack

import (
	"math"

	"github.com/devicefit/devicefit/pkg/devices"
)

// DevicePack's packing score has one formula, for Score, the shortlist
// (which scores row shapes and nodes before the framework does) and
// PlacementScore alike. Its terms are sums in thousandths of a device:
//
//	frag     = -(growth of expected stranded devices), over the node's device
//	           resources and DRA entries (CPU pods can strand devices too),
//	           minus, once pod groups with a topology key were placed, the
//	           expected devices of the node's domain those groups could no
//	           longer use (domainsState.nodeLoss); for a placement, the
//	           domain's loss (domainsState.score)
//	fit      = how full each device resource or DRA entry taken is after
//	           the placement; for a device-free pod, the mean fullness of
//	           the node's devices
//	value    = valueTerm(value of the product, largest in the cycle),
//	           per device resource or DRA entry taken (per device in a
//	           placement)
//	scarcity = -pressure(kind)·devices taken·1000, per kind taken (the
//	           pressure is the cycle's, prescore.go)
//
// and the raw score is
//
//	raw = wFrag·frag + wFit·fit + wValue·value + wScarcity·scarcity
//	      - wPenalty·1000   (for a device-free pod on a node with devices)
//
// except for a device pod where nothing is scarce and no NVLink domain is
// weighed (coarse.go, prepare), where FGD's band of frag comes first and
// value orders the nodes within a band:
//
//	raw = fgdBand(frag)·2^30 + wValue·value
//
// A device-free pod's best fit is the node's fullness because the CPU and
// memory beside devices already taken is the room device pods can no
// longer use: device-free pods spend it first and leave the CPU beside
// free devices to the device pods that need it. Without it they see only
// the fragmentation term, which is zero on most nodes (the devices stay
// usable as long as enough CPU is left); ties then go to the order of the
// nodes and the pods eat into the CPU of empty nodes (the default Alibaba
// trace with every GPU pod fractional: 3 points of allocation,
// docs/placement.md). The device-node penalty is a preference, where
// DeviceFit's deviceNodePolicy Require is a filter.
//
// Each term is an integer before the sum, so the score does not depend on
// map iteration order; NormalizeScore maps raw scores to [0, 100].

// terms are the score's sums, in thousandths of a device.
type terms struct {
	frag, fit, value, scarcity int64
	hasDevices                 bool
	// full sums how full (in thousandths) each of the node's device
	// resources (DRA: class and product) is, over fullOf of them: the best
	// fit of a device-free pod.
	full, fullOf int64
}

// valueTerm is the value term of one device taken: the cheaper the
// product (value against the cycle's largest, maxValue), the higher.
func valueTerm(value, maxValue int64) int64 {
	return 1000 - min(value, maxValue)*1000/maxValue
}

// taken adds one device resource or DRA entry of which take devices are
// taken, of kind k (nil past the kind bound), whose product is worth
// value: the value term once, the scarcity term per device.
func (t *terms) taken(k *kindInfo, value, maxValue, take int64) {
	t.value += valueTerm(value, maxValue)
	if k != nil {
		t.scarcity -= int64(math.Round(k.pressure * float64(take) * 1000))
	}
}

// weighted is the weighted sum of the terms.
func (w *weights) weighted(t *terms) int64 {
	return w.fragmentation*t.frag + w.bestFit*t.fit + w.productValue*t.value + w.scarcity*t.scarcity
}

// raw is the pod's raw score on a node from its terms (the formula above).
func (w *weights) raw(s *preScoreState, t *terms) int64 {
	if s.coarse {
		return fgdBand(t.frag)*coarseStep + w.productValue*t.value
	}
	if !s.devicePod && t.fullOf > 0 {
		t.fit = t.full / t.fullOf
	}
	score := w.weighted(t)
	if t.hasDevices && !s.devicePod {
		score -= w.deviceNodePenalty * 1000
	}
	return score
}

// kindValue is the product value of device d of kind k: the kind's,
// looked up once per cycle, when a candidate has it.
func (pl *DevicePack) kindValue(k *kindInfo, d devices.Device) int64 {
	if k != nil && k.candidate {
		return k.value
	}
	return pl.value(d)
}
