package devicefit

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/devicefit/devicefit/pkg/devices"
)

func TestSignPod(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pl := newPlugin(t, defaultArgs(), nil)
	sign := func(p *v1.Pod) []fwk.SignFragment {
		t.Helper()
		f, status := pl.SignPod(ctx, p)
		if !status.IsSuccess() {
			t.Fatalf("SignPod(%s): %v", p.Name, status)
		}
		return f
	}
	a := sign(gpuPod("2", map[string]string{devices.AnnotationProducts: "NVIDIA-L4", "other": "x"}))
	same := sign(gpuPod("2", map[string]string{devices.AnnotationProducts: "NVIDIA-L4", "other": "y"}))
	if diff := cmp.Diff(a, same); diff != "" {
		t.Errorf("pods differing only in unrelated annotations must sign alike (-a,+b):\n%s", diff)
	}
	for name, p := range map[string]*v1.Pod{
		"other count":    gpuPod("4", map[string]string{devices.AnnotationProducts: "NVIDIA-L4"}),
		"other selector": gpuPod("2", map[string]string{devices.AnnotationProducts: "NVIDIA-H100"}),
		"no selector":    gpuPod("2", nil),
	} {
		if cmp.Equal(a, sign(p)) {
			t.Errorf("%s: signature equals the reference pod's", name)
		}
	}

	_, status := pl.SignPod(ctx, st.MakePod().Name("bad").Res(map[v1.ResourceName]string{devices.NVIDIAGPU: "500m"}).Obj())
	if status.Code() != fwk.Unschedulable {
		t.Errorf("malformed pod: got %v, want Unschedulable (not signable)", status)
	}
}
