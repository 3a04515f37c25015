package devices

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseProductPattern(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    ProductPattern
		wantErr string
	}{
		{name: "GFD label value", in: "NVIDIA-H100-80GB-HBM3", want: ProductPattern{text: "H100-80GB-HBM3"}},
		{name: "without the vendor prefix", in: "H100-80GB-HBM3", want: ProductPattern{text: "H100-80GB-HBM3"}},
		{name: "lower-case vendor prefix", in: "nvidia-h200", want: ProductPattern{text: "h200"}},
		{name: "NVML name with spaces", in: "NVIDIA H100 80GB HBM3", want: ProductPattern{text: "H100-80GB-HBM3"}},
		{name: "runs of blanks and tabs", in: "  Tesla \t T4  ", want: ProductPattern{text: "Tesla-T4"}},
		{name: "underscore and dot", in: "Quadro_RTX.8000", want: ProductPattern{text: "Quadro_RTX.8000"}},
		{name: "MIG product", in: "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", want: ProductPattern{text: "A100-SXM4-40GB-MIG-1g.5gb"}},
		{name: "shared suffix dropped", in: "NVIDIA-A100-SXM4-40GB-SHARED", want: ProductPattern{text: "A100-SXM4-40GB"}},
		{name: "repeated vendor prefix", in: "NVIDIA-nvidia-H100", want: ProductPattern{text: "H100"}},
		{name: "glob", in: "H100*", want: ProductPattern{text: "H100*", glob: true}},
		{name: "glob after the vendor", in: "NVIDIA-*", want: ProductPattern{text: "*", glob: true}},
		{name: "only a star", in: "*", want: ProductPattern{text: "*", glob: true}},
		{name: "infix glob", in: "*80GB*", want: ProductPattern{text: "*80GB*", glob: true}},
		{name: "empty", in: "", wantErr: "empty product name"},
		{name: "blank", in: " \t ", wantErr: "empty product name"},
		{name: "vendor prefix only", in: "NVIDIA-", wantErr: "names no model"},
		{name: "vendor only", in: "NVIDIA", wantErr: "names no model"},
		{name: "vendor only, lower case", in: " nvidia ", wantErr: "names no model"},
		{name: "shared suffix only", in: "-SHARED", wantErr: "names no model"},
		{name: "slash", in: "H100/80GB", wantErr: `character '/'`},
		{name: "comma", in: "H100,A100", wantErr: `character ','`},
		{name: "question mark", in: "H10?", wantErr: `character '?'`},
		{name: "non-ASCII", in: "H100é", wantErr: `character 'é'`},
		{name: "newline inside", in: "H100\nA100", want: ProductPattern{text: "H100-A100"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseProductPattern(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseProductPattern(%q) = %v, %v; want an error containing %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseProductPattern(%q): %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(ProductPattern{})); diff != "" {
				t.Errorf("ParseProductPattern(%q) (-want,+got):\n%s", tc.in, diff)
			}
			if got.String() != tc.want.text {
				t.Errorf("String() = %q, want %q", got.String(), tc.want.text)
			}
		})
	}
}

func TestProductPatternMatches(t *testing.T) {
	tests := []struct {
		pattern string
		product string
		want    bool
	}{
		// Exact names: a prefix is not a match.
		{pattern: "H20", product: "NVIDIA-H200", want: false},
		{pattern: "H20", product: "NVIDIA-H20", want: true},
		{pattern: "H200", product: "NVIDIA-H200", want: true},
		{pattern: "H200", product: "nvidia-h200", want: true},
		{pattern: "H200", product: "H200", want: true},
		{pattern: "H200", product: "NVIDIA-H20", want: false},
		{pattern: "H100", product: "NVIDIA-H100-80GB-HBM3", want: false},
		{pattern: "H100-80GB-HBM3", product: "NVIDIA-H100-PCIe", want: false},
		// Case-insensitive, vendor prefix optional on either side.
		{pattern: "h100-80gb-hbm3", product: "NVIDIA-H100-80GB-HBM3", want: true},
		{pattern: "NVIDIA-H100-80GB-HBM3", product: "NVIDIA-H100-80GB-HBM3", want: true},
		{pattern: "NVIDIA-H100-80GB-HBM3", product: "H100-80GB-HBM3", want: true},
		{pattern: "NVIDIA H100 80GB HBM3", product: "NVIDIA-H100-80GB-HBM3", want: true},
		{pattern: "Tesla T4", product: "Tesla-T4", want: true},
		// -SHARED is the business of devicefit.io/sharing.
		{pattern: "H100-80GB-HBM3", product: "NVIDIA-H100-80GB-HBM3-SHARED", want: true},
		{pattern: "H100-80GB-HBM3", product: "NVIDIA-H100-80GB-HBM3-shared", want: true},
		{pattern: "NVIDIA-H100-80GB-HBM3-SHARED", product: "NVIDIA-H100-80GB-HBM3-SHARED", want: true},
		{pattern: "NVIDIA-H100-80GB-HBM3-SHARED", product: "NVIDIA-H100-80GB-HBM3", want: true},
		// A MIG slice is a product of its own.
		{pattern: "A100-SXM4-40GB", product: "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", want: false},
		{pattern: "A100-SXM4-40GB-MIG-1g.5gb", product: "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", want: true},
		{pattern: "A100-SXM4-40GB-MIG-1G.5GB", product: "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", want: true},
		{pattern: "A100-SXM4-40GB-MIG-1g.5gb", product: "NVIDIA-A100-SXM4-40GB-MIG-2g.10gb", want: false},
		{pattern: "A100-SXM4-40GB-MIG-1g.5gb", product: "NVIDIA-A100-SXM4-40GB", want: false},
		{pattern: "A100-SXM4-40GB-MIG-*", product: "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", want: true},
		{pattern: "A100-SXM4-40GB-MIG-*", product: "NVIDIA-A100-SXM4-40GB-MIG-3g.20gb-SHARED", want: true},
		{pattern: "A100-SXM4-40GB-MIG-*", product: "NVIDIA-A100-SXM4-40GB", want: false},
		{pattern: "A100-SXM4-40GB-MIG-*", product: "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb", want: false},
		// Globs.
		{pattern: "*", product: "NVIDIA-H100-80GB-HBM3", want: true},
		{pattern: "*", product: "Tesla-T4", want: true},
		{pattern: "H100*", product: "NVIDIA-H100-80GB-HBM3", want: true},
		{pattern: "H100*", product: "NVIDIA-H100", want: true},
		{pattern: "h100*", product: "NVIDIA-H100-PCIe", want: true},
		{pattern: "H100*", product: "NVIDIA-H200", want: false},
		{pattern: "H100*", product: "NVIDIA-GH100", want: false},
		{pattern: "*80GB*", product: "NVIDIA-H100-80GB-HBM3", want: true},
		{pattern: "*80GB*", product: "NVIDIA-A100-SXM4-80GB", want: true},
		{pattern: "*80GB*", product: "NVIDIA-A100-SXM4-40GB", want: false},
		{pattern: "*-MIG-*", product: "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", want: true},
		{pattern: "*-MIG-*", product: "NVIDIA-A100-SXM4-40GB", want: false},
		{pattern: "A*0", product: "NVIDIA-A100", want: true},
		{pattern: "A*0", product: "NVIDIA-A10G", want: false},
		{pattern: "**H100**", product: "NVIDIA-H100", want: true},
		// The vendor prefix is optional for globs as well.
		{pattern: "NVIDIA*", product: "NVIDIA-H100-80GB-HBM3", want: true},
		{pattern: "nvidia*", product: "NVIDIA-H100-80GB-HBM3", want: true},
		{pattern: "NVIDIA-*", product: "NVIDIA-H100-80GB-HBM3", want: true},
		{pattern: "NVIDIA*", product: "Tesla-T4", want: false},
		{pattern: "*NVIDIA*", product: "NVIDIA-H100", want: true},
	}
	for _, tc := range tests {
		t.Run(tc.pattern+"~"+tc.product, func(t *testing.T) {
			p, err := ParseProductPattern(tc.pattern)
			if err != nil {
				t.Fatalf("ParseProductPattern(%q): %v", tc.pattern, err)
			}
			if got := p.Matches(tc.product); got != tc.want {
				t.Errorf("%q.Matches(%q) = %v, want %v", tc.pattern, tc.product, got, tc.want)
			}
		})
	}
}

func TestProductPatternPathologicalGlob(t *testing.T) {
	// A backtracking matcher that tries every split of every star is
	// exponential here; the single-backtrack one is O(len(pattern) * len(s)).
	tests := []struct {
		pattern string
		product string
		want    bool
	}{
		{pattern: strings.Repeat("*a", 30) + "*b", product: strings.Repeat("a", 100_000), want: false},
		{pattern: strings.Repeat("a*", 30) + "b", product: strings.Repeat("a", 100_000) + "b", want: true},
		{pattern: strings.Repeat("*", 1000) + "x", product: strings.Repeat("y", 100_000), want: false},
		{pattern: "*" + strings.Repeat("ab", 200) + "*c", product: strings.Repeat("ab", 50_000), want: false},
	}
	for _, tc := range tests {
		p, err := ParseProductPattern(tc.pattern)
		if err != nil {
			t.Fatalf("ParseProductPattern: %v", err)
		}
		if got := p.Matches(tc.product); got != tc.want {
			t.Errorf("Matches(%d bytes) with pattern of %d bytes = %v, want %v", len(tc.product), len(tc.pattern), got, tc.want)
		}
	}
}

func TestProductPatternMatchesDoesNotAllocate(t *testing.T) {
	exact, err := ParseProductPattern("H100-80GB-HBM3")
	if err != nil {
		t.Fatal(err)
	}
	glob, err := ParseProductPattern("NVIDIA*80gb*")
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		exact.Matches("NVIDIA-H100-80GB-HBM3-SHARED")
		glob.Matches("NVIDIA-H100-80GB-HBM3")
		glob.Matches("NVIDIA-A100-SXM4-40GB")
	})
	if allocs != 0 {
		t.Errorf("Matches allocates %v times per run, want 0", allocs)
	}
}

func TestSplitProduct(t *testing.T) {
	type split struct {
		Model, MIGProfile string
		Shared            bool
	}
	tests := []struct {
		product string
		want    split
	}{
		{product: "NVIDIA-H100-80GB-HBM3", want: split{Model: "NVIDIA-H100-80GB-HBM3"}},
		{product: "NVIDIA-H100-80GB-HBM3-SHARED", want: split{Model: "NVIDIA-H100-80GB-HBM3", Shared: true}},
		{product: "Tesla-T4-shared", want: split{Model: "Tesla-T4", Shared: true}},
		{product: "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", want: split{Model: "NVIDIA-A100-SXM4-40GB", MIGProfile: "1g.5gb"}},
		{product: "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED", want: split{Model: "NVIDIA-A100-SXM4-40GB", MIGProfile: "1g.5gb", Shared: true}},
		{product: "NVIDIA-A100-SXM4-40GB-MIG-INVALID", want: split{Model: "NVIDIA-A100-SXM4-40GB", MIGProfile: "INVALID"}},
		{product: "A-MIG-B-MIG-2g.10gb", want: split{Model: "A-MIG-B", MIGProfile: "2g.10gb"}},
		{product: "SHARED", want: split{Model: "SHARED"}},
		{product: "-SHARED", want: split{Shared: true}},
		{product: "", want: split{}},
	}
	for _, tc := range tests {
		t.Run(tc.product, func(t *testing.T) {
			model, profile, shared := SplitProduct(tc.product)
			if diff := cmp.Diff(tc.want, split{model, profile, shared}); diff != "" {
				t.Errorf("SplitProduct(%q) (-want,+got):\n%s", tc.product, diff)
			}
		})
	}
}
