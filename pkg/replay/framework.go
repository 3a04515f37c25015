package replay

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/dynamic-resource-allocation/deviceclass/extendedresourcecache"
	resourceslicetracker "k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodevolumelimits"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/util/assumecache"
)

// newFramework builds the framework for a policy, as kube-scheduler's
// scheduler.New does for a profile, over snap and a fake API client that
// holds what the plugins read through informers (volumes, DRA objects and
// the like). The informers are started and synced.
//
// chooser, when not nil, is the DRA manager the framework gets instead of
// the committed one it wraps (an oracle's device choice, modelled by
// DevicePack); its choose function is the caller's to set.
func newFramework(ctx context.Context, pol Policy, registry frameworkruntime.Registry, client *fake.Clientset, snap *internalcache.Snapshot, par int, chooser *choosingDRA) (framework.Framework, *committedDRA, error) {
	logger := klog.FromContext(ctx)
	informerFactory := informers.NewSharedInformerFactory(client, 0)
	var draManager fwk.SharedDRAManager
	var claims *committedDRA
	// synced are the DRA caches fed by handlers, which WaitForCacheSync
	// does not wait for: the first pods must see every slice and class.
	var synced []cache.InformerSynced
	if utilfeature.DefaultFeatureGate.Enabled(features.DynamicResourceAllocation) {
		claimCache := assumecache.NewAssumeCache(logger, informerFactory.Resource().V1().ResourceClaims().Informer(), "ResourceClaim", "", nil)
		// The registration of the cache's own informer handler: synced once
		// the cache holds every claim (the share claims of dra-shares),
		// which the informer's sync alone does not promise.
		synced = append(synced, claimCache.AddEventHandler(cache.ResourceEventHandlerFuncs{}).HasSynced)
		trackerOpts := resourceslicetracker.Options{
			EnableDeviceTaintRules:   utilfeature.DefaultFeatureGate.Enabled(features.DRADeviceTaintRules),
			EnableConsumableCapacity: utilfeature.DefaultFeatureGate.Enabled(features.DRAConsumableCapacity),
			SliceInformer:            informerFactory.Resource().V1().ResourceSlices(),
			KubeClient:               client,
		}
		if trackerOpts.EnableDeviceTaintRules {
			trackerOpts.TaintInformer = informerFactory.Resource().V1().DeviceTaintRules()
		}
		sliceTracker, err := resourceslicetracker.StartTracker(ctx, trackerOpts)
		if err != nil {
			return nil, nil, fmt.Errorf("starting the resource slice tracker: %w", err)
		}
		synced = append(synced, sliceTracker.HasSynced)
		m := dynamicresources.NewDRAManager(ctx, claimCache, sliceTracker, informerFactory)
		if erCache, ok := m.DeviceClassResolver().(*extendedresourcecache.ExtendedResourceCache); ok && erCache != nil {
			// The cache that maps extended resources to DeviceClasses
			// (DRAExtendedResource) fills only from DeviceClass events, as
			// kube-scheduler's event handlers feed it.
			reg, err := informerFactory.Resource().V1().DeviceClasses().Informer().AddEventHandler(erCache)
			if err != nil {
				return nil, nil, fmt.Errorf("watching DeviceClasses: %w", err)
			}
			synced = append(synced, reg.HasSynced)
		}
		claims = newCommittedDRA(m)
		draManager = claims
		if chooser != nil {
			chooser.committedDRA = claims
			draManager = chooser
		}
	}
	profile := pol.Profile
	fw, err := frameworkruntime.NewFramework(ctx, registry, &profile,
		frameworkruntime.WithClientSet(client),
		frameworkruntime.WithInformerFactory(informerFactory),
		frameworkruntime.WithSharedDRAManager(draManager),
		frameworkruntime.WithSharedCSIManager(nodevolumelimits.NewCSIManager(informerFactory.Storage().V1().CSINodes().Lister())),
		frameworkruntime.WithSnapshotSharedLister(snap),
		frameworkruntime.WithEventRecorder(&events.FakeRecorder{}),
		frameworkruntime.WithWaitingPods(frameworkruntime.NewWaitingPodsMap()),
		frameworkruntime.WithPodsInPreBind(frameworkruntime.NewPodsInPreBindMap()),
		frameworkruntime.WithParallelism(par),
		frameworkruntime.WithPodNominator(noNominations{}),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("policy %s: %w", pol.Name, err)
	}
	informerFactory.Start(ctx.Done())
	for typ, ok := range informerFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, nil, fmt.Errorf("policy %s: informer for %v did not sync", pol.Name, typ)
		}
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return nil, nil, fmt.Errorf("policy %s: the DRA caches did not sync", pol.Name)
	}
	return fw, claims, nil
}

// noNominations is the replay's PodNominator: it never preempts, so no pod
// is ever nominated to a node (upstream's queue keeps them in a cluster;
// plugins read them through the framework, which must have one).
type noNominations struct{}

func (noNominations) AddNominatedPod(klog.Logger, fwk.PodInfo, *fwk.NominatingInfo) {}
func (noNominations) DeleteNominatedPodIfExists(*v1.Pod)                            {}
func (noNominations) UpdateNominatedPod(klog.Logger, *v1.Pod, fwk.PodInfo)          {}
func (noNominations) NominatedPodsForNode(string) []fwk.PodInfo                     { return nil }
