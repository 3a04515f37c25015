package cli

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/devicefit/devicefit/pkg/devices"
)

func TestOtherSchedulers(t *testing.T) {
	set, err := devices.NewResourceSet(devices.DefaultResourcePatterns())
	if err != nil {
		t.Fatal(err)
	}
	pod := func(name, scheduler, node string, gpus int64, edit ...func(*v1.Pod)) *v1.Pod {
		p := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name},
			Spec: v1.PodSpec{SchedulerName: scheduler, NodeName: node, Containers: []v1.Container{{Name: "c",
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}}}},
		}
		if gpus > 0 {
			q := *resource.NewQuantity(gpus, resource.DecimalSI)
			p.Spec.Containers[0].Resources.Requests[devices.NVIDIAGPU] = q
			p.Spec.Containers[0].Resources.Limits = v1.ResourceList{devices.NVIDIAGPU: q}
		}
		for _, e := range edit {
			e(p)
		}
		return p
	}
	pods := []*v1.Pod{
		pod("df", "devicefit", "n1", 1),
		pod("spread", "devicefit-spread", "n1", 1),
		pod("b", v1.DefaultSchedulerName, "n1", 1),
		pod("a", v1.DefaultSchedulerName, "n2", 2),
		pod("cpu", v1.DefaultSchedulerName, "n1", 0),
		pod("pending", v1.DefaultSchedulerName, "", 1),
		pod("done", v1.DefaultSchedulerName, "n1", 1, func(p *v1.Pod) { p.Status.Phase = v1.PodSucceeded }),
		pod("claim", "volcano", "n3", 0, func(p *v1.Pod) { p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu"}} }),
	}
	got := OtherSchedulers(pods, set, []string{"devicefit", "devicefit-spread"})
	want := []OtherScheduler{
		{SchedulerName: v1.DefaultSchedulerName, Pods: []string{"ml/a", "ml/b"}, Nodes: 2},
		{SchedulerName: "volcano", Pods: []string{"ml/claim"}, Nodes: 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want,+got):\n%s", diff)
	}
	warnings := OtherSchedulerWarnings(got)
	if len(warnings) != 2 || !strings.HasPrefix(warnings[0], "2 device pods on 2 nodes were placed by default-scheduler, not devicefit (e.g. ml/a, ml/b)") {
		t.Errorf("warnings %q", warnings)
	}
}
