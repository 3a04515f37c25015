package devices

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func mustParseSelector(t testing.TB, annotations map[string]string) Selector {
	t.Helper()
	s, err := ParseSelector(annotations)
	if err != nil {
		t.Fatalf("ParseSelector(%v): %v", annotations, err)
	}
	return s
}

func TestSelectorMatch(t *testing.T) {
	const mig1g10gb v1.ResourceName = "nvidia.com/mig-1g.10gb"
	timeSliced := withLabels(h100Labels, map[string]string{
		LabelGPUProduct: "NVIDIA-H100-80GB-HBM3-SHARED", LabelSharingStrategy: "time-slicing", LabelGPUReplicas: "4",
	})
	h200 := withLabels(h100Labels, map[string]string{LabelGPUProduct: "NVIDIA-H200", LabelGPUMemory: "143771"})
	migInvalid := withLabels(a100SingleLabels, map[string]string{LabelGPUProduct: "NVIDIA-A100-SXM4-40GB-MIG-INVALID"})
	amd := map[string]string{LabelAMDProduct: "AMD_Instinct_MI300X_OAM", LabelAMDFamily: "AI"}

	tests := []struct {
		name        string
		resource    v1.ResourceName
		labels      map[string]string
		annotations map[string]string
		want        Mismatch
	}{
		// The empty selector takes anything servable.
		{name: "empty selector", resource: NVIDIAGPU, labels: h100Labels, want: Match},
		{name: "empty selector, node without labels", resource: NVIDIAGPU, want: Match},
		{name: "empty selector, shared device", resource: NVIDIAGPU, labels: timeSliced, want: Match},
		{name: "empty selector, MIG single", resource: NVIDIAGPU, labels: a100SingleLabels, want: Match},
		{name: "empty selector, AMD", resource: "amd.com/gpu", labels: amd, want: Match},
		{name: "empty selector, Neuron", resource: "aws.amazon.com/neuron", want: Match},

		// MIG: mixed-strategy resources exist only under the mixed strategy.
		{name: "mig profile on a mixed node", resource: mig1g10gb, labels: a100MixedLabels, want: Match},
		{name: "mig profile on an unlabelled node", resource: mig1g10gb, want: Match},
		{name: "mig profile on a single node", resource: mig1g10gb, labels: a100SingleLabels, want: MismatchMIGStrategy},
		{name: "mig profile on a none node", resource: mig1g10gb, labels: h100Labels, want: MismatchMIGStrategy},
		{
			name: "MIG strategy comes before products", resource: mig1g10gb, labels: a100SingleLabels,
			annotations: map[string]string{AnnotationProducts: "H100"}, want: MismatchMIGStrategy,
		},
		{name: "MIG invalid", resource: NVIDIAGPU, labels: migInvalid, want: MismatchMIGInvalid},
		{
			name: "MIG invalid comes before products", resource: NVIDIAGPU, labels: migInvalid,
			annotations: map[string]string{AnnotationProducts: "A100-SXM4-40GB-MIG-INVALID"}, want: MismatchMIGInvalid,
		},

		// Products.
		{
			name: "product matches", resource: NVIDIAGPU, labels: h100Labels,
			annotations: map[string]string{AnnotationProducts: "A100-SXM4-80GB,H100-80GB-HBM3"}, want: Match,
		},
		{
			name: "product differs", resource: NVIDIAGPU, labels: h100Labels,
			annotations: map[string]string{AnnotationProducts: "A100-SXM4-80GB"}, want: MismatchProduct,
		},
		{
			name: "H20 is not H200", resource: NVIDIAGPU, labels: h200,
			annotations: map[string]string{AnnotationProducts: "H20"}, want: MismatchProduct,
		},
		{
			name: "product glob", resource: NVIDIAGPU, labels: h100Labels,
			annotations: map[string]string{AnnotationProducts: "H100*"}, want: Match,
		},
		{
			name: "products on a node without labels", resource: NVIDIAGPU,
			annotations: map[string]string{AnnotationProducts: "H100-80GB-HBM3"}, want: MismatchProduct,
		},
		{
			name: "star on a node without labels", resource: NVIDIAGPU,
			annotations: map[string]string{AnnotationProducts: "*"}, want: MismatchProduct,
		},
		{
			name: "product of a shared device", resource: NVIDIAGPU, labels: timeSliced,
			annotations: map[string]string{AnnotationProducts: "H100-80GB-HBM3"}, want: Match,
		},
		{
			name: "MIG product under mixed", resource: mig1g10gb, labels: a100MixedLabels,
			annotations: map[string]string{AnnotationProducts: "A100-SXM4-80GB-MIG-1g.10gb"}, want: Match,
		},
		{
			name: "whole-GPU product does not select a MIG slice", resource: mig1g10gb, labels: a100MixedLabels,
			annotations: map[string]string{AnnotationProducts: "A100-SXM4-80GB"}, want: MismatchProduct,
		},
		{
			name: "whole-GPU product does not select single-strategy slices", resource: NVIDIAGPU, labels: a100SingleLabels,
			annotations: map[string]string{AnnotationProducts: "A100-SXM4-40GB"}, want: MismatchProduct,
		},
		{
			name: "AMD product", resource: "amd.com/gpu", labels: amd,
			annotations: map[string]string{AnnotationProducts: "AMD_Instinct_MI300X_OAM"}, want: Match,
		},
		{
			name: "products on a Neuron node", resource: "aws.amazon.com/neuron",
			annotations: map[string]string{AnnotationProducts: "*"}, want: MismatchProduct,
		},

		// Excluded products.
		{
			name: "excluded", resource: NVIDIAGPU, labels: h100Labels,
			annotations: map[string]string{AnnotationExcludeProducts: "H100*"}, want: MismatchExcludedProduct,
		},
		{
			name: "exclude H20 keeps H200", resource: NVIDIAGPU, labels: h200,
			annotations: map[string]string{AnnotationExcludeProducts: "H20"}, want: Match,
		},
		{
			name: "exclude on a node without labels", resource: NVIDIAGPU,
			annotations: map[string]string{AnnotationExcludeProducts: "*"}, want: Match,
		},
		{
			name: "selected and excluded", resource: NVIDIAGPU, labels: h100Labels,
			annotations: map[string]string{AnnotationProducts: "H100*", AnnotationExcludeProducts: "*HBM3"},
			want:        MismatchExcludedProduct,
		},

		// Memory: per device, in MiB.
		{
			name: "enough memory", resource: NVIDIAGPU, labels: h100Labels,
			annotations: map[string]string{AnnotationMinMemory: "79Gi"}, want: Match,
		},
		{
			name: "exactly enough memory", resource: NVIDIAGPU, labels: h100Labels,
			annotations: map[string]string{AnnotationMinMemory: "81559Mi"}, want: Match,
		},
		{
			// An "80GB" H100 reports 81559 MiB < 80Gi = 81920 MiB.
			name: "not enough memory", resource: NVIDIAGPU, labels: h100Labels,
			annotations: map[string]string{AnnotationMinMemory: "80Gi"}, want: MismatchMemory,
		},
		{
			name: "MIG slice memory", resource: mig1g10gb, labels: a100MixedLabels,
			annotations: map[string]string{AnnotationMinMemory: "40Gi"}, want: MismatchMemory,
		},
		{
			name: "memory unknown", resource: NVIDIAGPU,
			annotations: map[string]string{AnnotationMinMemory: "1Mi"}, want: MismatchMemory,
		},
		{
			name: "memory garbage", resource: NVIDIAGPU, labels: withLabels(h100Labels, map[string]string{LabelGPUMemory: "lots"}),
			annotations: map[string]string{AnnotationMinMemory: "1Mi"}, want: MismatchMemory,
		},
		{
			name: "AMD memory unknown", resource: "amd.com/gpu", labels: amd,
			annotations: map[string]string{AnnotationMinMemory: "1Gi"}, want: MismatchMemory,
		},

		// Families.
		{
			name: "family", resource: NVIDIAGPU, labels: h100Labels,
			annotations: map[string]string{AnnotationFamilies: "ampere,hopper"}, want: Match,
		},
		{
			name: "family in upper case", resource: NVIDIAGPU, labels: h100Labels,
			annotations: map[string]string{AnnotationFamilies: "HOPPER"}, want: Match,
		},
		{
			name: "other family", resource: NVIDIAGPU, labels: h100Labels,
			annotations: map[string]string{AnnotationFamilies: "ampere"}, want: MismatchFamily,
		},
		{
			name: "family unknown", resource: NVIDIAGPU,
			annotations: map[string]string{AnnotationFamilies: "hopper"}, want: MismatchFamily,
		},
		{
			name: "MIG slice has the parent's family", resource: mig1g10gb, labels: a100MixedLabels,
			annotations: map[string]string{AnnotationFamilies: "ampere"}, want: Match,
		},

		// Compute capability.
		{
			name: "newer compute", resource: NVIDIAGPU, labels: h100Labels,
			annotations: map[string]string{AnnotationMinCompute: "8.0"}, want: Match,
		},
		{
			name: "same compute", resource: NVIDIAGPU, labels: h100Labels,
			annotations: map[string]string{AnnotationMinCompute: "9"}, want: Match,
		},
		{
			name: "older compute", resource: NVIDIAGPU, labels: h100Labels,
			annotations: map[string]string{AnnotationMinCompute: "9.1"}, want: MismatchCompute,
		},
		{
			name: "compute labels missing", resource: NVIDIAGPU,
			labels:      withLabels(h100Labels, map[string]string{LabelGPUComputeMajor: "", LabelGPUComputeMinor: ""}),
			annotations: map[string]string{AnnotationMinCompute: "0.0"}, want: MismatchCompute,
		},
		{
			name: "compute minor missing", resource: NVIDIAGPU,
			labels:      withLabels(h100Labels, map[string]string{LabelGPUComputeMinor: ""}),
			annotations: map[string]string{AnnotationMinCompute: "8.0"}, want: MismatchCompute,
		},
		{
			name: "compute garbage", resource: NVIDIAGPU,
			labels:      withLabels(h100Labels, map[string]string{LabelGPUComputeMajor: "99999999"}),
			annotations: map[string]string{AnnotationMinCompute: "8.0"}, want: MismatchCompute,
		},
		{
			name: "AMD has no compute capability", resource: "amd.com/gpu", labels: amd,
			annotations: map[string]string{AnnotationMinCompute: "1"}, want: MismatchCompute,
		},

		// Sharing.
		{
			name: "exclusive on a whole device", resource: NVIDIAGPU, labels: h100Labels,
			annotations: map[string]string{AnnotationSharing: "exclusive"}, want: Match,
		},
		{
			name: "exclusive on a time-sliced device", resource: NVIDIAGPU, labels: timeSliced,
			annotations: map[string]string{AnnotationSharing: "exclusive"}, want: MismatchShared,
		},
		{
			name: "exclusive on nvidia.com/gpu.shared", resource: NVIDIASharedGPU, labels: h100Labels,
			annotations: map[string]string{AnnotationSharing: "exclusive"}, want: MismatchShared,
		},
		{
			name: "any on a time-sliced device", resource: NVIDIAGPU, labels: timeSliced,
			annotations: map[string]string{AnnotationSharing: "any"}, want: Match,
		},
		{
			name: "exclusive on a MIG slice", resource: NVIDIAGPU, labels: a100SingleLabels,
			annotations: map[string]string{AnnotationSharing: "exclusive"}, want: Match,
		},

		// Order: the first failing check is reported.
		{
			name: "product before memory", resource: NVIDIAGPU, labels: h100Labels,
			annotations: map[string]string{AnnotationProducts: "H200", AnnotationMinMemory: "100Gi"}, want: MismatchProduct,
		},
		{
			name: "memory before family", resource: NVIDIAGPU, labels: h100Labels,
			annotations: map[string]string{AnnotationMinMemory: "100Gi", AnnotationFamilies: "ampere"}, want: MismatchMemory,
		},
		{
			name: "family before compute", resource: NVIDIAGPU, labels: h100Labels,
			annotations: map[string]string{AnnotationFamilies: "ampere", AnnotationMinCompute: "10"}, want: MismatchFamily,
		},
		{
			name: "compute before sharing", resource: NVIDIAGPU, labels: timeSliced,
			annotations: map[string]string{AnnotationMinCompute: "10", AnnotationSharing: "exclusive"}, want: MismatchCompute,
		},
		{
			name: "everything satisfied", resource: NVIDIAGPU, labels: h100Labels,
			annotations: map[string]string{
				AnnotationProducts: "H100-80GB-HBM3", AnnotationExcludeProducts: "H20", AnnotationMinMemory: "79Gi",
				AnnotationFamilies: "hopper", AnnotationMinCompute: "9.0", AnnotationSharing: "exclusive",
			},
			want: Match,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustParseSelector(t, tc.annotations)
			l := NewDeviceLabels(tc.resource)
			d := l.Describe(tc.labels)
			if got := s.Match(&l, d); got != tc.want {
				t.Errorf("Match(%s, %+v) = %d, want %d", tc.resource, d, got, tc.want)
			}
		})
	}
}

func TestZeroSelectorMatch(t *testing.T) {
	// The zero value, not parsed, selects every servable device.
	var s Selector
	l := NewDeviceLabels(NVIDIAGPU)
	for _, labels := range []map[string]string{nil, h100Labels, a100SingleLabels} {
		if got := s.Match(&l, l.Describe(labels)); got != Match {
			t.Errorf("zero Selector: Match(%v) = %d, want Match", labels, got)
		}
	}
}

func TestSelectorMatchDoesNotAllocate(t *testing.T) {
	s := mustParseSelector(t, map[string]string{
		AnnotationProducts: "A100-SXM4-80GB,H100*", AnnotationExcludeProducts: "*-MIG-*,H20",
		AnnotationMinMemory: "40Gi", AnnotationFamilies: "ampere,hopper", AnnotationMinCompute: "8.0",
		AnnotationSharing: "exclusive",
	})
	gpu := NewDeviceLabels(NVIDIAGPU)
	mig := NewDeviceLabels("nvidia.com/mig-1g.10gb")
	h100 := gpu.Describe(h100Labels)
	single := gpu.Describe(a100SingleLabels)
	mixed := mig.Describe(a100MixedLabels)
	allocs := testing.AllocsPerRun(100, func() {
		s.Match(&gpu, h100)
		s.Match(&gpu, single)
		s.Match(&mig, mixed)
		s.Match(&gpu, gpu.Describe(h100Labels))
	})
	if allocs != 0 {
		t.Errorf("Match allocates %v times per run, want 0", allocs)
	}
}
