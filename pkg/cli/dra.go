package cli

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/dra"
	"github.com/devicefit/devicefit/pkg/metrics"
)

// DRAObjects reads the DRA objects the scheduler reads (ResourceSlices,
// DeviceClasses, ResourceClaims) from the API server; nil when it does not
// serve resource.k8s.io/v1.
func DRAObjects(ctx context.Context, cs kubernetes.Interface) (*dra.Objects, error) {
	api := cs.ResourceV1()
	sl, err := api.ResourceSlices().List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing ResourceSlices: %w", err)
	}
	classes, err := api.DeviceClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing DeviceClasses: %w", err)
	}
	claims, err := api.ResourceClaims(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing ResourceClaims: %w", err)
	}
	return &dra.Objects{Slices: Pointers(sl.Items), Classes: Pointers(classes.Items), Claims: Pointers(claims.Items)}, nil
}

// DRAEntries returns the nodes' DRA devices as devicefit_devices counts
// them (pkg/dra over the objects); nil without objects.
func DRAEntries(objects *dra.Objects) (map[string][]metrics.DRAEntry, error) {
	if objects == nil {
		return nil, nil
	}
	return dra.InventorySource(dra.NewTracker(), func() fwk.SharedDRAManager { return objects })()
}
