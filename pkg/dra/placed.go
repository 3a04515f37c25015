package dra

import (
	"cmp"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/ptr"
)

// Placed is what a bound pod holds from ResourceSlices, per class Resource
// and product (the facts of the devices).
type Placed struct {
	Resource v1.ResourceName
	Product  string
	Devices  int64
}

// PodPlacements returns the devices the pod's allocated claims hold, its
// own claims and the scheduler's claim for its DRA-backed extended
// resources (annotated resource.kubernetes.io/extended-resource-claim and
// owned by the pod, as DynamicResources finds it), sorted by resource and
// product. Devices no slice publishes any more have no product.
func (t *Tracker) PodPlacements(m fwk.SharedDRAManager, pod *v1.Pod) ([]Placed, error) {
	if m == nil || m.ResourceClaims() == nil {
		return nil, nil
	}
	names := map[string]bool{}
	for i := range pod.Spec.ResourceClaims {
		if name, _, err := resourceclaim.Name(pod, &pod.Spec.ResourceClaims[i]); err == nil && name != nil {
			names[*name] = true
		}
	}
	claims, err := m.ResourceClaims().List()
	if err != nil {
		return nil, err
	}
	var mine []*resourceapi.ResourceClaim
	for _, c := range claims {
		if c.Namespace != pod.Namespace || c.Status.Allocation == nil {
			continue
		}
		if names[c.Name] || extendedClaimOf(c, pod) {
			mine = append(mine, c)
		}
	}
	if len(mine) == 0 {
		return nil, nil
	}
	classes := map[string]v1.ResourceName{}
	if list, err := m.DeviceClasses().List(); err == nil {
		resolver := m.DeviceClassResolver()
		for _, dc := range list {
			classes[dc.Name] = ClassResource(resolver, dc)
		}
	}
	var sl []*resourceapi.ResourceSlice
	if m.ResourceSlices() != nil {
		if sl, err = m.ResourceSlices().ListWithDeviceTaintRules(); err != nil {
			return nil, err
		}
	}
	t.mu.Lock()
	t.refresh(sl)
	ids := t.ids
	t.mu.Unlock()

	counts := map[[2]string]int64{}
	for _, c := range mine {
		for _, r := range c.Status.Allocation.Devices.Results {
			class := requestClass(c, r.Request)
			res, ok := classes[class]
			if !ok {
				res = ImplicitResource(class)
			}
			var product string
			if d := ids[structured.MakeDeviceID(r.Driver, r.Pool, r.Device)]; d != nil {
				product = d.Facts.Product
			}
			counts[[2]string{string(res), product}]++
		}
	}
	out := make([]Placed, 0, len(counts))
	for k, n := range counts {
		out = append(out, Placed{Resource: v1.ResourceName(k[0]), Product: k[1], Devices: n})
	}
	slices.SortFunc(out, func(a, b Placed) int {
		return cmp.Or(cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Product, b.Product))
	})
	return out, nil
}

func extendedClaimOf(c *resourceapi.ResourceClaim, pod *v1.Pod) bool {
	if c.Annotations[resourceapi.ExtendedResourceClaimAnnotation] != "true" {
		return false
	}
	for _, or := range c.OwnerReferences {
		if or.UID == pod.UID && ptr.Deref(or.Controller, false) {
			return true
		}
	}
	return false
}

// requestClass returns the DeviceClass of a claim's request ("name", or
// "name/subrequest" for firstAvailable alternatives).
func requestClass(c *resourceapi.ResourceClaim, request string) string {
	main, sub, _ := strings.Cut(request, "/")
	for _, r := range c.Spec.Devices.Requests {
		if r.Name != main {
			continue
		}
		if r.Exactly != nil {
			return r.Exactly.DeviceClassName
		}
		for _, s := range r.FirstAvailable {
			if s.Name == sub {
				return s.DeviceClassName
			}
		}
	}
	return ""
}
