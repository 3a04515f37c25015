package devices

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
)

func TestValidateResourcePattern(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		// wantErr is a substring of the error; "" means valid.
		wantErr string
	}{
		{name: "exact vendor resource", pattern: "nvidia.com/gpu"},
		{name: "exact with dots in the name", pattern: "nvidia.com/gpu.shared"},
		{name: "exact MIG profile", pattern: "nvidia.com/mig-1g.10gb"},
		{name: "MIG prefix", pattern: "nvidia.com/mig-*"},
		{name: "whole domain as a prefix", pattern: "example.com/*"},
		{name: "subdomain", pattern: "gpu.intel.com/i915"},
		{name: "empty", pattern: "", wantErr: "domain-qualified"},
		{name: "only a star", pattern: "*", wantErr: "domain-qualified"},
		{name: "no domain", pattern: "gpu", wantErr: "domain-qualified"},
		{name: "empty domain", pattern: "/gpu", wantErr: "domain-qualified"},
		{name: "empty name", pattern: "nvidia.com/", wantErr: "domain-qualified"},
		{name: "native kubernetes.io resource", pattern: "kubernetes.io/gpu", wantErr: "kubernetes.io domain"},
		{name: "kubernetes.io subdomain", pattern: "requests.kubernetes.io/gpu", wantErr: "kubernetes.io domain"},
		{name: "kubernetes.io prefix", pattern: "kubernetes.io/*", wantErr: "kubernetes.io domain"},
		{name: "name containing kubernetes.io/ is native upstream", pattern: "notkubernetes.io/gpu", wantErr: "kubernetes.io domain"},
		{name: "DRA implicit extended resource of a DeviceClass (KEP-5004)", pattern: "deviceclass.resource.kubernetes.io/gpu.nvidia.com"},
		{name: "every DeviceClass's implicit resource", pattern: "deviceclass.resource.kubernetes.io/*"},
		{name: "star in the middle", pattern: "nvidia.com/mig-*.10gb", wantErr: "only at the end"},
		{name: "two stars", pattern: "nvidia.com/**", wantErr: "only at the end"},
		{name: "star in the domain", pattern: "*.com/gpu", wantErr: "only at the end"},
		{name: "space in the name", pattern: "nvidia.com/g pu", wantErr: `"nvidia.com/g pu"`},
		{name: "invalid character", pattern: "nvidia.com/gpu!", wantErr: `"nvidia.com/gpu!"`},
		{name: "uppercase domain", pattern: "NVIDIA.com/gpu", wantErr: `"NVIDIA.com/gpu"`},
		{name: "two slashes", pattern: "nvidia.com/gpu/x", wantErr: `"nvidia.com/gpu/x"`},
		{name: "name ends in a dash", pattern: "nvidia.com/gpu-", wantErr: `"nvidia.com/gpu-"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateResourcePattern(tc.pattern)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("ValidateResourcePattern(%q) = %v, want nil", tc.pattern, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("ValidateResourcePattern(%q) = nil, want an error containing %q", tc.pattern, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ValidateResourcePattern(%q) = %q, want it to contain %q", tc.pattern, err, tc.wantErr)
			}
		})
	}
}

func TestNewResourceSet(t *testing.T) {
	tests := []struct {
		name     string
		patterns []string
		wantErr  string
		// in and out are names the set must and must not contain.
		in, out []v1.ResourceName
	}{
		{
			name:     "defaults",
			patterns: DefaultResourcePatterns(),
			in: []v1.ResourceName{
				NVIDIAGPU, NVIDIASharedGPU, "nvidia.com/mig-1g.5gb", "nvidia.com/mig-3g.40gb",
				"amd.com/gpu", "aws.amazon.com/neuron", "aws.amazon.com/neuroncore",
				"aws.amazon.com/neurondevice", "google.com/tpu", "gpu.intel.com/i915",
				"gpu.intel.com/xe", "habana.ai/gaudi",
			},
			out: []v1.ResourceName{
				v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage, "hugepages-2Mi",
				"nvidia.com/gpux", "nvidia.com/gp", "nvidia.com/mig", "amd.com/gpu.shared",
				"example.com/foo", "",
			},
		},
		{
			name:     "exact names only",
			patterns: []string{"nvidia.com/gpu"},
			in:       []v1.ResourceName{"nvidia.com/gpu"},
			out:      []v1.ResourceName{"nvidia.com/gpu.shared", "nvidia.com/mig-1g.5gb", "nvidia.com/GPU"},
		},
		{
			name:     "prefix only",
			patterns: []string{"nvidia.com/mig-*"},
			in:       []v1.ResourceName{"nvidia.com/mig-1g.5gb", "nvidia.com/mig-"},
			out:      []v1.ResourceName{"nvidia.com/gpu", "nvidia.com/mig"},
		},
		{
			name:     "empty list contains nothing",
			patterns: []string{},
			out:      []v1.ResourceName{"nvidia.com/gpu", "nvidia.com/mig-1g.5gb"},
		},
		{
			name:     "one bad pattern rejects the set",
			patterns: []string{"nvidia.com/gpu", "gpu"},
			wantErr:  `"gpu"`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			set, err := NewResourceSet(tc.patterns)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("NewResourceSet(%q) error = %v, want one containing %q", tc.patterns, err, tc.wantErr)
				}
				if set.Contains(NVIDIAGPU) {
					t.Errorf("NewResourceSet(%q) returned a non-empty set with its error", tc.patterns)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewResourceSet(%q): %v", tc.patterns, err)
			}
			for _, name := range tc.in {
				if !set.Contains(name) {
					t.Errorf("Contains(%q) = false, want true", name)
				}
			}
			for _, name := range tc.out {
				if set.Contains(name) {
					t.Errorf("Contains(%q) = true, want false", name)
				}
			}
		})
	}
}

func TestResourceSetZeroValue(t *testing.T) {
	var set ResourceSet
	for _, name := range []v1.ResourceName{NVIDIAGPU, "nvidia.com/mig-1g.5gb", v1.ResourceCPU} {
		if set.Contains(name) {
			t.Errorf("zero ResourceSet: Contains(%q) = true, want false", name)
		}
	}
}

func TestResourceSetContainsDoesNotAllocate(t *testing.T) {
	set, err := NewResourceSet(DefaultResourcePatterns())
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		set.Contains("nvidia.com/mig-1g.10gb")
		set.Contains(v1.ResourceCPU)
	})
	if allocs != 0 {
		t.Errorf("Contains allocates %v times per run, want 0", allocs)
	}
}

func TestDefaultResourcePatterns(t *testing.T) {
	patterns := DefaultResourcePatterns()
	for _, p := range patterns {
		if err := ValidateResourcePattern(p); err != nil {
			t.Errorf("default pattern %q is invalid: %v", p, err)
		}
	}
	// Callers may keep and change the slice.
	patterns[0] = "changed.example.com/x"
	if got := DefaultResourcePatterns()[0]; got != string(NVIDIAGPU) {
		t.Errorf("DefaultResourcePatterns()[0] = %q after a caller changed an earlier result, want %q", got, NVIDIAGPU)
	}
}

func TestMIGProfile(t *testing.T) {
	type result struct {
		Profile string
		OK      bool
	}
	tests := []struct {
		name v1.ResourceName
		want result
	}{
		{name: "nvidia.com/mig-1g.10gb", want: result{"1g.10gb", true}},
		{name: "nvidia.com/mig-3g.40gb", want: result{"3g.40gb", true}},
		{name: "nvidia.com/mig-", want: result{"", false}},
		{name: "nvidia.com/gpu", want: result{"", false}},
		{name: "nvidia.com/gpu.shared", want: result{"", false}},
		{name: "amd.com/mig-1g.10gb", want: result{"", false}},
		{name: "", want: result{"", false}},
	}
	for _, tc := range tests {
		t.Run(string(tc.name), func(t *testing.T) {
			profile, ok := MIGProfile(tc.name)
			if diff := cmp.Diff(tc.want, result{profile, ok}); diff != "" {
				t.Errorf("MIGProfile(%q) (-want,+got):\n%s", tc.name, diff)
			}
		})
	}
}
