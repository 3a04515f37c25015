package skew

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/devicefit/devicefit/internal/controlplane"
	"github.com/devicefit/devicefit/internal/e2eutil"
	"github.com/devicefit/devicefit/internal/gfd"
	"github.com/devicefit/devicefit/internal/nvdra"
	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/support"
)

// Product label values as GPU Feature Discovery writes them, and the DRA
// node's GPUs as NVIDIA's DRA driver names them (NVML, with spaces).
const (
	productH100     = "NVIDIA-H100-80GB-HBM3"
	productA100x40  = "NVIDIA-A100-SXM4-40GB"
	productA100x80  = "NVIDIA-A100-SXM4-80GB"
	productL4Shared = "NVIDIA-L4-SHARED"
	draProduct      = "NVIDIA L40S"

	draNode = "skew-l40s-dra-0"
	// Published only where the server serves partitionable devices
	// (KEP-4815) and consumable capacity (KEP-5075), as NVIDIA's driver
	// does: a server without them drops the fields that make a MIG device
	// share its GPU's memory slices, or a GPU serve several claims.
	partitionableNode = "skew-a100-dra-mig-0"
	sharedNode        = "skew-l40s-shared-0"
	// Classes of the DRA nodes' GPUs: whole GPUs for claims, the same
	// serving nvidia.com/gpu (KEP-5004) where the server has the field, MIG
	// devices, and fractions of shared GPUs.
	draClass      = "gpu.nvidia.com"
	extendedClass = "gpu-extended.nvidia.com"
	migClass      = "mig.nvidia.com"
	sharedClass   = "shared-gpu.nvidia.com"
	migResource   = v1.ResourceName("nvidia.com/mig-1g.10gb")
)

// fleet is one node per device feature, and two alike for packing.
type fleet struct {
	cl       *cluster
	features map[string]support.Feature
	ns       string
}

func labels(product string, memoryMiB, major, minor, count int, family string, strategy devices.MIGStrategy, kv ...string) map[string]string {
	return gfd.GPU{Product: product, MemoryMiB: memoryMiB, Compute: devices.Compute{Major: major, Minor: minor},
		Count: count, Family: family, MIGStrategy: strategy}.Labels(kv...)
}

// newFleet registers the nodes and publishes the DRA node's ResourceSlice
// and DeviceClasses.
func newFleet(t *testing.T, cl *cluster, features map[string]support.Feature) *fleet {
	t.Helper()
	ctx := e2eutil.TestContext(t, time.Minute)
	mig := labels(productA100x80, 81920, 8, 0, 8, "ampere", devices.MIGStrategyMixed, "nvidia.com/mig.capable", "true")
	gfd.AddMIGProfile(mig, "1g.10gb", productA100x80, 16, 9728)
	nodes := []struct {
		name    string
		labels  map[string]string
		devices map[v1.ResourceName]int64
	}{
		{"skew-h100-0", labels(productH100, 81559, 9, 0, 8, "hopper", devices.MIGStrategySingle), map[v1.ResourceName]int64{e2eutil.ResourceGPU: 8}},
		{"skew-a100-40-0", labels(productA100x40, 40960, 8, 0, 8, "ampere", devices.MIGStrategySingle), map[v1.ResourceName]int64{e2eutil.ResourceGPU: 8}},
		{"skew-a100-40-1", labels(productA100x40, 40960, 8, 0, 8, "ampere", devices.MIGStrategySingle), map[v1.ResourceName]int64{e2eutil.ResourceGPU: 8}},
		{"skew-a100-mig-0", mig, map[v1.ResourceName]int64{migResource: 16}},
		{"skew-l4-0", labels(productL4Shared, 23034, 8, 9, 4, "ada-lovelace", devices.MIGStrategySingle,
			"nvidia.com/gpu.sharing-strategy", "time-slicing", "nvidia.com/gpu.replicas", "4"), map[v1.ResourceName]int64{e2eutil.ResourceGPU: 16}},
		{draNode, map[string]string{}, nil},
	}
	for _, n := range nodes {
		if err := (e2eutil.Node{Name: n.name, Labels: n.labels, Devices: n.devices}).Register(ctx, cl.cp.Client, 110, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Where GPUs can be shared, the whole-GPU classes leave the shared
	// ones out, as the local run's do: a claim for a whole GPU must not
	// take a shared GPU alone.
	whole := nvdra.WholeGPUs
	if features[consumable].On {
		whole = nvdra.ExclusiveGPUs
	}
	classes := []*resourceapi.DeviceClass{
		nvdra.Class(draClass, whole, ""),
		nvdra.Class(extendedClass, whole, string(e2eutil.ResourceGPU)),
		nvdra.Class(migClass, nvdra.MIGs, ""),
	}
	slices := []*resourceapi.ResourceSlice{nvdra.NodeSlice(draNode, nvdra.GPUs(0, 4, draProduct, "Ada Lovelace", "8.9.0", "48Gi")...)}
	if features[partitionable].On {
		slices = append(slices, nvdra.Partitionable(partitionableNode, 1, 4, "NVIDIA A100-SXM4-80GB", "1g.20gb", "80Gi", "20Gi")...)
	}
	if features[consumable].On {
		// A 1.35 server rejects this class: its CEL environment has no
		// device.allowMultipleAllocations.
		classes = append(classes, nvdra.Class(sharedClass, nvdra.SharedGPUsOnly, ""))
		slices = append(slices, nvdra.NodeSlice(sharedNode, nvdra.SharedGPUs(0, 1, draProduct, "Ada Lovelace", "8.9.0", "48Gi")...))
	}
	for _, n := range []string{partitionableNode, sharedNode} {
		if err := (e2eutil.Node{Name: n, Labels: map[string]string{}}).Register(ctx, cl.cp.Client, 110, nil); err != nil {
			t.Fatal(err)
		}
	}
	rc := cl.cp.Client.ResourceV1()
	for _, c := range classes {
		if _, err := rc.DeviceClasses().Create(ctx, c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range slices {
		if _, err := rc.ResourceSlices().Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return &fleet{cl: cl, features: features, ns: e2eutil.CreateNamespace(t, cl.cp.Client, "skew")}
}

// placement is one pod of one feature and what became of it.
type placement struct {
	feature string
	pod     *v1.Pod
	// node is where it must bind; "" when the feature is not served and it
	// must be refused.
	node string
	// outcome: "<node>" or "pending: <the scheduler's message>".
	outcome string
}

// pods creates a pod per feature, waits for each to bind or be refused, and
// checks where.
func (f *fleet) pods(t *testing.T) []placement {
	t.Helper()
	ctx := e2eutil.TestContext(t, 3*time.Minute)
	ns := f.ns
	gpu := e2eutil.ResourceGPU
	extendedOn := f.features[extendedResources].On
	ps := []placement{
		{feature: "products", node: "skew-h100-0",
			pod: e2eutil.DevicePod(ns, "h100", gpu, 1, devices.AnnotationProducts, productH100)},
		{feature: "packing", node: "skew-a100-40-?",
			pod: e2eutil.DevicePod(ns, "a100-first", gpu, 2, devices.AnnotationProducts, productA100x40)},
		{feature: "packing", node: "skew-a100-40-?",
			pod: e2eutil.DevicePod(ns, "a100-second", gpu, 2, devices.AnnotationProducts, productA100x40)},
		{feature: "MIG", node: "skew-a100-mig-0", pod: e2eutil.DevicePod(ns, "mig", migResource, 1)},
		{feature: "sharing", node: "skew-l4-0",
			pod: e2eutil.DevicePod(ns, "l4-shared", gpu, 1, devices.AnnotationProducts, productL4Shared)},
		{feature: "DRA claim", node: draNode, pod: claimPod(ns, "dra-claim", "one-gpu")},
		{feature: "DRA MIG (partitionable)", node: when(f.features[partitionable].On, partitionableNode), pod: claimPod(ns, "dra-mig", "one-mig")},
		{feature: "DRA shared GPU (consumable)", node: when(f.features[consumable].On, sharedNode), pod: claimPod(ns, "dra-share-a", "half-gpu")},
		{feature: "DRA shared GPU (consumable)", node: when(f.features[consumable].On, sharedNode), pod: claimPod(ns, "dra-share-b", "half-gpu")},
		{feature: "DRA-backed nvidia.com/gpu", node: when(extendedOn, draNode), pod: onNode(
			e2eutil.DevicePod(ns, "dra-extended", gpu, 1), draNode)},
	}
	for _, tmpl := range []*resourceapi.ResourceClaimTemplate{
		template(ns, "one-gpu", l40s(nvdra.Claim(ns, "", draClass, 1))),
		template(ns, "one-mig", nvdra.Claim(ns, "", migClass, 1)),
		template(ns, "half-gpu", nvdra.ShareClaim(ns, "", sharedClass, 500)),
	} {
		if _, err := f.cl.cp.Client.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// One at a time, so that packing is the scheduler's choice between two
	// empty nodes and then a half-full one.
	for i := range ps {
		if err := e2eutil.CreatePods(ctx, f.cl.cp.Client, []*v1.Pod{ps[i].pod}); err != nil {
			t.Fatal(err)
		}
		ps[i].outcome = f.wait(t, ctx, ps[i].pod, ps[i].node != "")
	}
	for _, p := range ps {
		switch {
		case p.node == "" && strings.HasPrefix(p.outcome, "pending"):
		case p.node == "":
			t.Errorf("Kubernetes %s: %s: pod %s bound to %s; this server does not serve the feature", f.cl.minor, p.feature, p.pod.Name, p.outcome)
		case strings.HasSuffix(p.node, "?") && strings.HasPrefix(p.outcome, strings.TrimSuffix(p.node, "?")):
		case p.outcome != p.node:
			t.Errorf("Kubernetes %s: %s: pod %s: %s, want bound to %s", f.cl.minor, p.feature, p.pod.Name, p.outcome, p.node)
		}
	}
	if ps[1].outcome != ps[2].outcome {
		t.Errorf("Kubernetes %s: packing: the two 2-GPU A100 pods are on %s and %s, want one node", f.cl.minor, ps[1].outcome, ps[2].outcome)
	}
	return append(ps, f.route(t, ctx))
}

// wait waits until the pod is bound (its node) or, when it must not bind,
// marked unschedulable (its message).
func (f *fleet) wait(t *testing.T, ctx context.Context, pod *v1.Pod, bind bool) string {
	t.Helper()
	var last *v1.Pod
	err := controlplane.Poll(ctx, 250*time.Millisecond, 90*time.Second, f.cl.cp.APIServer, func(ctx context.Context) (bool, error) {
		p, err := f.cl.cp.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		if p.Spec.NodeName != "" {
			return true, nil
		}
		return !bind && unschedulable(p) != "", nil
	})
	switch {
	case last != nil && last.Spec.NodeName != "":
		return last.Spec.NodeName
	case last != nil && unschedulable(last) != "":
		return "pending: " + unschedulable(last)
	default:
		t.Errorf("Kubernetes %s: pod %s/%s neither bound nor refused: %v", f.cl.minor, pod.Namespace, pod.Name, err)
		return "not tried"
	}
}

func unschedulable(p *v1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
			return c.Message
		}
	}
	return ""
}

// route: a GPU pod created for the default scheduler. Where the routing
// policy is installed, admission gives it schedulerName devicefit and
// devicefit binds it; elsewhere it stays the default scheduler's.
func (f *fleet) route(t *testing.T, ctx context.Context) placement {
	t.Helper()
	pod := e2eutil.DevicePod(f.ns, "routed", e2eutil.ResourceGPU, 1, devices.AnnotationProducts, productH100)
	pod.Spec.SchedulerName = ""
	p := placement{feature: "routing", pod: pod}
	if !f.features[routing].On {
		created, err := f.cl.cp.Client.CoreV1().Pods(f.ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if created.Spec.SchedulerName != v1.DefaultSchedulerName {
			t.Errorf("Kubernetes %s: without the routing policy the pod has schedulerName %q", f.cl.minor, created.Spec.SchedulerName)
		}
		p.outcome = "not routed (schedulerName " + created.Spec.SchedulerName + ")"
		return p
	}
	// The API server compiles a new policy in the background: dry-run
	// until it mutates.
	err := controlplane.Poll(ctx, 500*time.Millisecond, time.Minute, f.cl.cp.APIServer, func(ctx context.Context) (bool, error) {
		dry, err := f.cl.cp.Client.CoreV1().Pods(f.ns).Create(ctx, pod.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && dry.Spec.SchedulerName == e2eutil.SchedulerName, nil
	})
	if err != nil {
		t.Fatalf("Kubernetes %s: the routing policy never gave a GPU pod schedulerName %s: %v", f.cl.minor, e2eutil.SchedulerName, err)
	}
	if _, err := f.cl.cp.Client.CoreV1().Pods(f.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p.node = "skew-h100-0"
	if p.outcome = f.wait(t, ctx, pod, true); p.outcome != p.node {
		t.Errorf("Kubernetes %s: routing: pod %s: %s, want bound to %s", f.cl.minor, pod.Name, p.outcome, p.node)
	}
	return p
}

func onNode(p *v1.Pod, node string) *v1.Pod {
	p.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node}
	return p
}

// template is a ResourceClaimTemplate of the claim's spec.
func template(ns, name string, claim *resourceapi.ResourceClaim) *resourceapi.ResourceClaimTemplate {
	return &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       resourceapi.ResourceClaimTemplateSpec{Spec: claim.Spec},
	}
}

// l40s narrows the claim to the DRA node's product: the partitionable
// A100's whole GPU is a "gpu" too, and taking it would leave the MIG
// claim nothing.
func l40s(c *resourceapi.ResourceClaim) *resourceapi.ResourceClaim {
	c.Spec.Devices.Requests[0].Exactly.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
		Expression: fmt.Sprintf(`device.attributes[%q].productName == %q`, nvdra.Driver, draProduct)}}}
	return c
}

// claimPod claims what the template names (the resourceclaim controller
// makes the claim from it).
func claimPod(ns, name, template string) *v1.Pod {
	p := e2eutil.DevicePod(ns, name, "", 0)
	p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To(template)}}
	p.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "gpu"}}
	return p
}

// when is node when the feature is on, else "" (the pod must be refused).
func when(on bool, node string) string {
	if on {
		return node
	}
	return ""
}

func (p placement) String() string { return fmt.Sprintf("%s: %s", p.feature, p.outcome) }
