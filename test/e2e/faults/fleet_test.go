package faults

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/devicefit/devicefit/internal/e2eutil"
	"github.com/devicefit/devicefit/internal/gfd"
	"github.com/devicefit/devicefit/pkg/devices"
)

// groupLabel puts a node in a test's group; the test's pods select it.
const groupLabel = "faults.devicefit.io/group"

const resourceGPU = e2eutil.ResourceGPU

// node is one simulated node: labels as GFD writes them, allocatable as
// the device plugins advertise it (capacity is the same).
type node struct {
	name   string
	labels map[string]string
	// devices is the allocatable of each device resource; a zero entry is a
	// resource the node still lists at 0, as a kubelet keeps a resource
	// whose device plugin went away.
	devices map[v1.ResourceName]int64
}

// timeSliced is GFD's labelling of gpus GPUs of product, each time-sliced
// into replicas: product gets the -SHARED suffix and nvidia.com/gpu counts
// the replicas. Many small pods fit on few nodes.
func timeSliced(name, product string, memoryMiB, major, minor, gpus, replicas int, family string) node {
	return node{
		name: name,
		labels: gpuLabels(product+"-SHARED", memoryMiB, major, minor, gpus, family).Labels(
			devices.LabelSharingStrategy, "time-slicing", devices.LabelGPUReplicas, strconv.Itoa(replicas)),
		devices: map[v1.ResourceName]int64{resourceGPU: int64(gpus * replicas)},
	}
}

// gpuLabels: GFD's description of gpus GPUs of product (single MIG strategy).
func gpuLabels(product string, memoryMiB, major, minor, gpus int, family string) gfd.GPU {
	return gfd.GPU{Product: product, MemoryMiB: memoryMiB, Compute: devices.Compute{Major: major, Minor: minor},
		Count: gpus, Family: family, MIGStrategy: devices.MIGStrategySingle}
}

// wholeGPUs is a node of gpus whole GPUs of product.
func wholeGPUs(name, product string, memoryMiB, major, minor, gpus int, family string) node {
	return node{
		name:    name,
		labels:  gpuLabels(product, memoryMiB, major, minor, gpus, family).Labels(),
		devices: map[v1.ResourceName]int64{resourceGPU: int64(gpus)},
	}
}

// registerNodes registers the nodes in group (e2eutil.Node.Register, 250
// pods each) and deletes them when the test ends.
func registerNodes(t *testing.T, group string, nodes ...node) {
	t.Helper()
	ctx := testContext(t, time.Minute)
	for _, n := range nodes {
		node := e2eutil.Node{Name: n.name, Labels: n.labels, Devices: n.devices}
		if err := node.Register(ctx, env.CP.Client, 250, map[string]string{groupLabel: group}); err != nil {
			t.Fatal(err)
		}
		name := n.name
		t.Cleanup(func() {
			err := env.CP.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting node %s: %v", name, err)
			}
		})
	}
}

// updateNode applies change to the node and writes its labels (update) or
// its status (updateStatus), retrying on conflicts.
func updateNode(t *testing.T, name string, status bool, change func(*v1.Node)) {
	t.Helper()
	ctx := testContext(t, time.Minute)
	nodes := env.CP.Client.CoreV1().Nodes()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(n)
		if status {
			_, err = nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{})
		} else {
			_, err = nodes.Update(ctx, n, metav1.UpdateOptions{})
		}
		return err
	})
	if err != nil {
		t.Fatalf("updating node %s: %v", name, err)
	}
}

// setAllocatable sets the node's allocatable of resource to n and leaves its
// capacity: what a device plugin does when a device turns unhealthy.
func setAllocatable(t *testing.T, nodeName string, r v1.ResourceName, n int64) {
	t.Helper()
	updateNode(t, nodeName, true, func(node *v1.Node) {
		node.Status.Allocatable[r] = *resource.NewQuantity(n, resource.DecimalSI)
	})
}

// newNamespace creates a namespace for the test. Its pods are deleted when
// the test ends (at once: no kubelet would confirm a graceful deletion), so
// that later tests' schedulers do not carry them; the namespace itself stays
// (no controller-manager would finalize it).
func newNamespace(t *testing.T) string {
	t.Helper()
	name := e2eutil.CreateNamespace(t, env.CP.Client, "faults")
	t.Cleanup(func() {
		err := env.CP.Client.CoreV1().Pods(name).DeleteCollection(context.Background(),
			metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
		if err != nil {
			t.Errorf("deleting the pods of %s: %v", name, err)
		}
	})
	return name
}

// smallPod is a devicefit pod in group that requests n of resource r (and
// 100m CPU and 128Mi), with devicefit.io annotations as key, value pairs.
func smallPod(ns, group, name string, r v1.ResourceName, n int64, annotations ...string) *v1.Pod {
	p := e2eutil.DevicePod(ns, name, r, n, annotations...)
	p.Spec.NodeSelector = map[string]string{groupLabel: group}
	p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("100m")
	p.Spec.Containers[0].Resources.Requests[v1.ResourceMemory] = resource.MustParse("128Mi")
	// Immediate deletion, should a test delete it.
	p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
	return p
}

// createPods creates the pods with a few workers, in about the given order,
// and retries each creation through API outages (a creation whose answer was
// lost and that exists already is a success) until ctx ends.
func createPods(ctx context.Context, pods []*v1.Pod) error {
	const workers = 8
	next := make(chan *v1.Pod)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range next {
				if err := createPod(ctx, p); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var err error
loop:
	for _, p := range pods {
		select {
		case next <- p:
		case err = <-errs:
			break loop
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	if err == nil {
		err = <-errs
	}
	return err
}

func createPod(ctx context.Context, p *v1.Pod) error {
	var last error
	err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := env.CP.Client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
		switch {
		case err == nil, apierrors.IsAlreadyExists(err):
			return true, nil
		case apierrors.IsInvalid(err), apierrors.IsForbidden(err), apierrors.IsBadRequest(err):
			return false, err
		}
		last = err
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("creating pod %s/%s: %w (last error: %v)", p.Namespace, p.Name, err, last)
	}
	return nil
}

// createPodsInBackground starts createPods; the returned function waits for
// it and fails the test if a creation failed.
func createPodsInBackground(t *testing.T, ctx context.Context, pods []*v1.Pod) (created func()) {
	done := make(chan error, 1)
	go func() { done <- createPods(ctx, pods) }()
	return func() {
		t.Helper()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// deletePods deletes the named pods of ns at once (grace 0), as the pod
// garbage collector or an operator would.
func deletePods(t *testing.T, ns string, names ...string) {
	t.Helper()
	ctx := testContext(t, time.Minute)
	for _, name := range names {
		err := env.CP.Client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		if err != nil {
			t.Fatalf("deleting pod %s/%s: %v", ns, name, err)
		}
	}
}

// testContext is a context for one test's API calls (e2eutil.TestContext).
func testContext(t *testing.T, timeout time.Duration) context.Context {
	return e2eutil.TestContext(t, timeout)
}
