package devices

import "strings"

// Mismatch says why a node's devices do not serve a pod; Match means they do.
type Mismatch int

const (
	Match Mismatch = iota
	MismatchProduct
	MismatchExcludedProduct
	MismatchMemory
	MismatchFamily
	MismatchCompute
	MismatchShared
	MismatchMIGStrategy
	MismatchMIGInvalid
)

// Match checks one device resource of a node against the selector, in a
// fixed order so the reason is stable. It does not allocate.
func (s *Selector) Match(labels *DeviceLabels, d Device) Mismatch {
	if m := servable(labels, d); m != Match {
		return m
	}
	if len(s.Products) > 0 && !anyMatches(s.Products, d.Product) {
		return MismatchProduct
	}
	if len(s.ExcludeProducts) > 0 && d.Product != "" && anyMatches(s.ExcludeProducts, d.Product) {
		return MismatchExcludedProduct
	}
	if s.MinMemoryMiB > 0 && d.MemoryMiB < s.MinMemoryMiB {
		return MismatchMemory
	}
	if len(s.Families) > 0 && !anyFamily(s.Families, d.Family) {
		return MismatchFamily
	}
	if s.MinCompute != nil && (!d.HasCompute || !d.Compute.AtLeast(*s.MinCompute)) {
		return MismatchCompute
	}
	if s.Sharing == SharingExclusive && d.Shared {
		return MismatchShared
	}
	return Match
}

// servable reports whether the node's MIG setup can serve the resource at
// all, whatever the selector: nvidia.com/mig-<profile> exists only under the
// mixed strategy (a stale zero-capacity resource may linger after a switch),
// and a "-MIG-INVALID" product means the slices behind nvidia.com/gpu are not
// what any pod asked for.
func servable(labels *DeviceLabels, d Device) Mismatch {
	if labels.IsMIG() {
		if d.MIGStrategy != "" && d.MIGStrategy != MIGStrategyMixed {
			return MismatchMIGStrategy
		}
		return Match
	}
	if d.MIGInvalid {
		return MismatchMIGInvalid
	}
	return Match
}

func anyMatches(patterns []ProductPattern, product string) bool {
	if product == "" {
		return false
	}
	for i := range patterns {
		if patterns[i].Matches(product) {
			return true
		}
	}
	return false
}

func anyFamily(families []string, family string) bool {
	for _, f := range families {
		if strings.EqualFold(f, family) {
			return true
		}
	}
	return false
}
