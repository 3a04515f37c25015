package devices

import (
	"errors"
	"sort"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Seed corpora live in testdata/fuzz/<FuzzName>/; `go test` runs them as
// regular tests.

// fuzzDevices are label sets every fuzzed selector is matched against.
var fuzzDevices = []struct {
	resource v1.ResourceName
	labels   map[string]string
}{
	{NVIDIAGPU, nil},
	{NVIDIAGPU, h100Labels},
	{NVIDIASharedGPU, h100Labels},
	{NVIDIAGPU, a100SingleLabels},
	{NVIDIAGPU, a100MixedLabels},
	{"nvidia.com/mig-1g.10gb", a100MixedLabels},
	{"nvidia.com/mig-1g.10gb", a100SingleLabels},
	{"amd.com/gpu", map[string]string{LabelAMDProduct: "AMD_Instinct_MI300X_OAM"}},
}

// FuzzParseSelector builds annotations from fuzzed values; bit i of present
// says whether the i-th annotation is set (bit 6: an unknown devicefit.io/
// key named by unknown).
func FuzzParseSelector(f *testing.F) {
	keys := []string{
		AnnotationProducts, AnnotationExcludeProducts, AnnotationMinMemory,
		AnnotationFamilies, AnnotationMinCompute, AnnotationSharing,
	}
	f.Fuzz(func(t *testing.T, present uint8, products, exclude, minMemory, families, minCompute, sharing, unknown string) {
		values := []string{products, exclude, minMemory, families, minCompute, sharing}
		annotations := map[string]string{"app.kubernetes.io/name": "fuzz"}
		if present&(1<<6) != 0 {
			annotations[AnnotationPrefix+unknown] = "x"
		}
		for i, key := range keys {
			if present&(1<<i) != 0 {
				annotations[key] = values[i]
			}
		}

		s, err := ParseSelector(annotations)
		if err != nil {
			var ae *AnnotationError
			if !errors.As(err, &ae) {
				t.Fatalf("error %v (%T) holds no *AnnotationError", err, err)
			}
			if _, ok := annotations[ae.Annotation]; !ok {
				t.Fatalf("error names annotation %q, which is not set", ae.Annotation)
			}
			return
		}
		if s.MinMemoryMiB < 0 || s.MinMemoryMiB > 1<<30 {
			t.Errorf("MinMemoryMiB = %d, want within [0, 1Pi in MiB]", s.MinMemoryMiB)
		}
		if s.MinCompute != nil && (s.MinCompute.Major < 0 || s.MinCompute.Minor < 0) {
			t.Errorf("MinCompute = %+v, want non-negative", *s.MinCompute)
		}
		if s.Sharing != SharingAny && s.Sharing != SharingExclusive {
			t.Errorf("Sharing = %q, want %q or %q", s.Sharing, SharingAny, SharingExclusive)
		}
		for _, p := range append(append([]ProductPattern(nil), s.Products...), s.ExcludeProducts...) {
			if p.String() == "" {
				t.Errorf("parsed an empty product pattern")
			}
		}
		for _, d := range fuzzDevices {
			l := NewDeviceLabels(d.resource)
			m := s.Match(&l, l.Describe(d.labels))
			if m < Match || m > MismatchMIGInvalid {
				t.Errorf("Match(%s) = %d, not a Mismatch value", d.resource, m)
			}
		}
		if s.IsEmpty() {
			// An empty selector matches every servable device.
			l := NewDeviceLabels(NVIDIAGPU)
			if m := s.Match(&l, l.Describe(h100Labels)); m != Match {
				t.Errorf("empty selector: Match(H100) = %d, want Match", m)
			}
		}
	})
}

// FuzzProductPattern parses a pattern and matches it against a product.
func FuzzProductPattern(f *testing.F) {
	f.Fuzz(func(t *testing.T, pattern, product string) {
		p, err := ParseProductPattern(pattern)
		if err != nil {
			return
		}
		p.Matches(product)

		text := p.String()
		if text == "" {
			t.Fatalf("ParseProductPattern(%q) = empty pattern", pattern)
		}
		// Normalising is idempotent.
		again, err := ParseProductPattern(text)
		if err != nil {
			t.Fatalf("ParseProductPattern(%q) fails on its own String() %q: %v", pattern, text, err)
		}
		if again != p {
			t.Errorf("ParseProductPattern(%q) = %+v, but its String() %q parses to %+v", pattern, p, text, again)
		}
		// A pattern selects the product it names, with or without the vendor
		// prefix and -SHARED suffix, in any case.
		for _, name := range []string{text, vendorPrefix + text, strings.ToLower(vendorPrefix + text + sharedSuffix)} {
			if !p.Matches(name) {
				t.Errorf("pattern %q (from %q) does not match %q", text, pattern, name)
			}
		}
		if !strings.Contains(text, "*") {
			// "H20" never matches "H200".
			if p.Matches(vendorPrefix + text + "0") {
				t.Errorf("exact pattern %q matches %q", text, vendorPrefix+text+"0")
			}
		}
	})
}

// FuzzDescribe reads GFD labels with fuzzed values for every resource kind.
func FuzzDescribe(f *testing.F) {
	resources := []v1.ResourceName{
		NVIDIAGPU, NVIDIASharedGPU, "nvidia.com/mig-1g.10gb", "amd.com/gpu", "google.com/tpu", "aws.amazon.com/neuron",
	}
	f.Fuzz(func(t *testing.T, product, memory, count, family, major, minor, strategy, sharing, replicas, migProduct, migMemory string) {
		labels := map[string]string{
			LabelGPUProduct:                  product,
			LabelGPUMemory:                   memory,
			LabelGPUCount:                    count,
			LabelGPUFamily:                   family,
			LabelGPUComputeMajor:             major,
			LabelGPUComputeMinor:             minor,
			LabelMIGStrategy:                 strategy,
			LabelSharingStrategy:             sharing,
			LabelGPUReplicas:                 replicas,
			"nvidia.com/mig-1g.10gb.product": migProduct,
			"nvidia.com/mig-1g.10gb.memory":  migMemory,
			LabelAMDProduct:                  product,
			LabelTPUProduct:                  product,
		}
		exclusive := Selector{Sharing: SharingExclusive, MinMemoryMiB: 1, MinCompute: &Compute{8, 0}}
		for _, r := range resources {
			l := NewDeviceLabels(r)
			d := l.Describe(labels)
			if d.MemoryMiB < 0 || d.MemoryMiB > 1<<53 {
				t.Errorf("%s: MemoryMiB = %d, want within [0, 2^53]", r, d.MemoryMiB)
			}
			if d.Count < 0 {
				t.Errorf("%s: Count = %d, want non-negative", r, d.Count)
			}
			if d.HasCompute && (d.Compute.Major < 0 || d.Compute.Minor < 0) {
				t.Errorf("%s: Compute = %+v, want non-negative", r, d.Compute)
			}
			if !d.HasCompute && d.Compute != (Compute{}) {
				t.Errorf("%s: Compute = %+v without HasCompute, want zero", r, d.Compute)
			}
			if r == NVIDIASharedGPU && !d.Shared {
				t.Errorf("%s: Shared = false", r)
			}
			if d.MIGInvalid {
				if _, profile, _ := SplitProduct(d.Product); !strings.EqualFold(profile, migInvalid) {
					t.Errorf("%s: MIGInvalid with product %q", r, d.Product)
				}
			}
			var empty Selector
			empty.Match(&l, d)
			exclusive.Match(&l, d)
		}
	})
}

// FuzzPodDemand fills a pod's device requests and limits with fuzzed
// quantities; an empty string leaves the field unset.
func FuzzPodDemand(f *testing.F) {
	set, err := NewResourceSet(DefaultResourcePatterns())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, limit0, request0, limit1, request1, initQty, sidecarQty, overhead string) {
		quantity := func(s string) (*resource.Quantity, bool) {
			if s == "" {
				return nil, true
			}
			if hugeExponent.MatchString(s) {
				// apimachinery's ParseQuantity itself does not return on
				// such input in v0.37 ("1e33333333117": the exponent wraps
				// in int32 and rounding builds 10^|scale|; kubernetes#141203,
				// #141306); the API server decodes pods with the same function,
				// so no such quantity reaches a scheduler.
				return nil, false
			}
			q, err := resource.ParseQuantity(s)
			if err != nil {
				return nil, false
			}
			return &q, true
		}
		list := func(name v1.ResourceName, s string) (v1.ResourceList, bool) {
			q, ok := quantity(s)
			if !ok || q == nil {
				return nil, ok
			}
			return v1.ResourceList{name: *q, v1.ResourceCPU: resource.MustParse("1")}, true
		}
		var lists [7]v1.ResourceList
		names := []v1.ResourceName{NVIDIAGPU, NVIDIAGPU, mig1g, mig1g, NVIDIAGPU, NVIDIAGPU, NVIDIAGPU}
		for i, s := range []string{limit0, request0, limit1, request1, initQty, sidecarQty, overhead} {
			l, ok := list(names[i], s)
			if !ok {
				t.Skip("not a quantity")
			}
			lists[i] = l
		}
		always := v1.ContainerRestartPolicyAlways
		pod := &v1.Pod{Spec: v1.PodSpec{
			InitContainers: []v1.Container{
				{Name: "init", Resources: v1.ResourceRequirements{Requests: lists[4], Limits: lists[4]}},
				{Name: "sidecar", RestartPolicy: &always, Resources: v1.ResourceRequirements{Requests: lists[5], Limits: lists[5]}},
			},
			Containers: []v1.Container{
				{Name: "c0", Resources: v1.ResourceRequirements{Limits: lists[0], Requests: lists[1]}},
				{Name: "c1", Resources: v1.ResourceRequirements{Limits: lists[2], Requests: lists[3]}},
			},
			Overhead: lists[6],
		}}

		demand, err := PodDemand(pod, set)
		if err != nil {
			var de *DemandError
			if !errors.As(err, &de) {
				t.Fatalf("error %v (%T) is not a *DemandError", err, err)
			}
			return
		}
		if !sort.SliceIsSorted(demand, func(i, j int) bool { return demand[i].Name < demand[j].Name }) {
			t.Errorf("demand %v is not sorted", demand)
		}
		for i, r := range demand {
			if r.Count <= 0 || r.Count > maxDeviceCount {
				t.Errorf("demand %v: count of %s out of (0, 2^31]", demand, r.Name)
			}
			if i > 0 && demand[i-1].Name == r.Name {
				t.Errorf("demand %v lists %s twice", demand, r.Name)
			}
		}
		// Accepted means every device limit is whole and equals its request.
		for _, c := range pod.Spec.Containers {
			for _, name := range []v1.ResourceName{NVIDIAGPU, mig1g} {
				limit, hasLimit := c.Resources.Limits[name]
				request, hasRequest := c.Resources.Requests[name]
				// Zero first: Cmp of zeros with huge exponents ("e900000000") takes
				// minutes; accepted non-zero counts are small, so Cmp is cheap.
				equal := limit.IsZero() && request.IsZero() || !limit.IsZero() && !request.IsZero() && limit.Cmp(request) == 0
				if hasLimit != hasRequest || hasLimit && !equal {
					t.Errorf("container %s: %s limit %v, request %v accepted", c.Name, name, c.Resources.Limits, c.Resources.Requests)
				}
				if hasLimit && (limit.Sign() < 0 || limit.MilliValue()%1000 != 0) {
					t.Errorf("container %s: %s limit %s accepted", c.Name, name, limit.String())
				}
			}
		}
	})
}
