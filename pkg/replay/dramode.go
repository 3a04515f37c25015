package replay

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/devicefit/devicefit/internal/nvdra"
)

// DeviceMode is how the fleet's devices reach the scheduler.
type DeviceMode string

const (
	// DevicesPlugin: a device plugin advertises nvidia.com/gpu in each
	// node's allocatable (the default).
	DevicesPlugin DeviceMode = "plugin"
	// DevicesDRA: the nodes advertise no device; each node's GPUs are
	// published in a ResourceSlice with the attribute names of NVIDIA's DRA
	// driver, and a DeviceClass serves nvidia.com/gpu from them
	// (KEP-5004), so the pods still ask for nvidia.com/gpu. The upstream
	// DynamicResources plugin allocates them in Filter and Reserve.
	DevicesDRA DeviceMode = "dra"
)

// ParseDeviceMode reads --devices.
func ParseDeviceMode(s string) (DeviceMode, error) {
	switch m := DeviceMode(s); m {
	case DevicesPlugin, DevicesDRA:
		return m, nil
	case "":
		return DevicesPlugin, nil
	}
	return "", fmt.Errorf("--devices %q: want plugin or dra", s)
}

// draClassName is the DeviceClass serving nvidia.com/gpu in DRA mode.
const draClassName = "gpu.nvidia.com"

// asDRANode makes node n serve its GPUs from slices: no nvidia.com/gpu in
// capacity or allocatable. The GFD product label stays: GFD runs beside
// the DRA driver on such nodes, and the upstream profiles' node affinity
// on the model reads it.
func asDRANode(n *v1.Node) {
	delete(n.Status.Capacity, DeviceResource)
	delete(n.Status.Allocatable, DeviceResource)
}

// draObjects are the fleet's ResourceSlices (one per device node, its GPUs
// named gpu-0…, productName the trace's model) and the DeviceClass; with
// shared, the GPUs are shared devices of sharesPerGPU shares
// (sharesmode.go).
func draObjects(fleet []NodeSpec, shared bool) []runtime.Object {
	objs := []runtime.Object{nvdra.Class(draClassName, nvdra.WholeGPUs, string(DeviceResource))}
	for i := range fleet {
		n := &fleet[i]
		if n.GPUs <= 0 {
			continue
		}
		devs := make([]resourceapi.Device, n.GPUs)
		for j := range devs {
			devs[j] = resourceapi.Device{
				Name: fmt.Sprintf("gpu-%d", j),
				Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
					"type":        {StringValue: ptr.To("gpu")},
					"productName": {StringValue: ptr.To(n.Model)},
				},
			}
			if shared {
				devs[j].AllowMultipleAllocations = ptr.To(true)
				devs[j].Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
					nvdra.Shares: {Value: *resource.NewQuantity(sharesPerGPU, resource.DecimalSI)},
				}
			}
		}
		objs = append(objs, nvdra.NodeSlice(n.Name, devs...))
	}
	return objs
}

// checkDRA is DRA mode's invariant: the devices allocated (the
// scheduler's in-flight allocations, as the replay stops each pod after
// Reserve; GatherAllocatedState counts them) are exactly as many as the
// bound pods asked for. A replay whose pods bypassed DRA, or that gave one
// device to two claims (the set would be smaller), fails.
func (s *simulation) checkDRA(placed int64) error {
	m := s.fw.SharedDRAManager()
	if m == nil || s.dra == nil {
		return fmt.Errorf("DRA mode without a DRA manager")
	}
	if err := s.dra.claims.verify(); err != nil {
		return err
	}
	state, err := m.ResourceClaims().GatherAllocatedState()
	if err != nil {
		return err
	}
	if n := int64(len(state.AllocatedDevices)); n != placed {
		return fmt.Errorf("claims hold %d distinct devices, the bound pods asked for %d", n, placed)
	}
	return nil
}
