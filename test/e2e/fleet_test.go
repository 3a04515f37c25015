package e2e

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/devicefit/devicefit/internal/e2eutil"
	"github.com/devicefit/devicefit/internal/gfd"
	"github.com/devicefit/devicefit/pkg/devices"
)

// Product label values as NVIDIA GPU Feature Discovery writes them.
const (
	productH100     = "NVIDIA-H100-80GB-HBM3"
	productA100x40  = "NVIDIA-A100-SXM4-40GB"
	productL4Shared = "NVIDIA-L4-SHARED"
	productMIGBad   = "NVIDIA-A100-SXM4-80GB-MIG-INVALID"
	productMI300X   = "AMD-Instinct-MI300X"
	resourceAMDGPU  = v1.ResourceName("amd.com/gpu")
	labelGPUProduct = "nvidia.com/gpu.product"
	fleetLabel      = "e2e.devicefit.io/fleet"
)

// fleetNode is one simulated node: labels as GFD writes them, capacity as the
// device plugin advertises it.
type fleetNode struct {
	name   string
	labels map[string]string
	gpus   int64
	// amdGPUs: amd.com/gpu, which no scenario pod asks for.
	amdGPUs int64
}

// Nodes whose devicefit_devices{state="stranded"} is known exactly whatever
// the scheduler does, against any workload of nvidia.com/gpu jobs (the
// observed pods and DevicePack's default prior of 1, 2, 4 and 8 GPU jobs).
const (
	// migInvalidNode: GFD labels the product -MIG-INVALID when the GPUs'
	// MIG setup is inconsistent under the single strategy; nothing can run
	// on its 8 GPUs until an operator fixes it.
	migInvalidNode = "e2e-a100-mig-invalid"
	// amdNode has 4 AMD GPUs, which no job asks for: free, not stranded.
	amdNode = "e2e-mi300x-0"
)

// gfdLabels: GFD's labels for count GPUs of product (single MIG strategy),
// then kv.
func gfdLabels(product string, memoryMiB, major, minor, count int, family string, kv ...string) map[string]string {
	return gfd.GPU{Product: product, MemoryMiB: memoryMiB, Compute: devices.Compute{Major: major, Minor: minor},
		Count: count, Family: family, MIGStrategy: devices.MIGStrategySingle}.Labels(kv...)
}

// fleet is small on purpose: three products, whole and time-sliced GPUs, and
// a CPU-only node; enough for every selector of scenarioPods to matter.
func fleet() []fleetNode {
	return []fleetNode{
		{"e2e-h100-0", gfdLabels(productH100, 81559, 9, 0, 8, "hopper"), 8, 0},
		{"e2e-h100-1", gfdLabels(productH100, 81559, 9, 0, 8, "hopper"), 8, 0},
		{"e2e-a100-40-0", gfdLabels(productA100x40, 40960, 8, 0, 8, "ampere"), 8, 0},
		// 4 L4, each time-sliced into 4 replicas.
		{"e2e-l4-0", gfdLabels(productL4Shared, 23034, 8, 9, 4, "ada-lovelace",
			"nvidia.com/gpu.sharing-strategy", "time-slicing", "nvidia.com/gpu.replicas", "4"), 16, 0},
		{"e2e-cpu-0", map[string]string{}, 0, 0},
		{migInvalidNode, gfdLabels(productMIGBad, 0, 8, 0, 8, "ampere"), 8, 0},
		{amdNode, map[string]string{"amd.com/gpu.product-name": productMI300X}, 0, 4},
	}
}

// registerFleet registers the nodes (e2eutil.Node.Register, 110 pods
// each), labelled fleetLabel.
func registerFleet(ctx context.Context) error {
	for _, n := range fleet() {
		devices := map[v1.ResourceName]int64{}
		if n.gpus > 0 {
			devices[resourceGPU] = n.gpus
		}
		if n.amdGPUs > 0 {
			devices[resourceAMDGPU] = n.amdGPUs
		}
		node := e2eutil.Node{Name: n.name, Labels: n.labels, Devices: devices}
		if err := node.Register(ctx, s.cp.Client, 110, map[string]string{fleetLabel: "true"}); err != nil {
			return err
		}
	}
	return nil
}

// scenarioPod is a pod of the scenario and the products its selector admits,
// worked out by hand from fleet() (nil: any node), independently of the
// plugin's own logic.
type scenarioPod struct {
	pod     *v1.Pod
	allowed []string
}

// scenarioPods fit the fleet together: every one of them must be bound.
func scenarioPods(ns string) []scenarioPod {
	var out []scenarioPod
	add := func(n int, prefix string, gpus int64, allowed []string, annotations ...string) {
		for i := 0; i < n; i++ {
			out = append(out, scenarioPod{devicePod(ns, fmt.Sprintf("%s-%d", prefix, i), resourceGPU, gpus, annotations...), allowed})
		}
	}
	add(2, "h100-4", 4, []string{productH100}, "devicefit.io/products", productH100)
	// 60Gi = 61440 MiB: more than an A100 40GB or an L4 has.
	add(1, "bigmem-2", 2, []string{productH100}, "devicefit.io/min-memory", "60Gi")
	add(2, "ampere-2", 2, []string{productA100x40}, "devicefit.io/families", "ampere")
	add(2, "not-h100-1", 1, []string{productA100x40, productL4Shared}, "devicefit.io/exclude-products", productH100)
	// The model name without GFD's -SHARED suffix.
	add(2, "l4-1", 1, []string{productL4Shared}, "devicefit.io/products", "NVIDIA-L4")
	add(2, "exclusive-1", 1, []string{productH100, productA100x40}, "devicefit.io/sharing", "exclusive")
	// H100 is 9.0, L4 8.9, A100 8.0.
	add(1, "compute89-1", 1, []string{productH100, productL4Shared}, "devicefit.io/min-compute", "8.9")
	add(1, "cpu", 0, nil)
	return out
}
