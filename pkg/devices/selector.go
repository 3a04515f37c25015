package devices

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Pod annotations that select devices. All are optional.
const (
	AnnotationPrefix          = "devicefit.io/"
	AnnotationProducts        = AnnotationPrefix + "products"
	AnnotationExcludeProducts = AnnotationPrefix + "exclude-products"
	AnnotationMinMemory       = AnnotationPrefix + "min-memory"
	AnnotationFamilies        = AnnotationPrefix + "families"
	AnnotationMinCompute      = AnnotationPrefix + "min-compute"
	AnnotationSharing         = AnnotationPrefix + "sharing"
)

var knownAnnotations = []string{
	AnnotationProducts, AnnotationExcludeProducts, AnnotationMinMemory,
	AnnotationFamilies, AnnotationMinCompute, AnnotationSharing,
}

// Sharing is the devicefit.io/sharing mode.
type Sharing string

const (
	// SharingAny accepts whole devices and time-sliced/MPS replicas alike.
	SharingAny Sharing = "any"
	// SharingExclusive never accepts a replica of a shared device.
	SharingExclusive Sharing = "exclusive"
)

// Selector is what a pod's annotations ask of each device it requests.
// The zero value selects every device.
type Selector struct {
	Products        []ProductPattern
	ExcludeProducts []ProductPattern
	MinMemoryMiB    int64
	Families        []string
	MinCompute      *Compute
	Sharing         Sharing
}

// IsEmpty reports whether the selector accepts any device.
func (s *Selector) IsEmpty() bool {
	return len(s.Products) == 0 && len(s.ExcludeProducts) == 0 && s.MinMemoryMiB == 0 &&
		len(s.Families) == 0 && s.MinCompute == nil && s.Sharing != SharingExclusive
}

// AnnotationError names the annotation at fault, its value and the problem.
type AnnotationError struct {
	Annotation, Value, Problem string
}

func (e *AnnotationError) Error() string {
	return fmt.Sprintf("annotation %s: %s (value %q)", e.Annotation, e.Problem, e.Value)
}

// ParseSelector reads the devicefit.io/* annotations. Every bad annotation is
// reported (errors.Join of *AnnotationError, sorted by annotation), so a user
// fixes them all in one round; an unknown devicefit.io/ key is an error too,
// because a typo ("devicefit.io/product") would otherwise be silently ignored.
func ParseSelector(annotations map[string]string) (Selector, error) {
	var (
		s    Selector
		errs []error
	)
	for key, value := range annotations {
		if !strings.HasPrefix(key, AnnotationPrefix) {
			continue
		}
		var err error
		switch key {
		case AnnotationProducts:
			s.Products, err = parseProductList(value)
		case AnnotationExcludeProducts:
			s.ExcludeProducts, err = parseProductList(value)
		case AnnotationMinMemory:
			s.MinMemoryMiB, err = parseMinMemory(value)
		case AnnotationFamilies:
			s.Families, err = parseFamilies(value)
		case AnnotationMinCompute:
			var c Compute
			if c, err = ParseCompute(value); err == nil {
				s.MinCompute = &c
			}
		case AnnotationSharing:
			s.Sharing, err = parseSharing(value)
		default:
			err = fmt.Errorf("unknown annotation; known: %s", strings.Join(knownAnnotations, ", "))
		}
		if err != nil {
			errs = append(errs, &AnnotationError{Annotation: key, Value: value, Problem: err.Error()})
		}
	}
	if len(errs) > 0 {
		sort.Slice(errs, func(i, j int) bool {
			return errs[i].(*AnnotationError).Annotation < errs[j].(*AnnotationError).Annotation
		})
		return Selector{}, errors.Join(errs...)
	}
	if s.Sharing == "" {
		s.Sharing = SharingAny
	}
	return s, nil
}

func splitList(value string) ([]string, error) {
	if strings.TrimSpace(value) == "" {
		return nil, errors.New("empty list")
	}
	parts := strings.Split(value, ",")
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p)
		if parts[i] == "" {
			return nil, fmt.Errorf("empty entry at position %d", i+1)
		}
	}
	return parts, nil
}

func parseProductList(value string) ([]ProductPattern, error) {
	parts, err := splitList(value)
	if err != nil {
		return nil, err
	}
	out := make([]ProductPattern, 0, len(parts))
	for _, p := range parts {
		pp, err := ParseProductPattern(p)
		if err != nil {
			return nil, err
		}
		out = append(out, pp)
	}
	return out, nil
}

// hugeExponent finds a decimal exponent of 1000 or more in magnitude. Parsing
// (negative exponents) or comparing (positive ones) such a quantity makes
// apimachinery compute 10^exponent: "1e-31125899906842625" would hold the
// scheduling loop for hours. No device memory is near 1e1000 or 1e-1000
// bytes, so nothing valid is lost. The admission policy
// (manifests/admission-policy.yaml) applies the same expression.
var hugeExponent = regexp.MustCompile(`[eE][+-]?0*[1-9][0-9]{3}`)

// parseMinMemory reads a Kubernetes quantity and rounds it up to MiB, the
// unit of nvidia.com/gpu.memory.
func parseMinMemory(value string) (int64, error) {
	v := strings.TrimSpace(value)
	if hugeExponent.MatchString(v) {
		return 0, errors.New("exponent out of range; want a quantity such as 40Gi or 81920Mi")
	}
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return 0, errors.New("want a quantity such as 40Gi or 81920Mi")
	}
	if q.Sign() <= 0 {
		return 0, errors.New("must be positive")
	}
	const mib = 1 << 20
	if q.Cmp(*resource.NewQuantity(1<<50, resource.BinarySI)) > 0 {
		return 0, errors.New("larger than any device memory (1Pi)")
	}
	return (q.Value() + mib - 1) / mib, nil
}

func parseFamilies(value string) ([]string, error) {
	parts, err := splitList(value)
	if err != nil {
		return nil, err
	}
	for _, p := range parts {
		for _, r := range p {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return nil, fmt.Errorf("family %q: want a GFD family name such as hopper or ada-lovelace", p)
			}
		}
	}
	return parts, nil
}

// ParseCompute reads a compute capability "8.0", "9" or "12.1".
func ParseCompute(value string) (Compute, error) {
	v := strings.TrimSpace(value)
	majorText, minorText, hasMinor := strings.Cut(v, ".")
	major, errMajor := strconv.Atoi(majorText)
	minor := 0
	var errMinor error
	if hasMinor {
		minor, errMinor = strconv.Atoi(minorText)
	}
	if errMajor != nil || errMinor != nil || major < 0 || minor < 0 || major > 1000 || minor > 1000 ||
		strings.ContainsAny(v, "+-") {
		return Compute{}, errors.New("want a compute capability such as 8.0 or 9.0")
	}
	return Compute{Major: major, Minor: minor}, nil
}

func parseSharing(value string) (Sharing, error) {
	switch s := Sharing(strings.ToLower(strings.TrimSpace(value))); s {
	case SharingAny, SharingExclusive:
		return s, nil
	}
	return "", fmt.Errorf("want %q or %q", SharingExclusive, SharingAny)
}

// SelectorAnnotations returns the pod's devicefit.io/* annotations as sorted
// "key=value" strings: what the plugins' verdicts depend on, for signing
// pods (KEP-5598 batching).
func SelectorAnnotations(annotations map[string]string) []string {
	var out []string
	for k, v := range annotations {
		if strings.HasPrefix(k, AnnotationPrefix) {
			out = append(out, k+"="+v)
		}
	}
	sort.Strings(out)
	return out
}
