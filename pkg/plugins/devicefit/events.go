package devicefit

import (
	"context"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/util"
)

// deviceLabelDomains prefix the node labels DeviceFit reads (GFD and the
// other vendors' labellers); other label changes cannot change its verdict.
var deviceLabelDomains = []string{"nvidia.com/", "amd.com/", "cloud.google.com/gke-tpu"}

// EventsToRegister lists the events that can turn a DeviceFit rejection into
// a fit. Every DeviceFit verdict depends on the pod and on node labels and
// device allocatable only, never on other pods: the departure of a device pod
// frees capacity, which is NodeResourcesFit's rejection and its hint's job,
// so DeviceFit does not register pod events (they could never help).
func (pl *DeviceFit) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	events := []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel | fwk.UpdateNodeAllocatable}, QueueingHintFn: pl.isSchedulableAfterNodeChange},
	}
	if pl.draExtendedResources {
		// A class that starts serving the resource lifts the largest-node check.
		events = append(events, fwk.ClusterEventWithHint{
			Event: fwk.ClusterEvent{Resource: fwk.DeviceClass, ActionType: fwk.Add | fwk.Update}, QueueingHintFn: pl.isSchedulableAfterDeviceClassChange})
	}
	return events, nil
}

func (pl *DeviceFit) isSchedulableAfterNodeChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
	oldNode, newNode, err := util.As[*v1.Node](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if oldNode == nil {
		logger.V(5).Info("node was added, it may fit the pod's devices", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
		return fwk.Queue, nil
	}
	if deviceLabelsChanged(oldNode.Labels, newNode.Labels) {
		logger.V(5).Info("node's device labels changed", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
		return fwk.Queue, nil
	}
	if pl.deviceAllocatableChanged(oldNode.Status.Allocatable, newNode.Status.Allocatable) {
		logger.V(5).Info("node's device allocatable changed", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
		return fwk.Queue, nil
	}
	logger.V(5).Info("node change does not affect devices", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
	return fwk.QueueSkip, nil
}

func (pl *DeviceFit) isSchedulableAfterDeviceClassChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
	_, class, err := util.As[*resourceapi.DeviceClass](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if class.Spec.ExtendedResourceName == nil {
		return fwk.QueueSkip, nil
	}
	name := v1.ResourceName(*class.Spec.ExtendedResourceName)
	for _, c := range pod.Spec.Containers {
		if _, ok := c.Resources.Limits[name]; ok {
			logger.V(5).Info("device class now serves the pod's extended resource", "pod", klog.KObj(pod), "deviceClass", klog.KObj(class))
			return fwk.Queue, nil
		}
	}
	return fwk.QueueSkip, nil
}

func deviceLabelsChanged(oldLabels, newLabels map[string]string) bool {
	for k, v := range newLabels {
		if isDeviceLabel(k) && oldLabels[k] != v {
			return true
		}
	}
	for k := range oldLabels {
		if _, ok := newLabels[k]; !ok && isDeviceLabel(k) {
			return true
		}
	}
	return false
}

func isDeviceLabel(key string) bool {
	for _, d := range deviceLabelDomains {
		if strings.HasPrefix(key, d) {
			return true
		}
	}
	return false
}

func (pl *DeviceFit) deviceAllocatableChanged(oldAlloc, newAlloc v1.ResourceList) bool {
	for name, q := range newAlloc {
		if !pl.resources.Contains(name) {
			continue
		}
		if old, ok := oldAlloc[name]; !ok || old.Cmp(q) != 0 {
			return true
		}
	}
	for name := range oldAlloc {
		if _, ok := newAlloc[name]; !ok && pl.resources.Contains(name) {
			return true
		}
	}
	return false
}
