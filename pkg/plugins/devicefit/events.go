package devicefit

import (
	"context"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/util"

	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/plugins/shared"
)

// deviceLabelDomains prefix the node labels DeviceFit reads (GFD and the
// other vendors' labellers); other label changes cannot change its verdict.
var deviceLabelDomains = []string{"nvidia.com/", "amd.com/", "cloud.google.com/gke-tpu"}

// EventsToRegister lists the events that can turn a DeviceFit rejection into
// a fit. Filter's verdicts depend on the pod itself and on node labels and
// device allocatable. PreFilter's node list (candidates) also leaves out
// nodes whose free devices are too few, so the departure of a device pod is
// DeviceFit's event too: a pod whose only nodes with room were left out must
// not wait for NodeResourcesFit, which never saw them. It registers updates
// of the pending pod itself (TargetPod): a corrected devicefit.io annotation
// changes the verdict, and the queue asks only the plugins that rejected the
// pod; without this the pod would wait for the periodic flush of
// unschedulable pods (5 minutes).
func (pl *DeviceFit) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	// The events on which its list may grow are those the list's carrier
	// registers (shared.CarriedListEvents), with DeviceFit's hints.
	events := shared.CarriedListEvents()
	for i := range events {
		switch events[i].Event.Resource {
		case fwk.Node:
			events[i].QueueingHintFn = pl.isSchedulableAfterNodeChange
		case fwk.TargetPod:
			events[i].QueueingHintFn = pl.isSchedulableAfterPodUpdate
		case fwk.AssignedPod:
			events[i].QueueingHintFn = pl.isSchedulableAfterPodDeleted
		}
	}
	if pl.draExtendedResources {
		// A class that starts serving the resource lifts the largest-node check.
		events = append(events, fwk.ClusterEventWithHint{
			Event: fwk.ClusterEvent{Resource: fwk.DeviceClass, ActionType: fwk.Add | fwk.Update}, QueueingHintFn: pl.isSchedulableAfterDeviceClassChange})
		// For a DRA-served resource the candidate list and the selector
		// verdicts read the slices and the devices claims hold: a slice that
		// appears or changes, or a claim that lets go of devices, may help.
		events = append(events,
			fwk.ClusterEventWithHint{Event: fwk.ClusterEvent{Resource: fwk.ResourceSlice, ActionType: fwk.Add | fwk.Update},
				QueueingHintFn: pl.isSchedulableAfterDRAChange},
			fwk.ClusterEventWithHint{Event: fwk.ClusterEvent{Resource: fwk.ResourceClaim, ActionType: fwk.Update | fwk.Delete},
				QueueingHintFn: pl.isSchedulableAfterClaimChange})
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
	// PreFilter's largest-node check counts only the nodes the pod's own
	// rules admit (checkOffers): a node they come to admit (relabelled,
	// untainted, uncordoned) may be the one big enough.
	if rules := shared.NewNodeRules(logger, pod, pl.taintComparisonOperators); rules.Admit(newNode) && !rules.Admit(oldNode) {
		logger.V(5).Info("the pod's own node rules now admit the node", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
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
	// Init containers count too: a pod's demand is the larger of its init
	// and regular containers' (devices.PodDemand).
	name := v1.ResourceName(*class.Spec.ExtendedResourceName)
	demand, err := devices.PodDemand(pod, pl.resources)
	if err != nil {
		return fwk.QueueSkip, nil
	}
	for _, r := range demand {
		if r.Name == name {
			logger.V(5).Info("device class now serves the pod's extended resource", "pod", klog.KObj(pod), "deviceClass", klog.KObj(class))
			return fwk.Queue, nil
		}
	}
	return fwk.QueueSkip, nil
}

// isSchedulableAfterDRAChange queues a pod whose device demand a DeviceClass
// serves: only such pods read the slices here.
func (pl *DeviceFit) isSchedulableAfterDRAChange(logger klog.Logger, pod *v1.Pod, _, newObj interface{}) (fwk.QueueingHint, error) {
	if pl.wantsDRA(pod) {
		logger.V(5).Info("a ResourceSlice changed and the pod's devices may come from slices", "pod", klog.KObj(pod))
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}

// isSchedulableAfterClaimChange queues such a pod when a claim that held
// devices lets go of them: deleted, or its allocation removed.
func (pl *DeviceFit) isSchedulableAfterClaimChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
	oldClaim, newClaim, err := util.As[*resourceapi.ResourceClaim](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	released := newClaim == nil && oldClaim != nil && oldClaim.Status.Allocation != nil ||
		oldClaim != nil && newClaim != nil && oldClaim.Status.Allocation != nil && newClaim.Status.Allocation == nil
	if released && pl.wantsDRA(pod) {
		logger.V(5).Info("a ResourceClaim released its devices", "pod", klog.KObj(pod), "claim", klog.KObj(oldClaim))
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}

// wantsDRA reports whether some device resource the pod asks for is served
// by a DeviceClass.
func (pl *DeviceFit) wantsDRA(pod *v1.Pod) bool {
	demand, err := devices.PodDemand(pod, pl.resources)
	if err != nil {
		return false
	}
	for _, r := range demand {
		if pl.servedByDRA(r.Name) {
			return true
		}
	}
	return false
}

// isSchedulableAfterPodUpdate queues the pending pod when what DeviceFit
// judges of it changed: its devicefit.io annotations or its device requests.
func (pl *DeviceFit) isSchedulableAfterPodUpdate(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
	oldPod, newPod, err := util.As[*v1.Pod](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if !slices.Equal(devices.SelectorAnnotations(oldPod.Annotations), devices.SelectorAnnotations(newPod.Annotations)) {
		logger.V(5).Info("pod's devicefit.io annotations changed", "pod", klog.KObj(newPod))
		return fwk.Queue, nil
	}
	oldDemand, oldErr := devices.PodDemand(oldPod, pl.resources)
	newDemand, newErr := devices.PodDemand(newPod, pl.resources)
	if !slices.Equal(oldDemand, newDemand) || (oldErr == nil) != (newErr == nil) {
		logger.V(5).Info("pod's device requests changed", "pod", klog.KObj(newPod))
		return fwk.Queue, nil
	}
	logger.V(5).Info("pod update does not affect DeviceFit", "pod", klog.KObj(newPod))
	return fwk.QueueSkip, nil
}

// isSchedulableAfterPodDeleted queues the pending pod when a bound pod that
// held some of the device resources it asks for is gone.
func (pl *DeviceFit) isSchedulableAfterPodDeleted(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
	deleted, _, err := util.As[*v1.Pod](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if deleted.Spec.NodeName == "" {
		return fwk.QueueSkip, nil
	}
	want, err := devices.PodDemand(pod, pl.resources)
	if err != nil {
		return fwk.QueueSkip, nil
	}
	held, err := devices.PodDemand(deleted, pl.resources)
	if err != nil {
		// Its requests do not parse as whole devices, yet it was bound: it
		// may have held some; queueing costs one cycle.
		return fwk.Queue, nil
	}
	for _, r := range want {
		if held.Count(r.Name) > 0 {
			logger.V(5).Info("a pod holding the requested devices was deleted", "pod", klog.KObj(pod), "deletedPod", klog.KObj(deleted), "resource", r.Name)
			return fwk.Queue, nil
		}
	}
	logger.V(5).Info("deleted pod held none of the requested devices", "pod", klog.KObj(pod), "deletedPod", klog.KObj(deleted))
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
