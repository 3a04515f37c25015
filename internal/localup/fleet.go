package localup

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/devicefit/devicefit/internal/controlplane"
	"github.com/devicefit/devicefit/internal/gfd"
	"github.com/devicefit/devicefit/pkg/devices"
)

// Product label values as NVIDIA GPU Feature Discovery writes them.
const (
	productH100      = "NVIDIA-H100-80GB-HBM3"
	productA100x80   = "NVIDIA-A100-SXM4-80GB"
	productA100x40   = "NVIDIA-A100-SXM4-40GB"
	productL4Shared  = "NVIDIA-L4-SHARED"
	resourceGPU      = v1.ResourceName("nvidia.com/gpu")
	poolLabel        = "localup.devicefit.io/pool"
	labelGPUProduct  = "nvidia.com/gpu.product"
	labelMIGStrategy = "nvidia.com/mig.strategy"
)

// pool is a group of identical simulated nodes.
type pool struct {
	name   string
	nodes  int
	cpu    string
	memory string
	// labels are the GFD labels of every node of the pool.
	labels map[string]string
	// devices is the device plugin capacity of one node.
	devices v1.ResourceList
}

// gpuLabels are the GFD labels of a node of count GPUs of product, as the
// fleet's GFD (driver 580) writes them, then kv.
func gpuLabels(product string, memoryMiB, major, minor, count int, family, machine string, kv ...string) map[string]string {
	return gfd.GPU{Product: product, MemoryMiB: memoryMiB, Compute: devices.Compute{Major: major, Minor: minor},
		Count: count, Family: family, Machine: machine, DriverMajor: 580}.Labels(kv...)
}

// fleet is the simulated cluster: three NVIDIA products under three device
// plugin configurations (whole GPUs, MIG mixed, time-slicing), one more
// product for selector contrast, and CPU-only nodes.
func fleet() []pool {
	// DGX A100 80GB, every GPU partitioned "all-balanced":
	// 2x 1g.10gb + 1x 2g.20gb + 1x 3g.40gb per GPU.
	a100MIG := gpuLabels(productA100x80, 81920, 8, 0, 8, "ampere", "DGXA100-80GB",
		labelMIGStrategy, "mixed", "nvidia.com/mig.capable", "true")
	gfd.AddMIGProfile(a100MIG, "1g.10gb", productA100x80, 16, 9728)
	gfd.AddMIGProfile(a100MIG, "2g.20gb", productA100x80, 8, 19968)
	gfd.AddMIGProfile(a100MIG, "3g.40gb", productA100x80, 8, 40192)

	return []pool{
		{
			name: "h100", nodes: 4, cpu: "224", memory: "2Ti",
			// MIG-capable but not partitioned: the GPU operator's default
			// "single" strategy with MIG off exposes whole GPUs.
			labels: gpuLabels(productH100, 81559, 9, 0, 8, "hopper", "DGXH100",
				labelMIGStrategy, "single", "nvidia.com/mig.capable", "true"),
			devices: v1.ResourceList{resourceGPU: resource.MustParse("8")},
		},
		{
			name: "a100-mig", nodes: 2, cpu: "256", memory: "2Ti",
			labels: a100MIG,
			devices: v1.ResourceList{
				"nvidia.com/mig-1g.10gb": resource.MustParse("16"),
				"nvidia.com/mig-2g.20gb": resource.MustParse("8"),
				"nvidia.com/mig-3g.40gb": resource.MustParse("8"),
			},
		},
		{
			name: "a100-40", nodes: 2, cpu: "256", memory: "1Ti",
			labels: gpuLabels(productA100x40, 40960, 8, 0, 8, "ampere", "DGXA100",
				labelMIGStrategy, "single", "nvidia.com/mig.capable", "true"),
			devices: v1.ResourceList{resourceGPU: resource.MustParse("8")},
		},
		{
			// 4 L4 per node, each time-sliced into 4 replicas: the device
			// plugin advertises 16 nvidia.com/gpu and GFD renames the product.
			name: "l4-shared", nodes: 4, cpu: "48", memory: "192Gi",
			labels: gpuLabels(productL4Shared, 23034, 8, 9, 4, "ada-lovelace", "g2-standard-48",
				"nvidia.com/gpu.sharing-strategy", "time-slicing",
				"nvidia.com/gpu.replicas", "4",
				"nvidia.com/mig.capable", "false"),
			devices: v1.ResourceList{resourceGPU: resource.MustParse("16")},
		},
		{name: "cpu", nodes: 4, cpu: "64", memory: "256Gi", labels: map[string]string{}},
	}
}

// registerFleet registers every node of the pools (controlplane.RegisterNode).
func registerFleet(ctx context.Context, cs kubernetes.Interface, pools []pool) (int, error) {
	n := 0
	for _, p := range pools {
		for i := 0; i < p.nodes; i++ {
			labels := map[string]string{poolLabel: p.name}
			for k, v := range p.labels {
				labels[k] = v
			}
			if err := controlplane.RegisterNode(ctx, cs, fmt.Sprintf("%s-%d", p.name, i), labels, capacity(p)); err != nil {
				return n, err
			}
			n++
		}
	}
	klog.InfoS("Registered the fleet", "nodes", n)
	return n, nil
}

func capacity(p pool) v1.ResourceList {
	capacity := v1.ResourceList{
		v1.ResourceCPU:              resource.MustParse(p.cpu),
		v1.ResourceMemory:           resource.MustParse(p.memory),
		v1.ResourcePods:             resource.MustParse("110"),
		v1.ResourceEphemeralStorage: resource.MustParse("2Ti"),
	}
	for name, q := range p.devices {
		capacity[name] = q
	}
	return capacity
}
