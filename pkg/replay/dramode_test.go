package replay

import (
	"context"
	"strings"
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
	res := spreadOrPack(t, "testdata/strand.yaml", FractionalRoundUp)
	if res.Inputs.Devices != string(DevicesDRA) {
		t.Errorf("inputs record devices %q, want dra", res.Inputs.Devices)
	}

	nodes, pods := load(t, "testdata/mixed.yaml", "testdata/mixed.yaml")
	byMode := map[DeviceMode]*Result{}
	for _, mode := range []DeviceMode{DevicesPlugin, DevicesDRA} {
		byMode[mode] = run(t, Config{Nodes: nodes, Pods: pods, Fractional: FractionalRoundUp, Arrival: exact,
			Policies: policies(t, PolicyDeviceFit), Engine: EngineOptions{Devices: mode}})
	}
	if diff := cmp.Diff(byMode[DevicesPlugin].Policies[0].Placements, byMode[DevicesDRA].Policies[0].Placements); diff != "" {
		t.Errorf("devicefit on mixed.yaml: device-plugin and DRA placements differ (-plugin,+dra):\n%s\nplugin %q\ndra    %q", diff, byMode[DevicesPlugin].Policies[0].Placements, byMode[DevicesDRA].Policies[0].Placements)
	}
}

// TestSharesMode: --fractional dra-shares. The halves are claims for 500
// shares of one shared GPU; upstream DynamicResources allocates them (the
// replay checks after each policy that the allocator's shares per GPU are
// those its first-fit model placed). The default profile spreads them and
// strands the 2-GPU job; devicefit packs both on one GPU of one node.
// Allocation is in milli-GPU: the two halves and the job are 3000 of 4000.
func TestSharesMode(t *testing.T) {
	nodes, pods := load(t, "testdata/shares.yaml", "testdata/shares.yaml")
	res := spreadOrPack(t, "testdata/shares.yaml", FractionalDRAShares)
	wantAllocated := map[string]float64{PolicyDefault: 25, PolicyDeviceFit: 75}
	for _, p := range res.Policies {
		if p.Final.AllocatedPct != wantAllocated[p.Name] {
			t.Errorf("%s: allocated %v%% of the milli-GPU, want %v%%", p.Name, p.Final.AllocatedPct, wantAllocated[p.Name])
		}
	}
	if res.FractionalPods != 2 {
		t.Errorf("fractional pods: got %d, want 2", res.FractionalPods)
	}
	if _, err := Run(context.Background(), Config{Nodes: nodes, Pods: pods, Fractional: FractionalDRAShares, Arrival: exact,
		Policies: policies(t, PolicyDeviceFit)}); err == nil || !strings.Contains(err.Error(), "--devices dra") {
		t.Errorf("dra-shares without --devices dra: want an error naming it, got %v", err)
	}
}

// TestSharesPrescreen: in dra-shares mode the pre-screen judges the shared
// GPUs by the shares model; it must change no placement, for any policy.
// mixed.yaml has fractional pods of 300 milli-GPU among whole ones.
func TestSharesPrescreen(t *testing.T) {
	cfg := mixedConfig(t)
	cfg.Fractional = FractionalDRAShares
	cfg.Engine.Devices = DevicesDRA
	screened := run(t, cfg)
	cfg.Engine.NoPrescreen = true
	sameReplay(t, screened, run(t, cfg), "the pre-screen changed the shares replay")
	if screened.FractionalPods == 0 {
		t.Fatal("mixed.yaml has no fractional pod to share a GPU")
	}
	if f := screened.Policies[0].Final; f.AllocatedPct == 0 || f.FailedPods == 0 {
		t.Errorf("the scenario should place and fail pods: %+v", f)
	}
}

// spreadOrPack replays file's two small pods and a big job (two nodes) in
// DRA mode: the default profile spreads the small pods and strands the job,
// devicefit packs them on gpu-0 and the job binds on gpu-1.
func spreadOrPack(t *testing.T, file string, frac Fractional) *Result {
	t.Helper()
	nodes, pods := load(t, file, file)
	res := run(t, Config{Nodes: nodes, Pods: pods, Fractional: frac, Arrival: exact,
		Policies: policies(t, PolicyDefault, PolicyDeviceFit), Engine: EngineOptions{Devices: DevicesDRA}})
	want := map[string][]string{
		PolicyDefault:   {"gpu-0", "gpu-1", ""},
		PolicyDeviceFit: {"gpu-0", "gpu-0", "gpu-1"},
	}
	for _, p := range res.Policies {
		if diff := cmp.Diff(want[p.Name], p.Placements); diff != "" {
			t.Errorf("%s: %s placements in DRA mode (-want,+got):\n%s", file, p.Name, diff)
		}
	}
	return res
}
