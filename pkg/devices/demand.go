package devices

import (
	"fmt"
	"math"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Request is a whole number of devices of one resource.
type Request struct {
	Name  v1.ResourceName
	Count int64
}

// Demand is what a pod needs of each device resource, sorted by name; only
// resources with a positive count appear.
type Demand []Request

// Count returns the pod's demand of name.
func (d Demand) Count(name v1.ResourceName) int64 {
	for _, r := range d {
		if r.Name == name {
			return r.Count
		}
	}
	return 0
}

// DemandError says what is wrong with a device request. Preemption cannot fix
// any of them: the pod itself must change.
type DemandError struct {
	// Container is empty for the pod overhead.
	Container string
	Resource  v1.ResourceName
	Problem   string
}

func (e *DemandError) Error() string {
	if e.Container == "" {
		return fmt.Sprintf("pod overhead: %s %s", e.Resource, e.Problem)
	}
	return fmt.Sprintf("container %q: %s %s", e.Container, e.Resource, e.Problem)
}

// AsksForDevices reports whether the pod asks for a device: resource
// claims, or a non-zero quantity of a resource of set (a malformed one
// counts: the pod still asks for the device, wrongly).
func AsksForDevices(pod *v1.Pod, set ResourceSet) bool {
	if len(pod.Spec.ResourceClaims) > 0 {
		return true
	}
	demand, err := PodDemand(pod, set)
	return err != nil || len(demand) > 0
}

// PodDemand validates the device requests of every container and returns the
// pod's effective demand, computed as the scheduler computes requests: the sum
// over app containers and restartable (sidecar) init containers, the max with
// each plain init container, plus the pod overhead (KEP-753, KEP-688).
//
// The API server already rejects most of what is checked here; the scheduler
// checks again because pods also reach it from other sources (replay, tests,
// older servers) and a wrong count would overcommit a device.
func PodDemand(pod *v1.Pod, set ResourceSet) (Demand, error) {
	d, _, err := PodDemandAndRequests(pod, set)
	return d, err
}

// PodDemandAndRequests is PodDemand, also returning the pod's requests as
// the scheduler sums them (resourcehelper.PodRequests), of which the demand
// is the device part: the sum allocates a map, so a caller that needs both
// sums once.
func PodDemandAndRequests(pod *v1.Pod, set ResourceSet) (Demand, v1.ResourceList, error) {
	for i := range pod.Spec.InitContainers {
		if err := checkContainer(&pod.Spec.InitContainers[i], set); err != nil {
			return nil, nil, err
		}
	}
	for i := range pod.Spec.Containers {
		if err := checkContainer(&pod.Spec.Containers[i], set); err != nil {
			return nil, nil, err
		}
	}
	for name, q := range pod.Spec.Overhead {
		if set.Contains(name) {
			if _, problem := wholeCount(q); problem != "" {
				return nil, nil, &DemandError{Resource: name, Problem: problem}
			}
		}
	}

	var demand Demand
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	for name, q := range reqs {
		if !set.Contains(name) {
			continue
		}
		n, problem := wholeCount(q)
		if problem != "" {
			// Only reachable when whole per-container counts sum past int64.
			return nil, nil, &DemandError{Container: "(pod total)", Resource: name, Problem: problem}
		}
		if n > 0 {
			demand = append(demand, Request{Name: name, Count: n})
		}
	}
	sort.Slice(demand, func(i, j int) bool { return demand[i].Name < demand[j].Name })
	return demand, reqs, nil
}

func checkContainer(c *v1.Container, set ResourceSet) error {
	for name, limit := range c.Resources.Limits {
		if !set.Contains(name) {
			continue
		}
		n, problem := wholeCount(limit)
		if problem != "" {
			return &DemandError{Container: c.Name, Resource: name, Problem: problem}
		}
		req, ok := c.Resources.Requests[name]
		if !ok {
			// The API server defaults the request to the limit; an object that
			// skipped defaulting would be counted as 0 by the scheduler while the
			// kubelet hands out the limit: an overcommit.
			return &DemandError{Container: c.Name, Resource: name,
				Problem: fmt.Sprintf("has limit %s but no request; device requests must equal limits", limit.String())}
		}
		// Compared as counts, not with Quantity.Cmp, which scales both sides
		// to one exponent: a request of "e900000000" would take minutes.
		if m, problem := wholeCount(req); problem != "" || m != n {
			return &DemandError{Container: c.Name, Resource: name,
				Problem: fmt.Sprintf("requests %s but limits %s; device requests must equal limits", req.String(), limit.String())}
		}
	}
	for name, req := range c.Resources.Requests {
		if !set.Contains(name) {
			continue
		}
		if _, ok := c.Resources.Limits[name]; !ok {
			return &DemandError{Container: c.Name, Resource: name,
				Problem: fmt.Sprintf("requests %s without a limit; devices need limits equal to requests", req.String())}
		}
	}
	return nil
}

// maxDeviceCount bounds a sane device count; far above any node, far below
// the int64 arithmetic the scheduler does with it.
const maxDeviceCount = 1 << 31

var maxDeviceQuantity = *resource.NewQuantity(maxDeviceCount, resource.DecimalSI)

// wholeCount returns q as a device count, or a problem when q is negative,
// fractional or absurdly large.
func wholeCount(q resource.Quantity) (int64, string) {
	if q.Sign() < 0 {
		return 0, fmt.Sprintf("quantity %s is negative", q.String())
	}
	// Bound the magnitude before any exact comparison: Cmp scales both
	// sides to a common exponent, and "e900000000" (zero) or "1e900000000"
	// would hold the scheduling loop for minutes. These checks are O(1).
	if q.IsZero() {
		return 0, ""
	}
	if f := q.AsApproximateFloat64(); math.IsNaN(f) || f > maxDeviceCount {
		return 0, fmt.Sprintf("quantity %s is beyond any device count", q.String())
	} else if f < 0.5 {
		return 0, fmt.Sprintf("quantity %s is not a whole number of devices", q.String())
	}
	if q.Cmp(maxDeviceQuantity) > 0 {
		return 0, fmt.Sprintf("quantity %s is beyond any device count", q.String())
	}
	// Value rounds up, so it equals q exactly when q is whole.
	n := q.Value()
	if q.Cmp(*resource.NewQuantity(n, resource.DecimalSI)) != 0 {
		return 0, fmt.Sprintf("quantity %s is not a whole number of devices", q.String())
	}
	return n, ""
}
