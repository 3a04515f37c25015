package e2e

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAdmissionProbe(t *testing.T) {
	requireManifests(t)
	ns := newNamespace(t)
	time.Sleep(3 * time.Second)
	q := resource.MustParse
	cases := map[string]func(p *v1.Pod){
		"typo":       func(p *v1.Pod) { p.Annotations = map[string]string{"devicefit.io/product": "x", "devicefit.io/min-memory": "lots", "devicefit.io/sharing": "s"} },
		"frac":       func(p *v1.Pod) { p.Spec.Containers[0].Resources.Requests[resourceGPU] = q("500m"); p.Spec.Containers[0].Resources.Limits[resourceGPU] = q("500m") },
		"unequal":    func(p *v1.Pod) { p.Spec.Containers[0].Resources.Requests[resourceGPU] = q("1"); p.Spec.Containers[0].Resources.Limits[resourceGPU] = q("2") },
		"nolimit":    func(p *v1.Pod) { delete(p.Spec.Containers[0].Resources.Limits, resourceGPU) },
		"big":        func(p *v1.Pod) { p.Spec.Containers[0].Resources.Requests[resourceGPU] = q("3000000000"); p.Spec.Containers[0].Resources.Limits[resourceGPU] = q("3000000000") },
		"ohfrac":     func(p *v1.Pod) { p.Spec.Overhead = v1.ResourceList{resourceGPU: q("500m")} },
		"ohwhole":    func(p *v1.Pod) { p.Spec.Overhead = v1.ResourceList{resourceGPU: q("1")} },
		"rcbig":      func(p *v1.Pod) { p.Spec.RuntimeClassName = ptrTo("e2e-probe-big") },
		"hugeexp":    func(p *v1.Pod) { p.Annotations = map[string]string{"devicefit.io/min-memory": "1e-31125899906842625"} },
		"bigexpgpu":  func(p *v1.Pod) { p.Spec.Containers[0].Resources.Requests[resourceGPU] = q("1e1000"); p.Spec.Containers[0].Resources.Limits[resourceGPU] = q("1e1000") },
	}
	ctx := testContext(t, time.Minute)
	for _, oh := range []string{"3000000000", "500m"} {
		rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "e2e-probe-" + map[string]string{"500m": "frac", "3000000000": "big"}[oh]}, Handler: "runc",
			Overhead: &nodev1.Overhead{PodFixed: v1.ResourceList{resourceGPU: q(oh)}}}
		_, err := s.cp.Client.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{})
		t.Logf("runtimeclass %s: %v", oh, err)
	}
	time.Sleep(2 * time.Second)
	for name, f := range cases {
		p := devicePod(ns, name, resourceGPU, 1)
		f(p)
		start := time.Now()
		err := createPods(testContext(t, 10*time.Second), []*v1.Pod{p}, metav1.DryRunAll)
		t.Logf("%s (%v): %v", name, time.Since(start), err)
	}
}

func ptrTo[T any](v T) *T { return &v }
