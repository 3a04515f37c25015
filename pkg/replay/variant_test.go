package replay

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// variantTrace is 10 fractional, 20 whole-device (4 naming a model) and 5
// CPU-only pods.
func variantTrace() []PodSpec {
	var pods []PodSpec
	for i := range 35 {
		p := PodSpec{Name: fmt.Sprintf("pod-%02d", i), MilliCPU: 1000 + int64(i), MemoryMiB: 2048}
		switch {
		case i < 10:
			p.GPUs, p.GPUMilli = 1, 250
		case i < 30:
			p.GPUs, p.GPUMilli = 1+int64(i%2), 1000
			if i < 14 {
				p.Products = []string{"V100M32"}
			}
		}
		pods = append(pods, p)
	}
	return pods
}

type variantCounts struct{ fractional, whole, cpu, products int }

func countVariant(pods []PodSpec) variantCounts {
	var c variantCounts
	for _, p := range pods {
		switch {
		case p.GPUs == 0:
			c.cpu++
		case p.Fractional():
			c.fractional++
		default:
			c.whole++
		}
		if len(p.Products) > 0 {
			c.products++
		}
	}
	return c
}

func share(f float64) *float64 { return &f }

func TestVariant(t *testing.T) {
	tests := []struct {
		name string
		o    VariantOptions
		want variantCounts
	}{
		{name: "unchanged", o: VariantOptions{CPUPods: 1, CPUScale: 1}, want: variantCounts{10, 20, 5, 4}},
		{name: "without models", o: VariantOptions{CPUPods: 1, CPUScale: 1, NoProducts: true}, want: variantCounts{10, 20, 5, 0}},
		{name: "every GPU pod fractional", o: VariantOptions{FractionalShare: share(1), CPUPods: 1, CPUScale: 1}, want: variantCounts{30, 0, 5, 0}},
		{name: "a fifth fractional", o: VariantOptions{FractionalShare: share(0.2), CPUPods: 1, CPUScale: 1}, want: variantCounts{6, 24, 5, -1}},
		{name: "no CPU-only pods", o: VariantOptions{CPUPods: 0, CPUScale: 1}, want: variantCounts{10, 20, 0, 4}},
		{name: "CPU-only pods times 2.2", o: VariantOptions{CPUPods: 2.2, CPUScale: 1}, want: variantCounts{10, 20, 11, 4}},
		{name: "CPU-only pods times 0.4", o: VariantOptions{CPUPods: 0.4, CPUScale: 1}, want: variantCounts{10, 20, 2, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Variant(variantTrace(), tt.o)
			if err != nil {
				t.Fatal(err)
			}
			c := countVariant(got)
			if tt.want.products < 0 {
				// Which whole-device pods remain is the draw's.
				c.products = -1
			}
			if c != tt.want {
				t.Errorf("got %+v, want %+v", c, tt.want)
			}
			again, _ := Variant(variantTrace(), tt.o)
			if !reflect.DeepEqual(got, again) {
				t.Error("the same seed drew a different variant")
			}
			// Copies get names of their own, and the CSV reads back.
			var buf bytes.Buffer
			if err := WritePodsCSV(&buf, got); err != nil {
				t.Fatal(err)
			}
			back, err := ReadPodsCSV("variant.csv", &buf)
			if err != nil {
				t.Fatalf("reading the variant back: %v", err)
			}
			for i := range back {
				back[i].Source = got[i].Source
			}
			if !reflect.DeepEqual(back, got) {
				t.Errorf("read back %v, wrote %v", back, got)
			}
		})
	}
}

func TestVariantKeepsOrderAndScalesCPU(t *testing.T) {
	pods := variantTrace()
	got, err := Variant(pods, VariantOptions{Seed: 7, CPUPods: 1, CPUScale: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range got {
		want := pods[i]
		if want.GPUs == 0 {
			want.MilliCPU *= 2
		}
		if !reflect.DeepEqual(p, want) {
			t.Fatalf("pod %d: got %+v, want %+v", i, p, want)
		}
	}
	// A smaller group keeps its pods in the trace's order.
	fewer, err := Variant(pods, VariantOptions{Seed: 7, FractionalShare: share(0.1), CPUPods: 1, CPUScale: 1})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range fewer {
		if !strings.Contains(p.Name, "-v") {
			names = append(names, p.Name)
		}
	}
	if len(names) != 3+20+5 || !sortedStrings(names) {
		t.Errorf("kept pods out of order: %v", names)
	}
	half := VariantOptions{Seed: 1, FractionalShare: share(0.5), CPUPods: 1, CPUScale: 1}
	one, _ := Variant(pods, half)
	half.Seed = 2
	if two, _ := Variant(pods, half); reflect.DeepEqual(one, two) {
		t.Error("seeds 1 and 2 drew the same variant")
	}
}

func sortedStrings(s []string) bool {
	for i := 1; i < len(s); i++ {
		if s[i-1] > s[i] {
			return false
		}
	}
	return true
}

func TestVariantErrors(t *testing.T) {
	cpuOnly := []PodSpec{{Name: "c", MilliCPU: 1000, MemoryMiB: 1}}
	tests := []struct {
		name string
		pods []PodSpec
		o    VariantOptions
		want string
	}{
		{"share above 1", variantTrace(), VariantOptions{FractionalShare: share(1.5), CPUPods: 1, CPUScale: 1}, "between 0 and 1"},
		{"negative CPU pods", variantTrace(), VariantOptions{CPUPods: -1, CPUScale: 1}, ">= 0"},
		{"zero CPU scale", variantTrace(), VariantOptions{CPUPods: 1}, "> 0"},
		{"nothing to draw GPU pods from", cpuOnly, VariantOptions{FractionalShare: share(1), CPUPods: 1, CPUScale: 1}, ""},
		{"CPU pods from none", variantTrace()[:30], VariantOptions{CPUPods: 2, CPUScale: 1}, ""},
		{"fractional pods from none", variantTrace()[10:], VariantOptions{FractionalShare: share(0.5), CPUPods: 1, CPUScale: 1}, "fractional GPU pods: 10 wanted but the trace has none"},
		{"nothing left", cpuOnly, VariantOptions{CPUPods: 0, CPUScale: 1}, "no pods"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Variant(tt.pods, tt.o)
			if tt.want == "" {
				if err != nil {
					t.Errorf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}
