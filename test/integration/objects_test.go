package integration

import (
	"fmt"
	"maps"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	imageutils "k8s.io/kubernetes/test/utils/image"
	"k8s.io/utils/ptr"
)

// Resource names used by the tests.
const (
	gpu      v1.ResourceName = "nvidia.com/gpu"
	gpuShare v1.ResourceName = "nvidia.com/gpu.shared"
	mig1g10  v1.ResourceName = "nvidia.com/mig-1g.10gb"
	amdGPU   v1.ResourceName = "amd.com/gpu"
	draGPU   v1.ResourceName = "example.com/gpu"
)

// Pod annotations of the devicefit selector.
const (
	annProducts        = "devicefit.io/products"
	annExcludeProducts = "devicefit.io/exclude-products"
	annMinMemory       = "devicefit.io/min-memory"
	annFamilies        = "devicefit.io/families"
	annMinCompute      = "devicefit.io/min-compute"
	annSharing         = "devicefit.io/sharing"
)

// gpuModel is what GPU Feature Discovery reports about one kind of device.
type gpuModel struct {
	product      string // nvidia.com/gpu.product (sanitised model name)
	memoryMiB    int64  // nvidia.com/gpu.memory
	family       string // nvidia.com/gpu.family
	major, minor int    // nvidia.com/gpu.compute.major / .minor
}

var (
	modelH100  = gpuModel{"NVIDIA-H100-80GB-HBM3", 81559, "hopper", 9, 0}
	modelH200  = gpuModel{"NVIDIA-H200", 143771, "hopper", 9, 0}
	modelH20   = gpuModel{"NVIDIA-H20", 97871, "hopper", 9, 0}
	modelA100  = gpuModel{"NVIDIA-A100-SXM4-80GB", 81920, "ampere", 8, 0}
	modelA10   = gpuModel{"NVIDIA-A10", 23028, "ampere", 8, 6}
	modelT4    = gpuModel{"Tesla-T4", 15360, "turing", 7, 5}
	modelV100  = gpuModel{"Tesla-V100-SXM2-16GB", 16384, "volta", 7, 0}
	modelA1004 = gpuModel{"NVIDIA-A100-SXM4-40GB", 40960, "ampere", 8, 0}
)

// gfdLabels returns the labels GFD puts on a node with count devices of m and
// MIG disabled (strategy none).
func gfdLabels(m gpuModel, count int) map[string]string {
	return map[string]string{
		"nvidia.com/gpu.present":          "true",
		"nvidia.com/gpu.product":          m.product,
		"nvidia.com/gpu.memory":           strconv.FormatInt(m.memoryMiB, 10),
		"nvidia.com/gpu.family":           m.family,
		"nvidia.com/gpu.compute.major":    strconv.Itoa(m.major),
		"nvidia.com/gpu.compute.minor":    strconv.Itoa(m.minor),
		"nvidia.com/gpu.count":            strconv.Itoa(count),
		"nvidia.com/gpu.replicas":         "1",
		"nvidia.com/gpu.sharing-strategy": "none",
		"nvidia.com/mig.strategy":         "none",
	}
}

// timeSlicedLabels: GFD on a node whose device plugin shares each of count
// physical devices replicas times with time-slicing (and renameByDefault=false,
// failRequestsGreaterThanOne=false): the product gets the -SHARED suffix.
func timeSlicedLabels(m gpuModel, count, replicas int) map[string]string {
	l := gfdLabels(m, count)
	l["nvidia.com/gpu.product"] = m.product + "-SHARED"
	l["nvidia.com/gpu.replicas"] = strconv.Itoa(replicas)
	l["nvidia.com/gpu.sharing-strategy"] = "time-slicing"
	return l
}

// renamedSharedLabels: GFD on a node whose device plugin time-slices with
// renameByDefault=true: the replicas are advertised as nvidia.com/gpu.shared
// and the product label keeps its plain name (no -SHARED suffix).
func renamedSharedLabels(m gpuModel, count, replicas int) map[string]string {
	l := timeSlicedLabels(m, count, replicas)
	l["nvidia.com/gpu.product"] = m.product
	return l
}

// migSingleLabels: GFD under the single MIG strategy, every device of the node
// cut into the same profile; nvidia.com/gpu then counts MIG slices and the
// product/memory labels describe one slice.
func migSingleLabels(parent gpuModel, profile string, sliceMemMiB int64, slices int) map[string]string {
	l := gfdLabels(parent, slices)
	l["nvidia.com/gpu.product"] = parent.product + "-MIG-" + profile
	l["nvidia.com/gpu.memory"] = strconv.FormatInt(sliceMemMiB, 10)
	l["nvidia.com/mig.strategy"] = "single"
	return l
}

// migMixedLabels: GFD under the mixed MIG strategy: wholeCount unpartitioned
// devices stay nvidia.com/gpu, the slices appear as nvidia.com/mig-<profile>
// with their own product/memory/count labels.
func migMixedLabels(parent gpuModel, wholeCount int, profile string, sliceMemMiB int64, slices int) map[string]string {
	l := gfdLabels(parent, wholeCount)
	l["nvidia.com/mig.strategy"] = "mixed"
	p := "nvidia.com/mig-" + profile
	l[p+".product"] = parent.product + "-MIG-" + profile
	l[p+".memory"] = strconv.FormatInt(sliceMemMiB, 10)
	l[p+".count"] = strconv.Itoa(slices)
	return l
}

// nodeSpec describes a simulated node: labels plus device allocatable. There is
// no kubelet; status is written by the test.
type nodeSpec struct {
	name    string
	labels  map[string]string
	devices map[v1.ResourceName]int64
	taints  []v1.Taint
	// cpu overrides nodeCPU (a quantity, e.g. "32").
	cpu string
}

// nodeCPU and nodeMemory are generous so that only devices ever constrain.
const (
	nodeCPU    = "128"
	nodeMemory = "1Ti"
	nodePods   = "250"
)

// createNode creates the node, then writes capacity == allocatable (cpu,
// memory, pods and the devices) and a Ready condition through the status
// subresource, as a kubelet would. The node is deleted when t ends.
func (c *cluster) createNode(t *testing.T, spec nodeSpec) *v1.Node {
	t.Helper()
	labels := map[string]string{"kubernetes.io/hostname": spec.name}
	maps.Copy(labels, spec.labels)
	node := st.MakeNode().Name(spec.name).Obj()
	node.Labels = labels
	node.Spec.Taints = spec.taints
	created, err := c.ClientSet.CoreV1().Nodes().Create(c.Ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating node %s: %v", spec.name, err)
	}
	t.Cleanup(func() { c.deleteNode(t, spec.name) })

	cpu := nodeCPU
	if spec.cpu != "" {
		cpu = spec.cpu
	}
	res := v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse(cpu),
		v1.ResourceMemory: resource.MustParse(nodeMemory),
		v1.ResourcePods:   resource.MustParse(nodePods),
	}
	for name, n := range spec.devices {
		res[name] = *resource.NewQuantity(n, resource.DecimalSI)
	}
	now := metav1.Now()
	created.Status.Capacity = res
	created.Status.Allocatable = res.DeepCopy()
	created.Status.Phase = v1.NodeRunning
	created.Status.Conditions = []v1.NodeCondition{{
		Type:               v1.NodeReady,
		Status:             v1.ConditionTrue,
		Reason:             "KubeletReady",
		Message:            "simulated by the devicefit integration test",
		LastHeartbeatTime:  now,
		LastTransitionTime: now,
	}}
	updated, err := c.ClientSet.CoreV1().Nodes().UpdateStatus(c.Ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("updating status of node %s: %v", spec.name, err)
	}
	return updated
}

// podSpec describes a pod: a single container whose device requests equal its
// limits, plus selector annotations.
type podSpec struct {
	name          string
	schedulerName string // default: schedulerName
	devices       map[v1.ResourceName]int64
	// initDevices adds a classic init container with these requests == limits;
	// sidecarDevices a restartable (sidecar) init container.
	initDevices    map[v1.ResourceName]int64
	sidecarDevices map[v1.ResourceName]int64
	annotations    map[string]string
	// onlyNode pins the pod to one node with a required node affinity on
	// metadata.name. DeviceFit does not look at affinity, so this probes the
	// verdict of our Filter for exactly that node.
	onlyNode string
	// Placement rules of the pod's own (ownRules in DeviceFit).
	nodeSelector map[string]string
	affinity     *v1.NodeAffinity
	tolerations  []v1.Toleration
	// hostPort, when set, is a port the main container takes on its node.
	hostPort int32
	// nodeName binds the pod at creation: no scheduler sees it.
	nodeName string
	// claims are ResourceClaims (in the pod's namespace) the pod uses, each
	// as a pod claim of the same name, all for the main container.
	claims []string
	// podGroup joins the pod to that PodGroup (spec.schedulingGroup; needs
	// the GenericWorkload gate).
	podGroup string
}

// makePod builds the pod object for spec in namespace ns.
func makePod(ns string, spec podSpec) *v1.Pod {
	sched := spec.schedulerName
	if sched == "" {
		sched = schedulerName
	}
	pod := st.MakePod().Namespace(ns).Name(spec.name).SchedulerName(sched).Obj()
	pod.Annotations = maps.Clone(spec.annotations)
	pod.Spec.Containers = []v1.Container{deviceContainer("main", spec.devices)}
	if spec.initDevices != nil {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, deviceContainer("init", spec.initDevices))
	}
	if spec.sidecarDevices != nil {
		sidecar := deviceContainer("sidecar", spec.sidecarDevices)
		sidecar.RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways)
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, sidecar)
	}
	pod.Spec.NodeSelector = spec.nodeSelector
	pod.Spec.Tolerations = spec.tolerations
	pod.Spec.NodeName = spec.nodeName
	if spec.podGroup != "" {
		pod.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr.To(spec.podGroup)}
	}
	if spec.affinity != nil {
		pod.Spec.Affinity = &v1.Affinity{NodeAffinity: spec.affinity}
	}
	if spec.hostPort != 0 {
		pod.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: spec.hostPort, HostPort: spec.hostPort, Protocol: v1.ProtocolTCP}}
	}
	for _, c := range spec.claims {
		pod.Spec.ResourceClaims = append(pod.Spec.ResourceClaims, v1.PodResourceClaim{Name: c, ResourceClaimName: ptr.To(c)})
		pod.Spec.Containers[0].Resources.Claims = append(pod.Spec.Containers[0].Resources.Claims, v1.ResourceClaim{Name: c})
	}
	if spec.onlyNode != "" {
		pod.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
				NodeSelectorTerms: []v1.NodeSelectorTerm{{
					MatchFields: []v1.NodeSelectorRequirement{{
						Key:      metav1.ObjectNameField,
						Operator: v1.NodeSelectorOpIn,
						Values:   []string{spec.onlyNode},
					}},
				}},
			},
		}}
	}
	return pod
}

// deviceContainer is a pause container whose device requests equal its limits.
func deviceContainer(name string, devices map[v1.ResourceName]int64) v1.Container {
	res := v1.ResourceList{}
	for name, n := range devices {
		res[name] = *resource.NewQuantity(n, resource.DecimalSI)
	}
	return v1.Container{
		Name:  name,
		Image: imageutils.GetPauseImageName(),
		Resources: v1.ResourceRequirements{
			Requests: res,
			Limits:   res.DeepCopy(),
		},
	}
}

// createPod creates the pod for spec in the test namespace.
func (c *cluster) createPod(t *testing.T, ns string, spec podSpec) *v1.Pod {
	t.Helper()
	pod, err := c.ClientSet.CoreV1().Pods(ns).Create(c.Ctx, makePod(ns, spec), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s/%s: %v", ns, spec.name, err)
	}
	return pod
}

// devs is shorthand for a device request.
func devs(name v1.ResourceName, n int64) map[v1.ResourceName]int64 {
	return map[v1.ResourceName]int64{name: n}
}

func podName(prefix string, i int) string { return fmt.Sprintf("%s-%03d", prefix, i) }
