package e2eutil

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// DevicePod is a pod for the devicefit scheduler that requests n of the
// device resource (requests == limits) and 1 CPU and 1Gi, with the
// devicefit.io/ selector annotations given as key, value pairs. n == 0
// requests no device.
func DevicePod(ns, name string, resourceName v1.ResourceName, n int64, annotations ...string) *v1.Pod {
	requests := v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse("1"),
		v1.ResourceMemory: resource.MustParse("1Gi"),
	}
	limits := v1.ResourceList{}
	if n > 0 {
		q := *resource.NewQuantity(n, resource.DecimalSI)
		requests[resourceName] = q
		limits[resourceName] = q
	}
	ann := map[string]string{}
	for i := 0; i+1 < len(annotations); i += 2 {
		ann[annotations[i]] = annotations[i+1]
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: ann},
		Spec: v1.PodSpec{
			SchedulerName: SchedulerName,
			Containers: []v1.Container{{
				Name:      "main",
				Image:     "registry.k8s.io/pause:3.10.1",
				Resources: v1.ResourceRequirements{Requests: requests, Limits: limits},
			}},
		},
	}
}

// CreatePods creates pods in order; pass metav1.DryRunAll in dryRun to only
// have them admitted.
func CreatePods(ctx context.Context, cs kubernetes.Interface, pods []*v1.Pod, dryRun ...string) error {
	for _, p := range pods {
		if _, err := cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{DryRun: dryRun}); err != nil {
			return fmt.Errorf("creating pod %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	return nil
}
