package devicepack

import (
	"math"
	"slices"

	fwk "k8s.io/kube-scheduler/framework"
)

// FGD's order, where nothing is scarce.
//
// FGD (Weng et al., ATC '23; its simulator's fgd_score.go) scores a node by
// the growth of its expected fragmentation, mapped through a sigmoid to an
// integer 0..100 and truncated: growths within about 0.04 device of each
// other score alike, and the simulator takes the first of the equal nodes
// in one fixed order. On a fleet where no job is tied to a product, that
// coarse band with a fixed order among its members packs better than ranking
// every thousandth of a device: the default Alibaba trace, fractional,
// seeds 42-46, 95.33% of the GPUs allocated against 95.12% with the exact
// score and best fit among its ties (FGD: 95.24; docs/placement.md, "FGD's
// band where nothing is scarce"). Among nodes that strand
// about the same, going on filling the same nodes in one order (first fit)
// keeps the rest of the fleet whole, where best fit or the exact score
// hops between nodes for differences of a few hundredths of a device that
// the next arrivals do not keep.
//
// Where product-constrained jobs are short of devices (a kind carries
// scarcity pressure), the exact score stays: there the scarcity term must
// be weighed against fine differences in fragmentation, and the coarse band
// hid them (gpuspec05 94.57 against 95.01, gpuspec10 95.16 against 95.30).

// coarseStep is what one step of FGD's band is worth in a coarse raw score
// (weights.raw):
// more than the product-value term can add (at most 1000 per device
// resource or DRA entry taken, times a weight of at most 100), so that value
// only orders nodes within a band.
const coarseStep = 1 << 30

// fgdBand is FGD's score of a fragmentation term frag (thousandths of a
// device, the negated growth): 100·sigmoid(frag/1000), truncated.
func fgdBand(frag int64) int64 {
	return int64(float64(fwk.MaxNodeScore) / (1 + math.Exp(-float64(frag)/1000)))
}

// coarseOK reports whether the pod is scored by FGD's band: a device pod,
// a workload to weigh fragmentation by, and no kind under scarcity pressure.
func (s *preScoreState) coarseOK(fragmentation int64) bool {
	if !s.devicePod || s.workload == nil || fragmentation == 0 {
		return false
	}
	return !slices.ContainsFunc(s.kinds, func(k kindInfo) bool { return k.pressure > 0 })
}

// firstByName gives MaxNodeScore to the lowest-named of the nodes that have
// it and MaxNodeScore-1 to the others: DevicePack is a greedy packer that
// takes nodes of equal score in one fixed order (FGD's simulator takes the
// first; upstream's selectHost would pick among them at random, spreading
// the pods the band meant to stack).
func firstByName(scores fwk.NodeScoreList) {
	first := -1
	for i := range scores {
		if scores[i].Score == fwk.MaxNodeScore && (first < 0 || scores[i].Name < scores[first].Name) {
			first = i
		}
	}
	for i := range scores {
		if i != first && scores[i].Score == fwk.MaxNodeScore {
			scores[i].Score--
		}
	}
}
