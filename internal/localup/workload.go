package localup

import (
	"context"
	"fmt"
	"math/rand"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

const (
	namespace     = "devicefit-demo"
	schedulerName = "devicefit"
	classLabel    = "localup.devicefit.io/class"

	annProducts        = "devicefit.io/products"
	annExcludeProducts = "devicefit.io/exclude-products"
	annMinMemory       = "devicefit.io/min-memory"
	annFamilies        = "devicefit.io/families"
	annMinCompute      = "devicefit.io/min-compute"
	annSharing         = "devicefit.io/sharing"
)

// class is a kind of pod in the demo workload.
type class struct {
	name  string
	count int
	// devices is the per-pod device request (requests == limits).
	devices     v1.ResourceList
	annotations map[string]string
	// allowed lists the gpu.product label values of the nodes the selector
	// admits, worked out by hand from fleet(); nil admits any node. The run
	// fails if a pod lands elsewhere. Kept independent of pkg/devices on
	// purpose: it is a second opinion on the plugin, not a copy of it.
	allowed []string
	// invalid pods must end up unschedulable, with a message saying why.
	invalid bool
	// nodeSelector is the pod's spec.nodeSelector.
	nodeSelector map[string]string
	// claim, when set, gives each pod a claim from a ResourceClaimTemplate
	// of the class (dra.go); allowed then names the products of the
	// devices the claim may get.
	claim *claimSpec
	// needs is the device feature the class shows (features.go): without
	// it the class is left out of the workload, as its fixtures are left
	// out of the fleet. "" for what every supported minor serves.
	needs demoFeature
}

func gpus(name v1.ResourceName, n int64) v1.ResourceList {
	return v1.ResourceList{name: *resource.NewQuantity(n, resource.DecimalSI)}
}

func ann(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// workload is the demo on a control plane that serves s: on the binaries'
// own minor 224 pods of every size and selector, five of which the API
// admits but no node can take; the classes of a feature s lacks are left
// out.
func workload(s served) []class {
	var out []class
	for _, c := range allClasses() {
		if s.has(c.needs) {
			out = append(out, c)
		}
	}
	return out
}

// allClasses are the workload's classes, every feature served.
func allClasses() []class {
	anyWhole := []string{productH100, productA100x40, productL4Shared}
	exclusive := []string{productH100, productA100x40}
	return []class{
		{name: "cpu", count: 70, allowed: nil},

		// Whole GPUs.
		{name: "h100-train-8", count: 2, devices: gpus(resourceGPU, 8),
			annotations: ann(annProducts, productH100), allowed: []string{productH100}},
		{name: "h100-train-4", count: 2, devices: gpus(resourceGPU, 4),
			annotations: ann(annProducts, productH100), allowed: []string{productH100}},
		// 60Gi = 61440 MiB: more than an A100 40GB or an L4 has.
		{name: "bigmem-2", count: 2, devices: gpus(resourceGPU, 2),
			annotations: ann(annMinMemory, "60Gi"), allowed: []string{productH100}},
		{name: "hopper-ampere-2", count: 4, devices: gpus(resourceGPU, 2),
			annotations: ann(annFamilies, "hopper,ampere"), allowed: exclusive},
		{name: "ampere-excl-4", count: 2, devices: gpus(resourceGPU, 4),
			annotations: ann(annFamilies, "ampere", annSharing, "exclusive"), allowed: []string{productA100x40}},
		// H100 is 9.0, L4 8.9, A100 8.0.
		{name: "compute89-1", count: 8, devices: gpus(resourceGPU, 1),
			annotations: ann(annMinCompute, "8.9"), allowed: []string{productH100, productL4Shared}},
		{name: "exclusive-1", count: 8, devices: gpus(resourceGPU, 1),
			annotations: ann(annSharing, "exclusive"), allowed: exclusive},
		{name: "not-h100-1", count: 8, devices: gpus(resourceGPU, 1),
			annotations: ann(annExcludeProducts, productH100), allowed: []string{productA100x40, productL4Shared}},
		{name: "any-gpu-1", count: 12, devices: gpus(resourceGPU, 1), allowed: anyWhole},

		// Time-sliced L4 replicas, selected by the exact label value and by
		// the model name without GFD's -SHARED suffix.
		{name: "l4-shared-1", count: 20, devices: gpus(resourceGPU, 1),
			annotations: ann(annProducts, productL4Shared, annSharing, "any"), allowed: []string{productL4Shared}},
		{name: "l4-1", count: 20, devices: gpus(resourceGPU, 1),
			annotations: ann(annProducts, "NVIDIA-L4"), allowed: []string{productL4Shared}},

		// MIG slices (mixed strategy: one resource per profile).
		{name: "mig-1g", count: 20, devices: gpus("nvidia.com/mig-1g.10gb", 1), allowed: []string{productA100x80}},
		{name: "mig-1g-x2", count: 4, devices: gpus("nvidia.com/mig-1g.10gb", 2), allowed: []string{productA100x80}},
		{name: "mig-2g", count: 8, devices: gpus("nvidia.com/mig-2g.20gb", 1),
			annotations: ann(annFamilies, "ampere"), allowed: []string{productA100x80}},
		{name: "mig-3g", count: 10, devices: gpus("nvidia.com/mig-3g.40gb", 1),
			annotations: ann(annProducts, productA100x80+"-MIG-3g.40gb"), allowed: []string{productA100x80}},

		// DRA (dra.go). nvidia.com/gpu served from ResourceSlices as well as
		// by device plugins: the same annotation selects H100s in both.
		{name: "dra-h100-4", count: 4, devices: gpus(resourceGPU, 4),
			annotations: ann(annProducts, "H100-80GB-HBM3"), allowed: []string{productH100}, needs: featureExtended},
		// Claims from templates, their own CEL narrowing the class.
		{name: "claim-h100-2", count: 3, claim: &claimSpec{class: gpuClass, count: 2,
			selector: `device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3"`}, allowed: []string{productH100}, needs: featureDRA},
		// The MIG node: four 1g.20gb slices fill one A100, so the other stays
		// whole for the whole-A100 claim, whichever comes first.
		{name: "claim-mig-1g", count: 4, claim: &claimSpec{class: migClass, count: 1, tolerateMIG: true}, allowed: []string{productMIG1g},
			needs: featurePartitionable},
		{name: "claim-a100-1", count: 1, claim: &claimSpec{class: gpuClass, count: 1, tolerateMIG: true,
			selector: `device.attributes["gpu.nvidia.com"].productName == "NVIDIA A100-SXM4-80GB"`}, allowed: []string{productA100x80},
			needs: featurePartitionable},
		// The shared pool (consumable capacity): halves and quarters of a
		// GPU, 2000 shares that fill two of its four GPUs when packed, and
		// one claim asking no capacity, which takes a shared GPU whole.
		{name: "claim-half", count: 2, claim: &claimSpec{class: sharedClass, count: 1, shares: 500}, allowed: []string{productL40S},
			needs: featureConsumable},
		{name: "claim-quarter", count: 4, claim: &claimSpec{class: sharedClass, count: 1, shares: 250}, allowed: []string{productL40S},
			needs: featureConsumable},
		{name: "claim-shared-whole", count: 1, claim: &claimSpec{class: sharedClass, count: 1}, allowed: []string{productL40S},
			needs: featureConsumable},

		// Admitted by the API, schedulable nowhere. (A fractional or
		// requests != limits device quantity is rejected by the apiserver
		// already, so it cannot be part of the demo.)
		// More than any node offers: the time-sliced L4 nodes advertise 16.
		{name: "invalid-32-gpus", count: 1, devices: gpus(resourceGPU, 32), invalid: true},
		{name: "invalid-min-memory", count: 1, devices: gpus(resourceGPU, 1),
			annotations: ann(annMinMemory, "lots"), invalid: true},
		{name: "invalid-min-compute", count: 1, devices: gpus(resourceGPU, 1),
			annotations: ann(annMinCompute, "eight"), invalid: true},
		{name: "invalid-product", count: 1, devices: gpus(resourceGPU, 1),
			annotations: ann(annProducts, "NVIDIA-B300-SXM6-288GB"), invalid: true},
		// Its own node selector admits only the A100 40GB nodes, its
		// annotation only H100s: the message must say so on those nodes
		// although DeviceFit's candidates are the H100 nodes
		// (pkg/plugins/devicefit/README.md, "Reasons on the nodes left out").
		{name: "wrong-pool", count: 1, devices: gpus(resourceGPU, 1),
			annotations: ann(annProducts, productH100), nodeSelector: map[string]string{poolLabel: "a100-40"}, invalid: true},
	}
}

// buildPods turns the classes into pods, in an order shuffled by seed: the
// same seed gives the same pods in the same order. routed: the routing
// policy is installed, so some device pods name no scheduler (podScheduler).
func buildPods(classes []class, seed int64, routed bool) []*v1.Pod {
	rng := rand.New(rand.NewSource(seed))
	var pods []*v1.Pod
	for _, c := range classes {
		for i := 0; i < c.count; i++ {
			pods = append(pods, buildPod(c, i, rng, routed))
		}
	}
	rng.Shuffle(len(pods), func(i, j int) { pods[i], pods[j] = pods[j], pods[i] })
	return pods
}

func buildPod(c class, i int, rng *rand.Rand, routed bool) *v1.Pod {
	// Device pods ask for 2-3 cores and 8-11 GiB per device, small enough
	// that a time-sliced L4 node (48 cores, 192 GiB, 16 replicas) runs out
	// of replicas before CPU or memory; CPU pods ask for 1-8 cores.
	var cpu, mem int64
	if len(c.devices) == 0 {
		cpu, mem = 1+rng.Int63n(8), 2+rng.Int63n(15)
	} else {
		var n int64
		for _, q := range c.devices {
			n += q.Value()
		}
		cpu, mem = 2*n+rng.Int63n(2), 8*n+rng.Int63n(4)
	}
	requests := v1.ResourceList{
		v1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(mem<<30, resource.BinarySI),
	}
	limits := v1.ResourceList{}
	for name, q := range c.devices {
		requests[name] = q.DeepCopy()
		limits[name] = q.DeepCopy()
	}
	annotations := map[string]string{}
	for k, v := range c.annotations {
		annotations[k] = v
	}
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        fmt.Sprintf("%s-%d", c.name, i),
			Namespace:   namespace,
			Labels:      map[string]string{classLabel: c.name},
			Annotations: annotations,
		},
		Spec: v1.PodSpec{
			SchedulerName: podScheduler(c, i, routed),
			NodeSelector:  c.nodeSelector,
			Containers: []v1.Container{{
				Name:      "main",
				Image:     "registry.k8s.io/pause:3.10.1",
				Resources: v1.ResourceRequirements{Requests: requests, Limits: limits},
			}},
		},
	}
	if c.claim != nil {
		withClaim(p, c)
	}
	return p
}

// submit creates the namespace, the claim classes' ResourceClaimTemplates
// and the pods, one at a time so that their creation order, and hence the
// scheduling queue's order, is the seed's.
func submit(ctx context.Context, cs kubernetes.Interface, classes []class, pods []*v1.Pod) error {
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", namespace, err)
	}
	for _, c := range classes {
		if c.claim == nil {
			continue
		}
		if _, err := cs.ResourceV1().ResourceClaimTemplates(namespace).Create(ctx, c.template(), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating ResourceClaimTemplate %s: %w", c.name, err)
		}
	}
	for _, p := range pods {
		if _, err := cs.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating pod %s: %w", p.Name, err)
		}
	}
	klog.InfoS("Submitted the workload", "pods", len(pods), "namespace", namespace)
	return nil
}
