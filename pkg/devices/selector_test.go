package devices

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"
)

var selectorCmpOpts = cmp.AllowUnexported(ProductPattern{})

func exact(text string) ProductPattern { return ProductPattern{text: text} }
func glob(text string) ProductPattern  { return ProductPattern{text: text, glob: true} }

func TestParseSelector(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		want        Selector
	}{
		{
			name: "no annotations",
			want: Selector{Sharing: SharingAny},
		},
		{
			name: "other annotations ignored",
			annotations: map[string]string{
				"kubernetes.io/description":        "trainer",
				"foo.devicefit.io/products":        ",,",
				"devicefit.io.example.com/sharing": "bad",
				"devicefit.iox/min-memory":         "lots",
			},
			want: Selector{Sharing: SharingAny},
		},
		{
			name:        "products",
			annotations: map[string]string{AnnotationProducts: "H100-80GB-HBM3, NVIDIA A100-SXM4-80GB,H100*"},
			want: Selector{
				Products: []ProductPattern{exact("H100-80GB-HBM3"), exact("A100-SXM4-80GB"), glob("H100*")},
				Sharing:  SharingAny,
			},
		},
		{
			name:        "one product",
			annotations: map[string]string{AnnotationProducts: "NVIDIA-H200"},
			want:        Selector{Products: []ProductPattern{exact("H200")}, Sharing: SharingAny},
		},
		{
			name:        "exclude-products",
			annotations: map[string]string{AnnotationExcludeProducts: "H20,Tesla-T4*"},
			want: Selector{
				ExcludeProducts: []ProductPattern{exact("H20"), glob("Tesla-T4*")},
				Sharing:         SharingAny,
			},
		},
		{
			name:        "min-memory in Gi",
			annotations: map[string]string{AnnotationMinMemory: "40Gi"},
			want:        Selector{MinMemoryMiB: 40960, Sharing: SharingAny},
		},
		{
			// 10^9 bytes / 2^20 = 953.67, rounded up.
			name:        "min-memory in G rounds up",
			annotations: map[string]string{AnnotationMinMemory: "1G"},
			want:        Selector{MinMemoryMiB: 954, Sharing: SharingAny},
		},
		{
			name:        "min-memory in Mi, with blanks",
			annotations: map[string]string{AnnotationMinMemory: " 81920Mi "},
			want:        Selector{MinMemoryMiB: 81920, Sharing: SharingAny},
		},
		{
			name:        "min-memory of one byte is one MiB",
			annotations: map[string]string{AnnotationMinMemory: "1"},
			want:        Selector{MinMemoryMiB: 1, Sharing: SharingAny},
		},
		{
			name:        "min-memory at the limit",
			annotations: map[string]string{AnnotationMinMemory: "1Pi"},
			want:        Selector{MinMemoryMiB: 1 << 30, Sharing: SharingAny},
		},
		{
			name:        "families",
			annotations: map[string]string{AnnotationFamilies: "hopper, Ada-Lovelace ,blackwell"},
			want:        Selector{Families: []string{"hopper", "Ada-Lovelace", "blackwell"}, Sharing: SharingAny},
		},
		{
			name:        "min-compute major.minor",
			annotations: map[string]string{AnnotationMinCompute: "8.0"},
			want:        Selector{MinCompute: &Compute{8, 0}, Sharing: SharingAny},
		},
		{
			name:        "min-compute major only",
			annotations: map[string]string{AnnotationMinCompute: "9"},
			want:        Selector{MinCompute: &Compute{9, 0}, Sharing: SharingAny},
		},
		{
			name:        "min-compute two-digit major",
			annotations: map[string]string{AnnotationMinCompute: " 12.1 "},
			want:        Selector{MinCompute: &Compute{12, 1}, Sharing: SharingAny},
		},
		{
			name:        "sharing exclusive",
			annotations: map[string]string{AnnotationSharing: "exclusive"},
			want:        Selector{Sharing: SharingExclusive},
		},
		{
			name:        "sharing in upper case",
			annotations: map[string]string{AnnotationSharing: "EXCLUSIVE"},
			want:        Selector{Sharing: SharingExclusive},
		},
		{
			name:        "sharing any",
			annotations: map[string]string{AnnotationSharing: " Any "},
			want:        Selector{Sharing: SharingAny},
		},
		{
			name: "everything",
			annotations: map[string]string{
				AnnotationProducts:        "H100-80GB-HBM3,H200",
				AnnotationExcludeProducts: "*-MIG-*",
				AnnotationMinMemory:       "80Gi",
				AnnotationFamilies:        "hopper",
				AnnotationMinCompute:      "9.0",
				AnnotationSharing:         "exclusive",
				"app.kubernetes.io/name":  "trainer",
			},
			want: Selector{
				Products:        []ProductPattern{exact("H100-80GB-HBM3"), exact("H200")},
				ExcludeProducts: []ProductPattern{glob("*-MIG-*")},
				MinMemoryMiB:    81920,
				Families:        []string{"hopper"},
				MinCompute:      &Compute{9, 0},
				Sharing:         SharingExclusive,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSelector(tc.annotations)
			if err != nil {
				t.Fatalf("ParseSelector: %v", err)
			}
			if diff := cmp.Diff(tc.want, got, selectorCmpOpts); diff != "" {
				t.Errorf("ParseSelector (-want,+got):\n%s", diff)
			}
		})
	}
}

// wantAnnotationError is an *AnnotationError with a substring of its problem.
type wantAnnotationError struct {
	Annotation, Value, Problem string
}

func TestParseSelectorErrors(t *testing.T) {
	one := func(key, value, problem string) []wantAnnotationError {
		return []wantAnnotationError{{Annotation: key, Value: value, Problem: problem}}
	}
	tests := []struct {
		name        string
		annotations map[string]string
		want        []wantAnnotationError
	}{
		// Lists.
		{name: "empty products", annotations: map[string]string{AnnotationProducts: ""},
			want: one(AnnotationProducts, "", "empty list")},
		{name: "blank products", annotations: map[string]string{AnnotationProducts: "  "},
			want: one(AnnotationProducts, "  ", "empty list")},
		{name: "empty entry", annotations: map[string]string{AnnotationProducts: "H100,,A100"},
			want: one(AnnotationProducts, "H100,,A100", "empty entry at position 2")},
		{name: "only commas", annotations: map[string]string{AnnotationExcludeProducts: ",,"},
			want: one(AnnotationExcludeProducts, ",,", "empty entry at position 1")},
		{name: "trailing comma", annotations: map[string]string{AnnotationProducts: "H100, "},
			want: one(AnnotationProducts, "H100, ", "empty entry at position 2")},
		{name: "bad product character", annotations: map[string]string{AnnotationProducts: "H100;A100"},
			want: one(AnnotationProducts, "H100;A100", "character ';'")},
		{name: "vendor only", annotations: map[string]string{AnnotationExcludeProducts: "H20,NVIDIA"},
			want: one(AnnotationExcludeProducts, "H20,NVIDIA", "names no model")},
		// Memory.
		{name: "memory not a quantity", annotations: map[string]string{AnnotationMinMemory: "lots"},
			want: one(AnnotationMinMemory, "lots", "want a quantity")},
		{name: "memory empty", annotations: map[string]string{AnnotationMinMemory: ""},
			want: one(AnnotationMinMemory, "", "want a quantity")},
		{name: "memory in GB", annotations: map[string]string{AnnotationMinMemory: "40GB"},
			want: one(AnnotationMinMemory, "40GB", "want a quantity")},
		{name: "memory zero", annotations: map[string]string{AnnotationMinMemory: "0"},
			want: one(AnnotationMinMemory, "0", "must be positive")},
		{name: "memory negative", annotations: map[string]string{AnnotationMinMemory: "-40Gi"},
			want: one(AnnotationMinMemory, "-40Gi", "must be positive")},
		{name: "memory beyond any device", annotations: map[string]string{AnnotationMinMemory: "2Pi"},
			want: one(AnnotationMinMemory, "2Pi", "larger than any device memory")},
		{name: "memory absurd", annotations: map[string]string{AnnotationMinMemory: "1e100"},
			want: one(AnnotationMinMemory, "1e100", "larger than any device memory")},
		// Parsing these would compute 10^31125899906842625 and never return.
		{name: "memory with a huge negative exponent", annotations: map[string]string{AnnotationMinMemory: "1e-31125899906842625"},
			want: one(AnnotationMinMemory, "1e-31125899906842625", "exponent out of range")},
		{name: "memory with a huge positive exponent", annotations: map[string]string{AnnotationMinMemory: "1E31125899906842625"},
			want: one(AnnotationMinMemory, "1E31125899906842625", "exponent out of range")},
		{name: "memory with exponent 1000, leading zeros", annotations: map[string]string{AnnotationMinMemory: "1e+0001000"},
			want: one(AnnotationMinMemory, "1e+0001000", "exponent out of range")},
		// Families.
		{name: "family with a blank", annotations: map[string]string{AnnotationFamilies: "hopper,amp ere"},
			want: one(AnnotationFamilies, "hopper,amp ere", `family "amp ere"`)},
		{name: "family with an underscore", annotations: map[string]string{AnnotationFamilies: "ada_lovelace"},
			want: one(AnnotationFamilies, "ada_lovelace", `family "ada_lovelace"`)},
		{name: "families empty", annotations: map[string]string{AnnotationFamilies: ""},
			want: one(AnnotationFamilies, "", "empty list")},
		{name: "families empty entry", annotations: map[string]string{AnnotationFamilies: "hopper,,ampere"},
			want: one(AnnotationFamilies, "hopper,,ampere", "empty entry at position 2")},
		// Compute.
		{name: "compute word", annotations: map[string]string{AnnotationMinCompute: "eight"},
			want: one(AnnotationMinCompute, "eight", "want a compute capability")},
		{name: "compute bad minor", annotations: map[string]string{AnnotationMinCompute: "8.x"},
			want: one(AnnotationMinCompute, "8.x", "want a compute capability")},
		{name: "compute negative", annotations: map[string]string{AnnotationMinCompute: "-1"},
			want: one(AnnotationMinCompute, "-1", "want a compute capability")},
		{name: "compute negative minor", annotations: map[string]string{AnnotationMinCompute: "8.-1"},
			want: one(AnnotationMinCompute, "8.-1", "want a compute capability")},
		{name: "compute plus sign", annotations: map[string]string{AnnotationMinCompute: "+8"},
			want: one(AnnotationMinCompute, "+8", "want a compute capability")},
		{name: "compute empty", annotations: map[string]string{AnnotationMinCompute: ""},
			want: one(AnnotationMinCompute, "", "want a compute capability")},
		{name: "compute trailing dot", annotations: map[string]string{AnnotationMinCompute: "8."},
			want: one(AnnotationMinCompute, "8.", "want a compute capability")},
		{name: "compute no major", annotations: map[string]string{AnnotationMinCompute: ".5"},
			want: one(AnnotationMinCompute, ".5", "want a compute capability")},
		{name: "compute three parts", annotations: map[string]string{AnnotationMinCompute: "8.0.1"},
			want: one(AnnotationMinCompute, "8.0.1", "want a compute capability")},
		{name: "compute too large", annotations: map[string]string{AnnotationMinCompute: "1001"},
			want: one(AnnotationMinCompute, "1001", "want a compute capability")},
		// Sharing.
		{name: "sharing bad", annotations: map[string]string{AnnotationSharing: "shared"},
			want: one(AnnotationSharing, "shared", `want "exclusive" or "any"`)},
		{name: "sharing empty", annotations: map[string]string{AnnotationSharing: ""},
			want: one(AnnotationSharing, "", `want "exclusive" or "any"`)},
		// Unknown keys.
		{name: "typo", annotations: map[string]string{"devicefit.io/product": "H100"},
			want: one("devicefit.io/product", "H100", "unknown annotation; known: devicefit.io/products, ")},
		{name: "bare prefix", annotations: map[string]string{"devicefit.io/": "x"},
			want: one("devicefit.io/", "x", "unknown annotation")},
		{name: "wrong case", annotations: map[string]string{"devicefit.io/Sharing": "exclusive"},
			want: one("devicefit.io/Sharing", "exclusive", "unknown annotation")},
		{
			name: "every bad annotation, sorted",
			annotations: map[string]string{
				AnnotationSharing:      "bad",
				AnnotationProducts:     "",
				"devicefit.io/product": "H100",
				AnnotationMinMemory:    "lots",
				AnnotationMinCompute:   "8.0", // valid, not reported
				AnnotationFamilies:     "hop per",
			},
			want: []wantAnnotationError{
				{Annotation: AnnotationFamilies, Value: "hop per", Problem: "family"},
				{Annotation: AnnotationMinMemory, Value: "lots", Problem: "want a quantity"},
				{Annotation: "devicefit.io/product", Value: "H100", Problem: "unknown annotation"},
				{Annotation: AnnotationProducts, Value: "", Problem: "empty list"},
				{Annotation: AnnotationSharing, Value: "bad", Problem: "want"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSelector(tc.annotations)
			if err == nil {
				t.Fatalf("ParseSelector = %+v, want an error", got)
			}
			if diff := cmp.Diff(Selector{}, got, selectorCmpOpts); diff != "" {
				t.Errorf("ParseSelector returned a selector with its error (-want,+got):\n%s", diff)
			}
			var first *AnnotationError
			if !errors.As(err, &first) {
				t.Fatalf("errors.As(%v, *AnnotationError) = false", err)
			}
			if first.Annotation != tc.want[0].Annotation {
				t.Errorf("errors.As found annotation %q, want %q", first.Annotation, tc.want[0].Annotation)
			}

			var errs []error
			if joined, ok := err.(interface{ Unwrap() []error }); ok {
				errs = joined.Unwrap()
			} else {
				errs = []error{err}
			}
			var gotErrs []wantAnnotationError
			for _, e := range errs {
				var ae *AnnotationError
				if !errors.As(e, &ae) {
					t.Fatalf("error %v (%T) is not an *AnnotationError", e, e)
				}
				gotErrs = append(gotErrs, wantAnnotationError(*ae))
			}
			// Compare problems by substring.
			for i := range gotErrs {
				if i < len(tc.want) && strings.Contains(gotErrs[i].Problem, tc.want[i].Problem) {
					gotErrs[i].Problem = tc.want[i].Problem
				}
			}
			if diff := cmp.Diff(tc.want, gotErrs); diff != "" {
				t.Errorf("annotation errors (-want,+got):\n%s", diff)
			}
			// The message names every annotation at fault and its problem.
			msg := err.Error()
			for _, w := range tc.want {
				for _, part := range []string{"annotation " + w.Annotation + ":", w.Problem} {
					if !strings.Contains(msg, part) {
						t.Errorf("error message %q does not contain %q", msg, part)
					}
				}
			}
		})
	}
}

func TestAnnotationErrorMessage(t *testing.T) {
	err := &AnnotationError{Annotation: AnnotationMinMemory, Value: "lots", Problem: "want a quantity such as 40Gi or 81920Mi"}
	want := `annotation devicefit.io/min-memory: want a quantity such as 40Gi or 81920Mi (value "lots")`
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Errorf("Error() (-want,+got):\n%s", diff)
	}
}

func TestParseCompute(t *testing.T) {
	tests := []struct {
		in      string
		want    Compute
		wantErr bool
	}{
		{in: "8.0", want: Compute{8, 0}},
		{in: "8.6", want: Compute{8, 6}},
		{in: "9", want: Compute{9, 0}},
		{in: "12.1", want: Compute{12, 1}},
		{in: "08.00", want: Compute{8, 0}},
		{in: "0", want: Compute{0, 0}},
		{in: "1000.1000", want: Compute{1000, 1000}},
		{in: "1000.1001", wantErr: true},
		{in: "eight", wantErr: true},
		{in: "8.x", wantErr: true},
		{in: "-1", wantErr: true},
		{in: "8 .0", wantErr: true},
		{in: "99999999999999999999", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseCompute(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseCompute(%q) error = %v, want error %v", tc.in, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseCompute(%q) (-want,+got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestSelectorIsEmpty(t *testing.T) {
	tests := []struct {
		name     string
		selector Selector
		want     bool
	}{
		{name: "zero", selector: Selector{}, want: true},
		{name: "sharing any", selector: Selector{Sharing: SharingAny}, want: true},
		{name: "sharing exclusive", selector: Selector{Sharing: SharingExclusive}},
		{name: "products", selector: Selector{Products: []ProductPattern{exact("H100")}}},
		{name: "exclude-products", selector: Selector{ExcludeProducts: []ProductPattern{exact("H20")}}},
		{name: "min-memory", selector: Selector{MinMemoryMiB: 1}},
		{name: "families", selector: Selector{Families: []string{"hopper"}}},
		{name: "min-compute", selector: Selector{MinCompute: ptr.To(Compute{})}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.selector.IsEmpty(); got != tc.want {
				t.Errorf("IsEmpty() = %v, want %v", got, tc.want)
			}
		})
	}

	parsed, err := ParseSelector(map[string]string{"app": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if !parsed.IsEmpty() {
		t.Errorf("selector parsed from no devicefit.io annotations: IsEmpty() = false, want true")
	}
}

func TestSelectorAnnotations(t *testing.T) {
	got := SelectorAnnotations(map[string]string{
		AnnotationSharing: "exclusive", "other.io/x": "y", AnnotationProducts: "H100*",
	})
	want := []string{"devicefit.io/products=H100*", "devicefit.io/sharing=exclusive"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
}
