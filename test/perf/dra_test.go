package perf

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/devicefit/devicefit/pkg/devices"
)

// draObjects is what the API server holds of DRA at the end of a workload.
type draObjects struct {
	slices []*resourceapi.ResourceSlice
	claims []*resourceapi.ResourceClaim
	inv    *devices.DRAInventory // nil without slices
}

func readDRA(ctx context.Context, client clientset.Interface) (*draObjects, error) {
	d := &draObjects{}
	sl, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if apierrors.IsNotFound(err) {
		return d, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing ResourceSlices: %w", err)
	}
	if len(sl.Items) == 0 {
		return d, nil
	}
	claims, err := client.ResourceV1().ResourceClaims(metav1.NamespaceAll).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, fmt.Errorf("listing ResourceClaims: %w", err)
	}
	for i := range sl.Items {
		d.slices = append(d.slices, &sl.Items[i])
	}
	for i := range claims.Items {
		d.claims = append(d.claims, &claims.Items[i])
	}
	d.inv = devices.NewDRAInventory(d.slices)
	return d, nil
}

// selectorMismatch checks the pod's devicefit.io selector against the
// devices the scheduler's claim for its extended resources holds (the claim
// annotated resource.kubernetes.io/extended-resource-claim and owned by
// the pod).
func (d *draObjects) selectorMismatch(pod *v1.Pod) string {
	sel, err := devices.ParseSelector(pod.Annotations)
	if err != nil {
		return "selector does not parse: " + err.Error()
	}
	labels := devices.NewDeviceLabels(devices.NVIDIAGPU)
	for _, c := range d.claims {
		if c.Namespace != pod.Namespace || c.Annotations[resourceapi.ExtendedResourceClaimAnnotation] != "true" || c.Status.Allocation == nil {
			continue
		}
		owned := false
		for _, o := range c.OwnerReferences {
			owned = owned || o.UID == pod.UID && ptr.Deref(o.Controller, false)
		}
		if !owned {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			for _, dev := range d.inv.Devices {
				if dev.Driver == r.Driver && dev.Pool == r.Pool && dev.Name == r.Device {
					if m := sel.Match(&labels, dev.Facts); m != devices.Match {
						return fmt.Sprintf("device %s/%s: %s", r.Pool, r.Device, mismatchNames[m])
					}
				}
			}
		}
		return ""
	}
	return "no allocated claim holds its devices"
}
