package localup

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/devicefit/devicefit/internal/clustercheck"
	"github.com/devicefit/devicefit/internal/nvdra"
	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/dra"
)

// The DRA pools of the fleet: nodes with no device allocatable and no GFD
// labels, whose GPUs NVIDIA's DRA driver would publish in ResourceSlices
// (published here with its attribute names; no driver runs, as no kubelet
// does). A DeviceClass serves nvidia.com/gpu from the whole GPUs (KEP-5004),
// so pods keep asking for nvidia.com/gpu; another class selects the MIG
// devices of the partitionable pool (a GPU and its partitions over shared
// counters, KEP-4815), which pods get through ResourceClaimTemplates.
// That node is tainted for MIG work, as operators dedicate such nodes:
// without the taint, pods asking nvidia.com/gpu would take its whole GPUs
// (the class serves them too) and leave no slice to cut.
//
// The shared pool publishes its GPUs as NVIDIA's driver does under its
// ConsumableShares gate (consumable capacity, KEP-5075):
// allowMultipleAllocations and 1000 shares each (nvdra.SharedGPU). Its own
// class selects them, and the nvidia.com/gpu class only the others, so that
// no pod asking nvidia.com/gpu holds a shared GPU alone; claims ask the
// shared class for 500 or 250 shares (capacity.requests).
//
// A control plane that does not serve one of those features (features.go;
// 1.35 serves none of the three) gets neither its pool nor its class.
const (
	migTaintKey = "localup.devicefit.io/mig"

	gpuClass      = "gpu.nvidia.com"
	migClass      = "mig.nvidia.com"
	sharedClass   = "shared-gpu.nvidia.com"
	productMIG1g  = productA100x80 + "-MIG-1g.20gb"
	productL40S   = "NVIDIA-L40S"
	draPoolH100   = "h100-dra"
	draPoolA100   = "a100-dra-mig"
	draPoolShared = "l40s-dra-shared"
	draPoolSuffix = " (DRA)"
)

// draNodes are the DRA pools' nodes and their slices on a control plane
// that serves s: a pool of a feature s lacks is left out, node and all.
func draNodes(s served) (nodes []pool, slices []*resourceapi.ResourceSlice) {
	if !s.has(featureDRA) {
		return nil, nil
	}
	nodes = append(nodes, pool{name: draPoolH100, nodes: 2, cpu: "224", memory: "2Ti", labels: map[string]string{}})
	for i := range 2 {
		slices = append(slices, nvdra.NodeSlice(fmt.Sprintf("%s-%d", draPoolH100, i),
			nvdra.GPUs(0, 8, "NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", "81559Mi")...))
	}
	if s.has(featurePartitionable) {
		// Two A100 80GB, each either whole or four 1g.20gb slices.
		nodes = append(nodes, pool{name: draPoolA100, nodes: 1, cpu: "256", memory: "2Ti", labels: map[string]string{}})
		slices = append(slices, nvdra.Partitionable(draPoolA100+"-0", 2, 4, "NVIDIA A100-SXM4-80GB", "1g.20gb", "80Gi", "20Gi")...)
	}
	if s.has(featureConsumable) {
		nodes = append(nodes, pool{name: draPoolShared, nodes: 2, cpu: "64", memory: "512Gi", labels: map[string]string{}})
		for i := range 2 {
			slices = append(slices, nvdra.NodeSlice(fmt.Sprintf("%s-%d", draPoolShared, i),
				nvdra.SharedGPUs(0, 2, "NVIDIA L40S", "Ada Lovelace", "8.9.0", "46068Mi")...))
		}
	}
	return nodes, slices
}

// draClasses are the DeviceClasses on a control plane that serves s. The
// whole-GPU class serves nvidia.com/gpu only where DRA-backed extended
// resources are served, and tells shared GPUs apart only where consumable
// capacity is: before it, CEL knows no device.allowMultipleAllocations and
// the API server refuses the class (and no shared GPU is published).
func draClasses(s served) []*resourceapi.DeviceClass {
	if !s.has(featureDRA) {
		return nil
	}
	whole, extended := nvdra.WholeGPUs, ""
	if s.has(featureConsumable) {
		whole = nvdra.ExclusiveGPUs
	}
	if s.has(featureExtended) {
		extended = string(resourceGPU)
	}
	classes := []*resourceapi.DeviceClass{nvdra.Class(gpuClass, whole, extended)}
	if s.has(featurePartitionable) {
		classes = append(classes, nvdra.Class(migClass, nvdra.MIGs, ""))
	}
	if s.has(featureConsumable) {
		classes = append(classes, nvdra.Class(sharedClass, nvdra.SharedGPUsOnly, ""))
	}
	return classes
}

// registerDRA registers the DRA pools of s: nodes, their slices and the
// classes.
func registerDRA(ctx context.Context, cs kubernetes.Interface, s served) (int, error) {
	pools, slices := draNodes(s)
	n, err := registerFleet(ctx, cs, pools)
	if err != nil {
		return n, err
	}
	if s.has(featurePartitionable) {
		node, err := cs.CoreV1().Nodes().Get(ctx, draPoolA100+"-0", metav1.GetOptions{})
		if err != nil {
			return n, err
		}
		node.Spec.Taints = append(node.Spec.Taints, v1.Taint{Key: migTaintKey, Value: "true", Effect: v1.TaintEffectNoSchedule})
		if _, err := cs.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
			return n, fmt.Errorf("tainting %s: %w", node.Name, err)
		}
	}
	for _, c := range draClasses(s) {
		if _, err := cs.ResourceV1().DeviceClasses().Create(ctx, c, metav1.CreateOptions{}); err != nil {
			return n, fmt.Errorf("creating DeviceClass %s: %w", c.Name, err)
		}
	}
	for _, s := range slices {
		if _, err := cs.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return n, fmt.Errorf("creating ResourceSlice %s: %w", s.Name, err)
		}
	}
	klog.InfoS("Registered the DRA pools", "nodes", n, "slices", len(slices))
	return n, nil
}

// claimSpec is the ResourceClaimTemplate of a claim class: count devices
// of a DeviceClass, optionally narrowed by a CEL selector of its own.
type claimSpec struct {
	class    string
	count    int64
	selector string
	// shares, when set, is the capacity.requests of each device: that many
	// of a shared GPU's 1000 shares.
	shares int64
	// tolerateMIG: the pod tolerates the MIG node's taint.
	tolerateMIG bool
}

// template is the class's ResourceClaimTemplate, named after it.
func (c class) template() *resourceapi.ResourceClaimTemplate {
	req := resourceapi.ExactDeviceRequest{DeviceClassName: c.claim.class, Count: c.claim.count}
	if c.claim.selector != "" {
		req.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: c.claim.selector}}}
	}
	if c.claim.shares > 0 {
		req.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{
			nvdra.Shares: *resource.NewQuantity(c.claim.shares, resource.DecimalSI),
		}}
	}
	return &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: c.name, Namespace: namespace},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{
			Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "devices", Exactly: &req}}},
		}},
	}
}

// withClaim makes the pod use the class's template (the resourceclaim
// controller of kube-controller-manager turns it into the pod's claim).
func withClaim(p *v1.Pod, c class) {
	p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "devices", ResourceClaimTemplateName: ptr.To(c.name)}}
	p.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "devices"}}
	if c.claim.tolerateMIG {
		p.Spec.Tolerations = append(p.Spec.Tolerations, v1.Toleration{Key: migTaintKey, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule})
	}
}

// draState is what the API server holds of DRA after the run, and the
// scheduler's view of it (clustercheck.DRA).
type draState struct{ *clustercheck.DRA }

func readDRA(ctx context.Context, cs kubernetes.Interface) (*draState, error) {
	d, err := clustercheck.ReadDRA(ctx, cs)
	if err != nil {
		return nil, err
	}
	return &draState{d}, nil
}

// nodeProduct is the product a DRA node's GPUs publish (its whole GPUs',
// else its first device's: the shared pool's GPUs serve no
// nvidia.com/gpu), marked as DRA; "" for a node without slices.
func (s *draState) nodeProduct(node string) string {
	entries := s.entries(node)
	for _, e := range entries {
		if e.Resource == resourceGPU && e.Device.Product != "" {
			return e.Device.Product + draPoolSuffix
		}
	}
	for _, e := range entries {
		if e.Device.Product != "" {
			return e.Device.Product + draPoolSuffix
		}
	}
	return ""
}

// entries are the node's DRA devices per class and product (none without
// a state: a run without DRA).
func (s *draState) entries(node string) []dra.Entry {
	if s == nil {
		return nil
	}
	return s.View.Entries(node)
}

// printDRA shows every DRA node: per DeviceClass and product the devices,
// how many claims hold and how many first fit could still give (a GPU with
// a slice taken is no whole GPU any more), and the pods there.
func printDRA(out io.Writer, s *draState, pods []v1.Pod) {
	perNode := map[string]int{}
	for i := range pods {
		perNode[pods[i].Spec.NodeName]++
	}
	fmt.Fprintln(out, "\nDRA devices per node (ResourceSlices; resource = the DeviceClass's extended resource name):")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tCLASS\tRESOURCE\tPRODUCT\tDEVICES\tHELD\tFREE\tPODS")
	nodes := make([]string, 0, len(s.View.Nodes()))
	for n := range s.View.Nodes() {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	for _, n := range nodes {
		for i, e := range s.View.Entries(n) {
			name, pods := n, fmt.Sprint(perNode[n])
			if i > 0 {
				name, pods = "", ""
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", name, e.Class, e.Resource, e.Device.Product, e.Total, e.Held, e.Free, pods)
		}
	}
	tw.Flush()
}

// checkDRA is the DRA part of the run's checks: no device in two claims,
// no shared counter over its value (devices.DRAAllocationProblems), and
// every pod that got devices from slices got the products its class admits.
func checkDRA(s *draState, pods []v1.Pod, classes []class) []string {
	problems, _ := devices.DRAAllocationProblems(s.Slices, s.Claims)
	byName := map[string]class{}
	for _, c := range classes {
		byName[c.name] = c
	}
	for i := range pods {
		p := &pods[i]
		c := byName[p.Labels[classLabel]]
		if p.Spec.NodeName == "" || c.allowed == nil {
			continue
		}
		products, err := s.PodProducts(p)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", p.Name, err))
			continue
		}
		if c.claim != nil && len(products) == 0 {
			problems = append(problems, fmt.Sprintf("%s is bound to %s but its claim holds no device", p.Name, p.Spec.NodeName))
		}
		for _, prod := range products {
			if !contains(c.allowed, prod) {
				problems = append(problems, fmt.Sprintf("%s got a %s device on %s; its class admits only %s",
					p.Name, prod, p.Spec.NodeName, strings.Join(c.allowed, ", ")))
			}
		}
	}
	return problems
}
