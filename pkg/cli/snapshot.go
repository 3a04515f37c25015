package cli

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/devicefit/devicefit/pkg/replay"
)

// lister lists one kind of object the scheduler's plugins read through
// informers, into objects; gvr is the kind's resource, for an informer.
type lister struct {
	kind string
	gvr  schema.GroupVersionResource
	list func(ctx context.Context, cs kubernetes.Interface, opts metav1.ListOptions) ([]runtime.Object, error)
}

func listOf[T any, PT interface {
	*T
	runtime.Object
}](items []T) []runtime.Object {
	out := make([]runtime.Object, len(items))
	for i := range items {
		out[i] = PT(&items[i])
	}
	return out
}

// informerKinds are what upstream's default plugins and DeviceFit read
// besides nodes and pods: InterPodAffinity namespaces; PodTopologySpread's
// default constraints the owners; the volume plugins claims, volumes,
// classes and CSI objects; DynamicResources the DRA objects.
var informerKinds = []lister{
	{"namespaces", v1.SchemeGroupVersion.WithResource("namespaces"), func(ctx context.Context, cs kubernetes.Interface, opts metav1.ListOptions) ([]runtime.Object, error) {
		l, err := cs.CoreV1().Namespaces().List(ctx, opts)
		if err != nil {
			return nil, err
		}
		return listOf(l.Items), nil
	}},
	{"services", v1.SchemeGroupVersion.WithResource("services"), func(ctx context.Context, cs kubernetes.Interface, opts metav1.ListOptions) ([]runtime.Object, error) {
		l, err := cs.CoreV1().Services("").List(ctx, opts)
		if err != nil {
			return nil, err
		}
		return listOf(l.Items), nil
	}},
	{"replicasets", appsv1.SchemeGroupVersion.WithResource("replicasets"), func(ctx context.Context, cs kubernetes.Interface, opts metav1.ListOptions) ([]runtime.Object, error) {
		l, err := cs.AppsV1().ReplicaSets("").List(ctx, opts)
		if err != nil {
			return nil, err
		}
		return listOf(l.Items), nil
	}},
	{"statefulsets", appsv1.SchemeGroupVersion.WithResource("statefulsets"), func(ctx context.Context, cs kubernetes.Interface, opts metav1.ListOptions) ([]runtime.Object, error) {
		l, err := cs.AppsV1().StatefulSets("").List(ctx, opts)
		if err != nil {
			return nil, err
		}
		return listOf(l.Items), nil
	}},
	{"persistentvolumeclaims", v1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), func(ctx context.Context, cs kubernetes.Interface, opts metav1.ListOptions) ([]runtime.Object, error) {
		l, err := cs.CoreV1().PersistentVolumeClaims("").List(ctx, opts)
		if err != nil {
			return nil, err
		}
		return listOf(l.Items), nil
	}},
	{"persistentvolumes", v1.SchemeGroupVersion.WithResource("persistentvolumes"), func(ctx context.Context, cs kubernetes.Interface, opts metav1.ListOptions) ([]runtime.Object, error) {
		l, err := cs.CoreV1().PersistentVolumes().List(ctx, opts)
		if err != nil {
			return nil, err
		}
		return listOf(l.Items), nil
	}},
	{"storageclasses", storagev1.SchemeGroupVersion.WithResource("storageclasses"), func(ctx context.Context, cs kubernetes.Interface, opts metav1.ListOptions) ([]runtime.Object, error) {
		l, err := cs.StorageV1().StorageClasses().List(ctx, opts)
		if err != nil {
			return nil, err
		}
		return listOf(l.Items), nil
	}},
	{"csinodes", storagev1.SchemeGroupVersion.WithResource("csinodes"), func(ctx context.Context, cs kubernetes.Interface, opts metav1.ListOptions) ([]runtime.Object, error) {
		l, err := cs.StorageV1().CSINodes().List(ctx, opts)
		if err != nil {
			return nil, err
		}
		return listOf(l.Items), nil
	}},
	{"csidrivers", storagev1.SchemeGroupVersion.WithResource("csidrivers"), func(ctx context.Context, cs kubernetes.Interface, opts metav1.ListOptions) ([]runtime.Object, error) {
		l, err := cs.StorageV1().CSIDrivers().List(ctx, opts)
		if err != nil {
			return nil, err
		}
		return listOf(l.Items), nil
	}},
	{"resourceslices", resourcev1.SchemeGroupVersion.WithResource("resourceslices"), func(ctx context.Context, cs kubernetes.Interface, opts metav1.ListOptions) ([]runtime.Object, error) {
		l, err := cs.ResourceV1().ResourceSlices().List(ctx, opts)
		if err != nil {
			return nil, err
		}
		return listOf(l.Items), nil
	}},
	{"deviceclasses", resourcev1.SchemeGroupVersion.WithResource("deviceclasses"), func(ctx context.Context, cs kubernetes.Interface, opts metav1.ListOptions) ([]runtime.Object, error) {
		l, err := cs.ResourceV1().DeviceClasses().List(ctx, opts)
		if err != nil {
			return nil, err
		}
		return listOf(l.Items), nil
	}},
	{"resourceclaims", resourcev1.SchemeGroupVersion.WithResource("resourceclaims"), func(ctx context.Context, cs kubernetes.Interface, opts metav1.ListOptions) ([]runtime.Object, error) {
		l, err := cs.ResourceV1().ResourceClaims("").List(ctx, opts)
		if err != nil {
			return nil, err
		}
		return listOf(l.Items), nil
	}},
}

// Snapshot lists the cluster's nodes and pods, which it must, and what the
// plugins read through informers, which it may: a kind the caller may not
// list or the server does not serve is left out with a warning (a plugin
// then sees none of it, e.g. no DRA devices).
func Snapshot(ctx context.Context, cs kubernetes.Interface) (replay.Cluster, []string, error) {
	var c replay.Cluster
	var err error
	if c.Nodes, c.Pods, err = NodesAndPods(ctx, cs); err != nil {
		return c, nil, err
	}
	var warnings []string
	for _, k := range informerKinds {
		objs, err := k.list(ctx, cs, metav1.ListOptions{})
		w, out := leftOut(k.kind, err)
		switch {
		case out:
			warnings = append(warnings, w)
		case err != nil:
			return c, warnings, fmt.Errorf("listing %s: %w", k.kind, err)
		default:
			c.Objects = append(c.Objects, objs...)
		}
	}
	return c, warnings, nil
}

// leftOut reports whether listing kind failed with err because the caller
// may not list it or the server does not serve it: the kind is then left
// out of a snapshot, with the warning returned.
func leftOut(kind string, err error) (string, bool) {
	if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
		return fmt.Sprintf("%s left out of the snapshot: %v", kind, err), true
	}
	return "", false
}

// NodesAndPods lists the cluster's nodes and its pods in every namespace.
func NodesAndPods(ctx context.Context, cs kubernetes.Interface) ([]*v1.Node, []*v1.Pod, error) {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("listing nodes: %w", err)
	}
	pods, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("listing pods: %w", err)
	}
	return Pointers(nodes.Items), Pointers(pods.Items), nil
}

// Pointers returns pointers to the items of a list.
func Pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
