package support

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/features"
)

// gatedAPIs are the feature gates under which the v1.37 scheduler lists and
// watches an API (pkg/scheduler/scheduler.go and eventhandlers.go: the DRA
// manager's informers, the device taint tracker's, the PodGroup and
// CompositePodGroup handlers). The scheduler waits for every informer to
// sync before it takes the leader lease, so an enabled gate whose API the
// server does not list is a scheduler that never schedules: on a 1.35
// server, resource.k8s.io/v1 DeviceTaintRules are neither served nor
// permitted to system:kube-scheduler, and the list fails forever.
// TestGatedAPIsAreInformers keeps these in step with client-go's informers.
var gatedAPIs = []struct {
	Gate      featuregate.Feature
	Resources []schema.GroupVersionResource
}{
	{features.DynamicResourceAllocation, draAPIs},
	{features.DRADeviceTaintRules, []schema.GroupVersionResource{resourceV1.WithResource("devicetaintrules")}},
	{features.GenericWorkload, []schema.GroupVersionResource{
		{Group: "scheduling.k8s.io", Version: "v1beta1", Resource: "podgroups"},
	}},
	{features.CompositePodGroup, []schema.GroupVersionResource{
		{Group: "scheduling.k8s.io", Version: "v1alpha3", Resource: "compositepodgroups"},
	}},
}

var (
	resourceV1 = schema.GroupVersion{Group: "resource.k8s.io", Version: "v1"}
	// draAPIs are what the scheduler's DRA manager lists.
	draAPIs = []schema.GroupVersionResource{
		resourceV1.WithResource("resourceclaims"),
		resourceV1.WithResource("resourceslices"),
		resourceV1.WithResource("deviceclasses"),
	}
)

// DisableUnservedGates turns off every enabled gate of gatedAPIs whose
// resources c does not serve, before the scheduler reads its gates, and
// logs one line for each. A gate locked to on (DynamicResourceAllocation
// since 1.35) cannot be turned off: that server cannot run this scheduler,
// and the error says so.
func DisableUnservedGates(ctx context.Context, c *Cluster, gates featuregate.MutableFeatureGate) error {
	logger := klog.FromContext(ctx)
	off := map[string]bool{}
	for _, g := range gatedAPIs {
		if !gates.Enabled(g.Gate) {
			continue
		}
		var missing []string
		for _, r := range g.Resources {
			if !c.Serves(r) {
				missing = append(missing, r.Resource+"."+r.Group+"/"+r.Version)
			}
		}
		if len(missing) == 0 {
			continue
		}
		logger.Info(fmt.Sprintf("Feature gate %s off: this API server (%s) does not serve %s, which the scheduler would wait for forever",
			g.Gate, c.Minor(), strings.Join(missing, ", ")), "gate", g.Gate)
		off[string(g.Gate)] = false
	}
	if len(off) == 0 {
		return nil
	}
	if err := gates.SetFromMap(off); err != nil {
		return fmt.Errorf("this API server (%s) does not serve what an enabled feature gate needs, and the gate cannot be turned off: %w", c.GitVersion, err)
	}
	return nil
}
