package devicefit

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	"k8s.io/utils/ptr"

	"github.com/devicefit/devicefit/pkg/devices"
)

func TestEventsToRegister(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pl := newPlugin(t, defaultArgs(), nil)
	events, err := pl.EventsToRegister(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var targetPod, podDelete bool
	for _, e := range events {
		// Of other pods only the departure of a bound one can resolve a
		// DeviceFit rejection (candidates leaves full nodes out); the pending
		// pod's own update can too.
		switch {
		case e.Event.Resource == fwk.AssignedPod && e.Event.ActionType == fwk.Delete:
			podDelete = true
		case e.Event.Resource == fwk.Pod || e.Event.Resource == fwk.AssignedPod || e.Event.Resource == fwk.UnscheduledPod:
			t.Errorf("registered pod event %v", e.Event)
		}
		targetPod = targetPod || e.Event.Resource == fwk.TargetPod && e.Event.ActionType == fwk.Update
		if e.QueueingHintFn == nil {
			t.Errorf("event %v has no queueing hint", e.Event)
		}
	}
	if !podDelete {
		t.Error("no AssignedPod/Delete event: a pod whose nodes with room were left out by PreFilter would wait for the flush")
	}
	if !targetPod {
		t.Error("no TargetPod/Update event: a corrected annotation would wait for the 5-minute flush")
	}
	if len(events) == 0 || events[0].Event.Resource != fwk.Node {
		t.Fatalf("want node events first, got %v", events)
	}
	if want := fwk.Add | fwk.UpdateNodeLabel | fwk.UpdateNodeAllocatable | fwk.UpdateNodeTaint; events[0].Event.ActionType != want {
		t.Errorf("node action types: got %v, want %v", events[0].Event.ActionType, want)
	}
}

func TestIsSchedulableAfterNodeChange(t *testing.T) {
	base := func() *st.NodeWrapper {
		return st.MakeNode().Name("n").Label(devices.LabelGPUProduct, "NVIDIA-L4").Label("zone", "a").
			Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "8", devices.NVIDIAGPU: "4"})
	}
	taint := v1.Taint{Key: "reserved", Effect: v1.TaintEffectNoSchedule}
	zoneB := map[string]string{"zone": "b"}
	tests := []struct {
		name     string
		old, new *v1.Node
		// selector is the pod's nodeSelector.
		selector map[string]string
		want     fwk.QueueingHint
	}{
		{name: "node added", new: base().Obj(), want: fwk.Queue},
		// PreFilter's largest-node check counts the nodes the pod's own
		// rules admit: one they come to admit may be big enough.
		{name: "untainted", old: base().Taints([]v1.Taint{taint}).Obj(), new: base().Obj(), want: fwk.Queue},
		{name: "tainted", old: base().Obj(), new: base().Taints([]v1.Taint{taint}).Obj(), want: fwk.QueueSkip},
		{name: "uncordoned", old: base().Unschedulable(true).Obj(), new: base().Obj(), want: fwk.Queue},
		{name: "relabelled into the pod's selector", old: base().Obj(), new: base().Label("zone", "b").Obj(), selector: zoneB, want: fwk.Queue},
		{name: "relabelled out of the pod's selector", old: base().Label("zone", "b").Obj(), new: base().Obj(), selector: zoneB, want: fwk.QueueSkip},
		{name: "gpu product relabelled", old: base().Obj(), new: base().Label(devices.LabelGPUProduct, "NVIDIA-L40S").Obj(), want: fwk.Queue},
		{name: "mig strategy switched", old: base().Obj(), new: base().Label(devices.LabelMIGStrategy, "mixed").Obj(), want: fwk.Queue},
		{name: "gpu label removed", old: base().Label(devices.LabelGPUFamily, "ada-lovelace").Obj(), new: base().Obj(), want: fwk.Queue},
		{name: "unrelated label", old: base().Obj(), new: base().Label("zone", "b").Obj(), want: fwk.QueueSkip},
		{
			name: "device allocatable grew",
			old:  base().Obj(),
			new:  base().Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "8", devices.NVIDIAGPU: "8"}).Obj(),
			want: fwk.Queue,
		},
		{
			name: "stale mig resource removed",
			old:  base().Capacity(map[v1.ResourceName]string{devices.NVIDIAGPU: "4", "nvidia.com/mig-1g.10gb": "0"}).Obj(),
			new:  base().Capacity(map[v1.ResourceName]string{devices.NVIDIAGPU: "4"}).Obj(),
			want: fwk.Queue,
		},
		{
			name: "only cpu allocatable changed",
			old:  base().Obj(),
			new:  base().Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "16", devices.NVIDIAGPU: "4"}).Obj(),
			want: fwk.QueueSkip,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			pl := newPlugin(t, defaultArgs(), nil)
			var oldObj interface{}
			if tt.old != nil {
				oldObj = tt.old
			}
			pod := gpuPod("1", nil)
			pod.Spec.NodeSelector = tt.selector
			got, err := pl.isSchedulableAfterNodeChange(logger, pod, oldObj, tt.new)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestIsSchedulableAfterDeviceClassChange(t *testing.T) {
	class := func(name *string) *resourceapi.DeviceClass {
		return &resourceapi.DeviceClass{Spec: resourceapi.DeviceClassSpec{ExtendedResourceName: name}}
	}
	tests := []struct {
		name  string
		class *resourceapi.DeviceClass
		want  fwk.QueueingHint
	}{
		{name: "class serves the pod's resource", class: class(ptr.To("nvidia.com/gpu")), want: fwk.Queue},
		{name: "class serves another resource", class: class(ptr.To("example.com/fpga")), want: fwk.QueueSkip},
		{name: "class without extended resource", class: class(nil), want: fwk.QueueSkip},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			pl := newPlugin(t, defaultArgs(), nil)
			got, err := pl.isSchedulableAfterDeviceClassChange(logger, gpuPod("2", nil), nil, tt.class)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestIsSchedulableAfterPodUpdate(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	pl := newPlugin(t, defaultArgs(), nil)
	pod := func(gpus string, annotations map[string]string) *v1.Pod { return gpuPod(gpus, annotations) }
	l40 := map[string]string{devices.AnnotationProducts: "NVIDIA-L40"}
	tests := []struct {
		name     string
		old, new *v1.Pod
		want     fwk.QueueingHint
	}{
		{name: "product corrected", old: pod("1", l40), new: pod("1", map[string]string{devices.AnnotationProducts: "NVIDIA-L40S"}), want: fwk.Queue},
		{name: "selector annotation removed", old: pod("1", l40), new: pod("1", nil), want: fwk.Queue},
		{name: "malformed value fixed", old: pod("1", map[string]string{devices.AnnotationMinMemory: "lots"}), new: pod("1", map[string]string{devices.AnnotationMinMemory: "40Gi"}), want: fwk.Queue},
		{name: "device count changed", old: pod("8", nil), new: pod("4", nil), want: fwk.Queue},
		{name: "unrelated annotation", old: pod("1", l40), new: pod("1", map[string]string{devices.AnnotationProducts: "NVIDIA-L40", "team": "a"}), want: fwk.QueueSkip},
		{name: "label change", old: pod("1", l40), new: func() *v1.Pod { p := pod("1", l40); p.Labels = map[string]string{"app": "x"}; return p }(), want: fwk.QueueSkip},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := pl.isSchedulableAfterPodUpdate(logger, tc.new, tc.old, tc.new)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestIsSchedulableAfterPodDeleted(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	pl := newPlugin(t, defaultArgs(), nil)
	pending := gpuPod("1", nil)
	bound := func(res v1.ResourceName) *v1.Pod {
		return st.MakePod().Name("gone").Node("n").Res(map[v1.ResourceName]string{res: "1"}).Obj()
	}
	tests := []struct {
		name    string
		pending *v1.Pod
		deleted *v1.Pod
		want    fwk.QueueingHint
	}{
		{name: "bound pod held the requested GPU", pending: pending, deleted: bound(devices.NVIDIAGPU), want: fwk.Queue},
		{name: "bound pod held another device", pending: pending, deleted: bound("nvidia.com/mig-1g.10gb"), want: fwk.QueueSkip},
		{name: "bound pod held no device", pending: pending, deleted: bound(v1.ResourceCPU), want: fwk.QueueSkip},
		{name: "pod was never bound", pending: pending, deleted: st.MakePod().Name("gone").Res(map[v1.ResourceName]string{devices.NVIDIAGPU: "1"}).Obj(), want: fwk.QueueSkip},
		{name: "pending pod wants no device", pending: st.MakePod().Name("cpu").Obj(), deleted: bound(devices.NVIDIAGPU), want: fwk.QueueSkip},
		{name: "bound pod with a fractional device request", pending: pending, deleted: st.MakePod().Name("gone").Node("n").Res(map[v1.ResourceName]string{devices.NVIDIAGPU: "500m"}).Obj(), want: fwk.Queue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pl.isSchedulableAfterPodDeleted(logger, tt.pending, tt.deleted, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
