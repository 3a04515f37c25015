package localup

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/devicefit/devicefit/internal/nvdra"
)

// TestShares: the report's shared GPUs from real slices and claims as the
// allocator leaves them (consumedCapacity), its lines and its check.
func TestShares(t *testing.T) {
	sl := []*resourceapi.ResourceSlice{
		// Exclusive GPUs have no shares to report.
		nvdra.NodeSlice("h", nvdra.GPUs(0, 1, "NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", "81559Mi")...),
		nvdra.NodeSlice("s1", nvdra.SharedGPUs(0, 2, "NVIDIA L40S", "Ada Lovelace", "8.9.0", "46068Mi")...),
		nvdra.NodeSlice("s0", nvdra.SharedGPUs(0, 2, "NVIDIA L40S", "Ada Lovelace", "8.9.0", "46068Mi")...),
	}
	share := nvdra.AllocatedShare
	for _, tc := range []struct {
		name     string
		claims   []*resourceapi.ResourceClaim
		want     string
		problems []string
	}{{
		name: "no claim",
		want: `
Shared GPUs (consumable capacity; shares consumed per the claims' status.allocation.devices.results[].consumedCapacity):
  s0  gpu-0  0/1000 shares
  s0  gpu-1  0/1000 shares
  s1  gpu-0  0/1000 shares
  s1  gpu-1  0/1000 shares
  0 shares of 0 claims on 0 of 4 GPUs (the fewest that could hold them: 0)
`,
	}, {
		name: "packed: two halves on one GPU, four quarters on another",
		claims: []*resourceapi.ResourceClaim{
			share("ns", "h1", "s0/gpu-0", 500), share("ns", "h2", "s0/gpu-0", 500),
			share("ns", "q1", "s0/gpu-1", 250), share("ns", "q2", "s0/gpu-1", 250),
			share("ns", "q3", "s0/gpu-1", 250), share("ns", "q4", "s0/gpu-1", 250),
			share("ns", "w", "s1/gpu-0", 1000),
			// Unallocated and exclusive claims are not counted.
			nvdra.ShareClaim("ns", "pending", sharedClass, 500), nvdra.Allocated("ns", "x", "h/gpu-0"),
		},
		want: `
Shared GPUs (consumable capacity; shares consumed per the claims' status.allocation.devices.results[].consumedCapacity):
  s0  gpu-0  1000/1000 shares  (2 claims)
  s0  gpu-1  1000/1000 shares  (4 claims)
  s1  gpu-0  1000/1000 shares  (1 claim)
  s1  gpu-1     0/1000 shares
  3000 shares of 7 claims on 3 of 4 GPUs (the fewest that could hold them: 3)
`,
	}, {
		name: "spread: a half on each node, 750 on one GPU",
		claims: []*resourceapi.ResourceClaim{
			share("ns", "h1", "s0/gpu-0", 500), share("ns", "h2", "s1/gpu-1", 500),
			share("ns", "q1", "s1/gpu-1", 250),
		},
		want: `
Shared GPUs (consumable capacity; shares consumed per the claims' status.allocation.devices.results[].consumedCapacity):
  s0  gpu-0  500/1000 shares  (1 claim)
  s0  gpu-1    0/1000 shares
  s1  gpu-0    0/1000 shares
  s1  gpu-1  750/1000 shares  (2 claims)
  1250 shares of 3 claims on 2 of 4 GPUs (the fewest that could hold them: 2)
`,
	}, {
		name:   "over its shares",
		claims: []*resourceapi.ResourceClaim{share("ns", "a", "s1/gpu-0", 750), share("ns", "b", "s1/gpu-0", 500)},
		want: `
Shared GPUs (consumable capacity; shares consumed per the claims' status.allocation.devices.results[].consumedCapacity):
  s0  gpu-0     0/1000 shares
  s0  gpu-1     0/1000 shares
  s1  gpu-0  1250/1000 shares  (2 claims)
  s1  gpu-1     0/1000 shares
  1250 shares of 2 claims on 1 of 4 GPUs (the fewest that could hold them: 2)
`,
		problems: []string{"s1 gpu-0: claims consume 1250 of its 1000 shares"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			gpus := sharedGPUs(sl, tc.claims)
			var out bytes.Buffer
			printShares(&out, gpus)
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("report (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.problems, checkShares(gpus)); diff != "" {
				t.Errorf("problems (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestSharesWithoutSharedGPUs(t *testing.T) {
	var out bytes.Buffer
	printShares(&out, sharedGPUs([]*resourceapi.ResourceSlice{
		nvdra.NodeSlice("h", nvdra.GPUs(0, 1, "NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", "81559Mi")...),
	}, nil))
	if out.Len() != 0 {
		t.Errorf("a fleet without shared GPUs must print nothing, got:\n%s", out.String())
	}
}

// TestShareMetrics: devicefit_device_shares parsed, printed and compared
// with what the claims consume.
func TestShareMetrics(t *testing.T) {
	const body = `# HELP devicefit_device_shares [ALPHA] Shares.
# TYPE devicefit_device_shares gauge
devicefit_device_shares{product="NVIDIA-L40S",resource="deviceclass.resource.kubernetes.io/shared-gpu.nvidia.com",state="used"} 1.75
devicefit_device_shares{product="NVIDIA-L40S",resource="deviceclass.resource.kubernetes.io/shared-gpu.nvidia.com",state="free"} 2.25
devicefit_device_shares{product="NVIDIA-L40S",resource="deviceclass.resource.kubernetes.io/shared-gpu.nvidia.com",state="stranded"} 0.25
`
	m, err := parseDevicefitMetrics(body)
	if err != nil {
		t.Fatal(err)
	}
	want := []shareGauge{{resource: "deviceclass.resource.kubernetes.io/shared-gpu.nvidia.com", product: "NVIDIA-L40S", used: 1.75, free: 2.25, stranded: 0.25}}
	if diff := cmp.Diff(want, m.shares, cmp.AllowUnexported(shareGauge{})); diff != "" {
		t.Errorf("shares (-want,+got):\n%s", diff)
	}
	var out bytes.Buffer
	printDevicefitMetrics(&out, m, "https://127.0.0.1:1")
	if !bytes.Contains(out.Bytes(), []byte("deviceclass.resource.kubernetes.io/shared-gpu.nvidia.com  NVIDIA-L40S  1.75  2.25  0.25\n")) {
		t.Errorf("the shares table is missing from:\n%s", out.String())
	}
	for _, tc := range []struct {
		name string
		gpus []sharedGPU
		want []string
	}{
		{"agree", []sharedGPU{{used: 1000, total: 1000}, {used: 750, total: 1000}, {total: 1000}}, nil},
		{"disagree", []sharedGPU{{used: 1000, total: 1000}, {used: 500, total: 1000}},
			[]string{"shared GPUs: 1.500 used according to the claims' consumedCapacity, 1.750 according to devicefit_device_shares"}},
	} {
		if diff := cmp.Diff(tc.want, m.checkShareMetrics(tc.gpus)); diff != "" {
			t.Errorf("%s: checkShareMetrics (-want,+got):\n%s", tc.name, diff)
		}
	}
}
