package replay

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDRAMode: the same scenarios with the fleet's GPUs in ResourceSlices
// and a DeviceClass serving nvidia.com/gpu. Upstream DynamicResources
// allocates (the replay checks after each policy that the claims hold
// exactly the devices the pods asked for), and the placements are those of
// the device-plugin mode: default spreads, devicefit packs, and model
// constraints hold through the slices' productName.
func TestDRAMode(t *testing.T) {
	nodes, pods := load(t, "testdata/strand.yaml", "testdata/strand.yaml")
	res := run(t, Config{Nodes: nodes, Pods: pods, Fractional: FractionalRoundUp, Arrival: exact,
		Policies: policies(t, PolicyDefault, PolicyDeviceFit), Engine: EngineOptions{Devices: DevicesDRA}})
	want := map[string][]string{
		PolicyDefault:   {"gpu-0", "gpu-1", ""},
		PolicyDeviceFit: {"gpu-0", "gpu-0", "gpu-1"},
	}
	for _, p := range res.Policies {
		if diff := cmp.Diff(want[p.Name], p.Placements); diff != "" {
			t.Errorf("%s placements in DRA mode (-want,+got):\n%s", p.Name, diff)
		}
	}
	if res.Inputs.Devices != string(DevicesDRA) {
		t.Errorf("inputs record devices %q, want dra", res.Inputs.Devices)
	}

	nodes, pods = load(t, "testdata/mixed.yaml", "testdata/mixed.yaml")
	byMode := map[DeviceMode]*Result{}
	for _, mode := range []DeviceMode{DevicesPlugin, DevicesDRA} {
		byMode[mode] = run(t, Config{Nodes: nodes, Pods: pods, Fractional: FractionalRoundUp, Arrival: exact,
			Policies: policies(t, PolicyDeviceFit), Engine: EngineOptions{Devices: mode}})
	}
	if diff := cmp.Diff(byMode[DevicesPlugin].Policies[0].Placements, byMode[DevicesDRA].Policies[0].Placements); diff != "" {
		t.Errorf("devicefit on mixed.yaml: device-plugin and DRA placements differ (-plugin,+dra):\n%s\nplugin %q\ndra    %q", diff, byMode[DevicesPlugin].Policies[0].Placements, byMode[DevicesDRA].Policies[0].Placements)
	}
}
