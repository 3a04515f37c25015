package devices

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
)

const (
	amdGPU  v1.ResourceName = "amd.com/gpu"
	tpu     v1.ResourceName = "google.com/tpu"
	mig1g   v1.ResourceName = "nvidia.com/mig-1g.5gb"
	fooRes  v1.ResourceName = "example.com/foo"
	maxSane                 = "2147483648" // maxDeviceCount
)

func defaultSet(t testing.TB) ResourceSet {
	t.Helper()
	set, err := NewResourceSet(DefaultResourcePatterns())
	if err != nil {
		t.Fatalf("NewResourceSet(DefaultResourcePatterns()): %v", err)
	}
	return set
}

// container builds a container whose requests and limits are set apart,
// which the st wrappers cannot do.
func container(name string, requests, limits map[v1.ResourceName]string) v1.Container {
	list := func(m map[v1.ResourceName]string) v1.ResourceList {
		if m == nil {
			return nil
		}
		l := v1.ResourceList{}
		for k, v := range m {
			l[k] = resource.MustParse(v)
		}
		return l
	}
	return v1.Container{Name: name, Resources: v1.ResourceRequirements{Requests: list(requests), Limits: list(limits)}}
}

func TestPodDemand(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
		want Demand
	}{
		{
			name: "no containers",
			pod:  st.MakePod().Name("p").Obj(),
		},
		{
			name: "cpu only",
			pod:  st.MakePod().Name("p").Req(map[v1.ResourceName]string{v1.ResourceCPU: "1", v1.ResourceMemory: "1Gi"}).Obj(),
		},
		{
			name: "single container",
			pod:  st.MakePod().Name("p").Res(map[v1.ResourceName]string{NVIDIAGPU: "2"}).Obj(),
			want: Demand{{Name: NVIDIAGPU, Count: 2}},
		},
		{
			// 2 + 3 = 5
			name: "two containers summed",
			pod: st.MakePod().Name("p").
				Res(map[v1.ResourceName]string{NVIDIAGPU: "2"}).
				Res(map[v1.ResourceName]string{NVIDIAGPU: "3"}).Obj(),
			want: Demand{{Name: NVIDIAGPU, Count: 5}},
		},
		{
			// max(init 4, app 1 + 2) = 4
			name: "init container larger than the app containers",
			pod: st.MakePod().Name("p").
				InitReq(map[v1.ResourceName]string{NVIDIAGPU: "4"}).
				Res(map[v1.ResourceName]string{NVIDIAGPU: "1"}).
				Res(map[v1.ResourceName]string{NVIDIAGPU: "2"}).Obj(),
			want: Demand{{Name: NVIDIAGPU, Count: 4}},
		},
		{
			// max(init 1, app 2) = 2
			name: "init container smaller than the app containers",
			pod: st.MakePod().Name("p").
				InitReq(map[v1.ResourceName]string{NVIDIAGPU: "1"}).
				Res(map[v1.ResourceName]string{NVIDIAGPU: "2"}).Obj(),
			want: Demand{{Name: NVIDIAGPU, Count: 2}},
		},
		{
			// A restartable sidecar runs beside the app: 1 + 2 = 3.
			name: "sidecar added to the sum",
			pod: st.MakePod().Name("p").
				SidecarReq(map[v1.ResourceName]string{NVIDIAGPU: "1"}).
				Res(map[v1.ResourceName]string{NVIDIAGPU: "2"}).Obj(),
			want: Demand{{Name: NVIDIAGPU, Count: 3}},
		},
		{
			// The plain init container runs beside the sidecar started before it:
			// max(sidecar 1 + init 4, sidecar 1 + app 2) = 5.
			name: "sidecar before a plain init container",
			pod: st.MakePod().Name("p").
				SidecarReq(map[v1.ResourceName]string{NVIDIAGPU: "1"}).
				InitReq(map[v1.ResourceName]string{NVIDIAGPU: "4"}).
				Res(map[v1.ResourceName]string{NVIDIAGPU: "2"}).Obj(),
			want: Demand{{Name: NVIDIAGPU, Count: 5}},
		},
		{
			// 1 + overhead 1 = 2
			name: "pod overhead",
			pod: st.MakePod().Name("p").
				Res(map[v1.ResourceName]string{NVIDIAGPU: "1"}).
				Overhead(v1.ResourceList{NVIDIAGPU: resource.MustParse("1"), v1.ResourceCPU: resource.MustParse("250m")}).Obj(),
			want: Demand{{Name: NVIDIAGPU, Count: 2}},
		},
		{
			name: "cpu overhead is not a demand",
			pod: st.MakePod().Name("p").
				Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).
				Overhead(v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m")}).Obj(),
		},
		{
			name: "device beside cpu and memory",
			pod: st.MakePod().Name("p").
				Res(map[v1.ResourceName]string{v1.ResourceCPU: "500m", v1.ResourceMemory: "1Gi", NVIDIAGPU: "1"}).Obj(),
			want: Demand{{Name: NVIDIAGPU, Count: 1}},
		},
		{
			name: "sorted by resource name",
			pod: st.MakePod().Name("p").
				Res(map[v1.ResourceName]string{NVIDIAGPU: "1", mig1g: "3"}).
				Res(map[v1.ResourceName]string{tpu: "4", amdGPU: "2"}).Obj(),
			want: Demand{
				{Name: amdGPU, Count: 2},
				{Name: tpu, Count: 4},
				{Name: NVIDIAGPU, Count: 1},
				{Name: mig1g, Count: 3},
			},
		},
		{
			name: "non-device extended resources ignored",
			pod: st.MakePod().Name("p").
				Res(map[v1.ResourceName]string{fooRes: "3", NVIDIAGPU: "1"}).
				Req(map[v1.ResourceName]string{"example.com/bar": "500m"}).Obj(),
			want: Demand{{Name: NVIDIAGPU, Count: 1}},
		},
		{
			name: "zero count left out",
			pod:  st.MakePod().Name("p").Res(map[v1.ResourceName]string{NVIDIAGPU: "0"}).Obj(),
		},
		{
			name: "whole count written as a decimal quantity",
			pod:  st.MakePod().Name("p").Res(map[v1.ResourceName]string{NVIDIAGPU: "2000m"}).Obj(),
			want: Demand{{Name: NVIDIAGPU, Count: 2}},
		},
		{
			name: "largest sane count",
			pod:  st.MakePod().Name("p").Res(map[v1.ResourceName]string{NVIDIAGPU: maxSane}).Obj(),
			want: Demand{{Name: NVIDIAGPU, Count: 1 << 31}},
		},
	}
	set := defaultSet(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PodDemand(tc.pod, set)
			if err != nil {
				t.Fatalf("PodDemand: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("PodDemand (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestPodDemandErrors(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
		want *DemandError
		// wantProblem is a substring of the problem.
		wantProblem string
	}{
		{
			name:        "fractional quantity",
			pod:         st.MakePod().Name("p").Res(map[v1.ResourceName]string{NVIDIAGPU: "500m"}).Obj(),
			want:        &DemandError{Container: "con0", Resource: NVIDIAGPU},
			wantProblem: "quantity 500m is not a whole number of devices",
		},
		{
			name:        "fractional beyond milli",
			pod:         st.MakePod().Name("p").Res(map[v1.ResourceName]string{NVIDIAGPU: "1000001u"}).Obj(),
			want:        &DemandError{Container: "con0", Resource: NVIDIAGPU},
			wantProblem: "not a whole number",
		},
		{
			name:        "negative quantity",
			pod:         st.MakePod().Name("p").Res(map[v1.ResourceName]string{NVIDIAGPU: "-1"}).Obj(),
			want:        &DemandError{Container: "con0", Resource: NVIDIAGPU},
			wantProblem: "quantity -1 is negative",
		},
		{
			name: "requests differ from limits",
			pod: st.MakePod().Name("p").Containers([]v1.Container{
				container("trainer", map[v1.ResourceName]string{NVIDIAGPU: "1"}, map[v1.ResourceName]string{NVIDIAGPU: "2"}),
			}).Obj(),
			want:        &DemandError{Container: "trainer", Resource: NVIDIAGPU},
			wantProblem: "requests 1 but limits 2",
		},
		{
			name:        "limit without request",
			pod:         st.MakePod().Name("p").Lim(map[v1.ResourceName]string{NVIDIAGPU: "1"}).Obj(),
			want:        &DemandError{Container: "con0", Resource: NVIDIAGPU},
			wantProblem: "has limit 1 but no request",
		},
		{
			name:        "request without limit",
			pod:         st.MakePod().Name("p").Req(map[v1.ResourceName]string{NVIDIAGPU: "1"}).Obj(),
			want:        &DemandError{Container: "con0", Resource: NVIDIAGPU},
			wantProblem: "requests 1 without a limit",
		},
		{
			name:        "huge quantity",
			pod:         st.MakePod().Name("p").Res(map[v1.ResourceName]string{NVIDIAGPU: "1e30"}).Obj(),
			want:        &DemandError{Container: "con0", Resource: NVIDIAGPU},
			wantProblem: "beyond any device count",
		},
		{
			name:        "one past the largest sane count",
			pod:         st.MakePod().Name("p").Res(map[v1.ResourceName]string{NVIDIAGPU: "2147483649"}).Obj(),
			want:        &DemandError{Container: "con0", Resource: NVIDIAGPU},
			wantProblem: "beyond any device count",
		},
		{
			name: "second container at fault",
			pod: st.MakePod().Name("p").
				Res(map[v1.ResourceName]string{NVIDIAGPU: "1"}).
				Res(map[v1.ResourceName]string{mig1g: "1500m"}).Obj(),
			want:        &DemandError{Container: "con1", Resource: mig1g},
			wantProblem: "not a whole number",
		},
		{
			name: "init container at fault",
			pod: st.MakePod().Name("p").
				InitReq(map[v1.ResourceName]string{NVIDIAGPU: "500m"}).
				Res(map[v1.ResourceName]string{NVIDIAGPU: "1"}).Obj(),
			want:        &DemandError{Container: "init-con0", Resource: NVIDIAGPU},
			wantProblem: "not a whole number",
		},
		{
			name: "sidecar at fault",
			pod: st.MakePod().Name("p").
				SidecarReq(map[v1.ResourceName]string{amdGPU: "-2"}).Obj(),
			want:        &DemandError{Container: "sidecar-con0", Resource: amdGPU},
			wantProblem: "negative",
		},
		{
			name: "fractional overhead",
			pod: st.MakePod().Name("p").
				Res(map[v1.ResourceName]string{NVIDIAGPU: "1"}).
				Overhead(v1.ResourceList{NVIDIAGPU: resource.MustParse("500m")}).Obj(),
			want:        &DemandError{Resource: NVIDIAGPU},
			wantProblem: "not a whole number",
		},
		{
			// Each container is sane; the sum is not.
			name: "sum beyond any device count",
			pod: st.MakePod().Name("p").
				Res(map[v1.ResourceName]string{NVIDIAGPU: maxSane}).
				Res(map[v1.ResourceName]string{NVIDIAGPU: maxSane}).Obj(),
			want:        &DemandError{Container: "(pod total)", Resource: NVIDIAGPU},
			wantProblem: "beyond any device count",
		},
	}
	set := defaultSet(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PodDemand(tc.pod, set)
			if err == nil {
				t.Fatalf("PodDemand = %v, want an error", got)
			}
			if got != nil {
				t.Errorf("PodDemand returned demand %v with its error", got)
			}
			var derr *DemandError
			if !errors.As(err, &derr) {
				t.Fatalf("PodDemand error %v (%T) is not a *DemandError", err, err)
			}
			if diff := cmp.Diff(tc.want, derr, cmpopts.IgnoreFields(DemandError{}, "Problem")); diff != "" {
				t.Errorf("DemandError (-want,+got):\n%s", diff)
			}
			if !strings.Contains(derr.Problem, tc.wantProblem) {
				t.Errorf("Problem = %q, want it to contain %q", derr.Problem, tc.wantProblem)
			}
			msg := err.Error()
			wantWhere := `container "` + tc.want.Container + `"`
			if tc.want.Container == "" {
				wantWhere = "pod overhead"
			}
			for _, part := range []string{wantWhere, string(tc.want.Resource), tc.wantProblem} {
				if !strings.Contains(msg, part) {
					t.Errorf("error message %q does not contain %q", msg, part)
				}
			}
		})
	}
}

func TestPodDemandCustomSet(t *testing.T) {
	// A set without NVIDIA resources treats nvidia.com/gpu as any other
	// extended resource: not a device, so not checked.
	set, err := NewResourceSet([]string{"example.com/fpga"})
	if err != nil {
		t.Fatal(err)
	}
	pod := st.MakePod().Name("p").
		Req(map[v1.ResourceName]string{NVIDIAGPU: "500m"}).
		Res(map[v1.ResourceName]string{"example.com/fpga": "2"}).Obj()
	got, err := PodDemand(pod, set)
	if err != nil {
		t.Fatalf("PodDemand: %v", err)
	}
	if diff := cmp.Diff(Demand{{Name: "example.com/fpga", Count: 2}}, got); diff != "" {
		t.Errorf("PodDemand (-want,+got):\n%s", diff)
	}
}

func TestDemandCount(t *testing.T) {
	d := Demand{{Name: amdGPU, Count: 2}, {Name: NVIDIAGPU, Count: 3}}
	tests := []struct {
		name v1.ResourceName
		want int64
	}{
		{name: amdGPU, want: 2},
		{name: NVIDIAGPU, want: 3},
		{name: tpu, want: 0},
	}
	for _, tc := range tests {
		if got := d.Count(tc.name); got != tc.want {
			t.Errorf("Count(%q) = %d, want %d", tc.name, got, tc.want)
		}
	}
	if got := Demand(nil).Count(NVIDIAGPU); got != 0 {
		t.Errorf("nil Demand: Count = %d, want 0", got)
	}
}

// BenchmarkPodDemand is what one PodDemand costs the scheduling cycle; the
// devicefit plugins compute it once per cycle between them
// (shared.ReadPod), where DeviceFit's PreFilter and DevicePack's PreFilter
// and PreScore each did, the last two summing the requests a second time.
func BenchmarkPodDemand(b *testing.B) {
	set, err := NewResourceSet([]string{"nvidia.com/gpu"})
	if err != nil {
		b.Fatal(err)
	}
	pod := st.MakePod().Name("p").
		Req(map[v1.ResourceName]string{v1.ResourceCPU: "8", v1.ResourceMemory: "32Gi", "nvidia.com/gpu": "2"}).Obj()
	pod.Spec.Containers[0].Resources.Limits = v1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")}
	b.ReportAllocs()
	for b.Loop() {
		if d, err := PodDemand(pod, set); err != nil || d.Count("nvidia.com/gpu") != 2 {
			b.Fatalf("demand %v, %v", d, err)
		}
	}
}
