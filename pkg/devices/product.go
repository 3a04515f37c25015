package devices

import (
	"fmt"
	"strings"
)

// GFD product label suffixes (see GPU Feature Discovery's product labeler).
const (
	// sharedSuffix marks a time-sliced or MPS replica when replicas > 1.
	sharedSuffix = "-SHARED"
	// migInfix separates the model from the MIG profile under the single
	// strategy: NVIDIA-A100-SXM4-40GB-MIG-1g.5gb.
	migInfix = "-MIG-"
	// migInvalid is the profile GFD writes when a single-strategy node has
	// MIG devices of mixed profiles (or MIG on and none configured).
	migInvalid = "INVALID"
	// vendorPrefix is part of the product name in recent GFD releases; users
	// may leave it out ("H100-80GB-HBM3" selects "NVIDIA-H100-80GB-HBM3").
	vendorPrefix = "NVIDIA-"
)

// ProductPattern is one entry of devicefit.io/products or exclude-products,
// normalised: GFD's sanitising (spaces become '-') applied, no vendor prefix and
// no "-SHARED" suffix.
// Matching is case-insensitive and exact unless the pattern holds '*', which
// matches any run of characters; "H20" never matches "H200".
type ProductPattern struct {
	text string
	glob bool
}

// String returns the normalised pattern.
func (p ProductPattern) String() string { return p.text }

// ParseProductPattern validates and normalises one product name or glob.
func ParseProductPattern(s string) (ProductPattern, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return ProductPattern{}, fmt.Errorf("empty product name")
	}
	// GFD turns spaces of the NVML product name into '-'.
	t = strings.Join(strings.Fields(t), "-")
	for _, r := range t {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.*", r)) {
			return ProductPattern{}, fmt.Errorf("product %q: character %q cannot appear in a GFD product label", s, r)
		}
	}
	// Normalised as Matches normalises the label value, so that a value copied
	// from a node ("NVIDIA-A100-SXM4-40GB-SHARED") selects that node.
	t = normaliseProduct(t)
	if t == "" || strings.EqualFold(t, strings.TrimSuffix(vendorPrefix, "-")) {
		return ProductPattern{}, fmt.Errorf("product %q names no model, only the vendor or the -SHARED suffix", s)
	}
	return ProductPattern{text: t, glob: strings.Contains(t, "*")}, nil
}

// Matches reports whether the pattern selects product, a GFD product label
// value. The "-SHARED" suffix is ignored here (sharing is the business of
// devicefit.io/sharing); a MIG slice "<model>-MIG-<profile>" is a product of
// its own, so "A100-SXM4-40GB" does not select a 1g.5gb slice of it.
// It does not allocate.
func (p ProductPattern) Matches(product string) bool {
	model := normaliseProduct(product)
	if !p.glob {
		return strings.EqualFold(p.text, model)
	}
	// The vendor prefix is optional for globs too: "NVIDIA*" selects every
	// NVIDIA product, "H100*" the H100s.
	if globFold(p.text, model) {
		return true
	}
	full := trimShared(product)
	return len(full) != len(model) && globFold(p.text, full)
}

// normaliseProduct drops the optional vendor prefix and the "-SHARED" suffix,
// however often they repeat, so that normalising is idempotent.
func normaliseProduct(s string) string {
	for {
		t := trimFold(s, vendorPrefix)
		if len(t) == len(s) {
			return trimShared(s)
		}
		s = t
	}
}

func trimShared(s string) string {
	for {
		t, ok := cutSuffixFold(s, sharedSuffix)
		if !ok {
			return s
		}
		s = t
	}
}

// SplitProduct splits a GFD product label into model, MIG profile and whether
// it carries the shared suffix.
func SplitProduct(product string) (model, migProfile string, shared bool) {
	model, shared = cutSuffixFold(product, sharedSuffix)
	if i := strings.LastIndex(model, migInfix); i >= 0 {
		return model[:i], model[i+len(migInfix):], shared
	}
	return model, "", shared
}

func trimFold(s, prefix string) string {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):]
	}
	return s
}

func cutSuffixFold(s, suffix string) (string, bool) {
	if len(s) >= len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix) {
		return s[:len(s)-len(suffix)], true
	}
	return s, false
}

// globFold matches pattern ('*' = any run) against s, ASCII case-insensitive,
// with the classic single-backtrack algorithm: linear for one '*', and never
// exponential.
func globFold(pattern, s string) bool {
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case p < len(pattern) && lowerASCII(pattern[p]) == lowerASCII(s[i]):
			p++
			i++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

func lowerASCII(b byte) byte {
	if b >= 'A' && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}
