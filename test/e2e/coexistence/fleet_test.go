package coexistence

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/devicefit/devicefit/internal/e2eutil"
	"github.com/devicefit/devicefit/internal/gfd"
	"github.com/devicefit/devicefit/internal/nvdra"
	"github.com/devicefit/devicefit/pkg/devices"
)

// The fleet: GPU nodes with a device plugin's nvidia.com/gpu, GPU nodes
// whose GPUs are DRA devices, and CPU nodes; 64 CPUs and 512Gi each.
const (
	pluginNodes  = 12
	draNodes     = 2
	cpuNodes     = 2
	gpusPerNode  = 8
	maxPods      = 110
	draClassName = "gpu.nvidia.com"
)

// deviceNodes are the nodes node ownership taints.
func deviceNodes() []string {
	var out []string
	for i := range pluginNodes {
		out = append(out, fmt.Sprintf("gpu-%d", i))
	}
	for i := range draNodes {
		out = append(out, fmt.Sprintf("dra-%d", i))
	}
	return out
}

func registerFleet(ctx context.Context) error {
	cs := env.CP.Client
	labels := gfd.GPU{Product: "NVIDIA-H100-80GB-HBM3", MemoryMiB: 81559, Compute: devices.Compute{Major: 9},
		Count: gpusPerNode, Family: "hopper", MIGStrategy: devices.MIGStrategySingle}.Labels()
	for i := range pluginNodes {
		n := e2eutil.Node{Name: fmt.Sprintf("gpu-%d", i), Labels: labels, Devices: map[v1.ResourceName]int64{devices.NVIDIAGPU: gpusPerNode}}
		if err := n.Register(ctx, cs, maxPods, nil); err != nil {
			return err
		}
	}
	for i := range draNodes {
		name := fmt.Sprintf("dra-%d", i)
		if err := (e2eutil.Node{Name: name}).Register(ctx, cs, maxPods, nil); err != nil {
			return err
		}
		slice := nvdra.NodeSlice(name, nvdra.GPUs(0, gpusPerNode, "NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", "80Gi")...)
		if _, err := cs.ResourceV1().ResourceSlices().Create(ctx, slice, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	for i := range cpuNodes {
		if err := (e2eutil.Node{Name: fmt.Sprintf("cpu-%d", i)}).Register(ctx, cs, maxPods, nil); err != nil {
			return err
		}
	}
	_, err := cs.ResourceV1().DeviceClasses().Create(ctx, nvdra.Class(draClassName, nvdra.WholeGPUs, ""), metav1.CreateOptions{})
	return err
}
