package cli

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/devicefit/devicefit/pkg/replay"
)

// SnapshotCache is Snapshot kept in informer caches, for a controller that
// plans again and again (devicefit-defragmenter): after the informers'
// first list, a snapshot reads memory instead of listing every pod of the
// cluster again.
type SnapshotCache struct {
	pods     corelisters.PodLister
	nodes    corelisters.NodeLister
	kinds    []cache.GenericLister
	warnings []string
}

// NewSnapshotCache registers the informers of Snapshot's kinds with
// factory, which the caller starts and waits for afterwards. Each kind is
// listed once first, one object at most: a kind the caller may not list or
// the server does not serve is left out with a warning, as Snapshot does,
// instead of an informer that never syncs.
func NewSnapshotCache(ctx context.Context, cs kubernetes.Interface, factory informers.SharedInformerFactory) (*SnapshotCache, error) {
	c := &SnapshotCache{pods: factory.Core().V1().Pods().Lister(), nodes: factory.Core().V1().Nodes().Lister()}
	for _, k := range informerKinds {
		_, err := k.list(ctx, cs, metav1.ListOptions{Limit: 1})
		w, out := leftOut(k.kind, err)
		switch {
		case out:
			c.warnings = append(c.warnings, w)
			continue
		case err != nil:
			return nil, fmt.Errorf("listing %s: %w", k.kind, err)
		}
		inf, err := factory.ForResource(k.gvr)
		if err != nil {
			return nil, fmt.Errorf("an informer for %s: %w", k.kind, err)
		}
		c.kinds = append(c.kinds, inf.Lister())
	}
	return c, nil
}

// Warnings are the kinds left out, as Snapshot's warnings.
func (c *SnapshotCache) Warnings() []string { return c.warnings }

// Snapshot is the cluster as the caches hold it now. The objects are
// copies: the planner builds a scheduler snapshot and a client of its own
// from them, which must not reach into the informers' objects.
func (c *SnapshotCache) Snapshot() (replay.Cluster, error) {
	var out replay.Cluster
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return out, fmt.Errorf("listing nodes from the cache: %w", err)
	}
	pods, err := c.pods.List(labels.Everything())
	if err != nil {
		return out, fmt.Errorf("listing pods from the cache: %w", err)
	}
	out.Nodes = make([]*v1.Node, len(nodes))
	for i, n := range nodes {
		out.Nodes[i] = n.DeepCopy()
	}
	out.Pods = make([]*v1.Pod, len(pods))
	for i, p := range pods {
		out.Pods[i] = p.DeepCopy()
	}
	for _, l := range c.kinds {
		objs, err := l.List(labels.Everything())
		if err != nil {
			return out, fmt.Errorf("listing from the cache: %w", err)
		}
		for _, o := range objs {
			out.Objects = append(out.Objects, o.DeepCopyObject())
		}
	}
	return out, nil
}
