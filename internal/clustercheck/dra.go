// Package clustercheck reads what the API server holds after a run and
// checks it independently of the scheduler's caches: which scheduler bound
// each pod, whether any node's resources are over-committed, and which
// devices DRA claims hold. The local run's report and the end-to-end tests
// use it alike.
package clustercheck

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/utils/ptr"

	"github.com/devicefit/devicefit/pkg/cli"
	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/dra"
)

// DRA is what the API server holds of DRA at one instant: the slices'
// devices, the classes and the claims, and pkg/dra's view of them (the
// scheduler's reading of the same objects, for reports).
type DRA struct {
	Slices []*resourceapi.ResourceSlice
	Claims []*resourceapi.ResourceClaim
	// Inventory is nil when no slice exists.
	Inventory *devices.DRAInventory
	// View is pkg/dra's view of the objects: devices per node, class and
	// product.
	View    *dra.View
	objects *dra.Objects
	tracker *dra.Tracker
	byID    map[[3]string]*devices.DRADevice
}

// ReadDRA lists the slices, classes and claims (none when the API server
// does not serve resource.k8s.io/v1).
func ReadDRA(ctx context.Context, cs kubernetes.Interface) (*DRA, error) {
	objects, err := cli.DRAObjects(ctx, cs)
	if err != nil {
		return nil, err
	}
	if objects == nil {
		objects = &dra.Objects{}
	}
	d := &DRA{Slices: objects.Slices, Claims: objects.Claims, objects: objects, tracker: dra.NewTracker()}
	if d.View, err = d.tracker.View(ctx, objects); err != nil {
		return nil, fmt.Errorf("reading the DRA objects: %w", err)
	}
	if len(d.Slices) > 0 {
		d.Inventory = devices.NewDRAInventory(d.Slices)
		d.byID = make(map[[3]string]*devices.DRADevice, len(d.Inventory.Devices))
		for _, dev := range d.Inventory.Devices {
			d.byID[[3]string{dev.Driver, dev.Pool, dev.Name}] = dev
		}
	}
	return d, nil
}

// Problems is the DRA invariant (devices.DRAAllocationProblems) and the
// number of devices allocated.
func (d *DRA) Problems() ([]string, int) {
	if d.Inventory == nil {
		return nil, 0
	}
	return devices.DRAAllocationProblems(d.Slices, d.Claims)
}

// FromSlices reports whether node serves resource r from slices: it does
// not advertise r as allocatable and has DRA devices.
func (d *DRA) FromSlices(node *v1.Node, r v1.ResourceName) bool {
	if d.Inventory == nil || d.Inventory.Nodes[node.Name] == nil {
		return false
	}
	_, ok := node.Status.Allocatable[r]
	return !ok
}

// PodProducts returns the products of the devices the pod's claims hold,
// as the scheduler reads them (pkg/dra), or nil when it holds none.
func (d *DRA) PodProducts(p *v1.Pod) ([]string, error) {
	placed, err := d.tracker.PodPlacements(d.objects, p)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, pl := range placed {
		out = append(out, pl.Product)
	}
	return out, nil
}

// PodDevices returns the devices the pod's allocated claims hold: its own
// and the scheduler's claim for its DRA-backed extended resources
// (annotated resource.kubernetes.io/extended-resource-claim, owned by it).
func (d *DRA) PodDevices(pod *v1.Pod) []*devices.DRADevice {
	names := map[string]bool{}
	for i := range pod.Spec.ResourceClaims {
		if n, _, err := resourceclaim.Name(pod, &pod.Spec.ResourceClaims[i]); err == nil && n != nil {
			names[*n] = true
		}
	}
	var out []*devices.DRADevice
	for _, c := range d.Claims {
		if c.Namespace != pod.Namespace || c.Status.Allocation == nil || !(names[c.Name] || extendedClaimOf(c, pod.UID)) {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if dev := d.byID[[3]string{r.Driver, r.Pool, r.Device}]; dev != nil {
				out = append(out, dev)
			}
		}
	}
	return out
}

func extendedClaimOf(c *resourceapi.ResourceClaim, pod types.UID) bool {
	if c.Annotations[resourceapi.ExtendedResourceClaimAnnotation] != "true" {
		return false
	}
	for _, o := range c.OwnerReferences {
		if o.UID == pod && ptr.Deref(o.Controller, false) {
			return true
		}
	}
	return false
}

// SelectorMismatch checks the pod's devicefit.io selector against the
// devices its claims hold, as DeviceFit reads them (pkg/devices), and
// returns the first device it rejects ("" when all pass, or "no device"
// when the pod holds none).
func (d *DRA) SelectorMismatch(pod *v1.Pod, r v1.ResourceName) (string, devices.Mismatch) {
	sel, err := devices.ParseSelector(pod.Annotations)
	if err != nil {
		return "selector does not parse: " + err.Error(), devices.MismatchProduct
	}
	devs := d.PodDevices(pod)
	if len(devs) == 0 {
		return "no allocated claim holds its devices", devices.MismatchProduct
	}
	labels := devices.NewDeviceLabels(r)
	for _, dev := range devs {
		if m := sel.Match(&labels, dev.Facts); m != devices.Match {
			return fmt.Sprintf("device %s/%s (%+v)", dev.Pool, dev.Name, dev.Facts), m
		}
	}
	return "", devices.Match
}

// ReservedForGone names the claims whose status.reservedFor lists a pod
// that does not exist (pods: every pod of the cluster by UID): what the
// resourceclaim controller must clear.
func (d *DRA) ReservedForGone(pods map[types.UID]bool) []string {
	var out []string
	for _, c := range d.Claims {
		for _, ref := range c.Status.ReservedFor {
			if ref.Resource == "pods" && !pods[ref.UID] {
				out = append(out, fmt.Sprintf("claim %s/%s reserved for pod %s (%s), which is gone", c.Namespace, c.Name, ref.Name, ref.UID))
			}
		}
	}
	return out
}
