package localup

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
)

const exposition = `# HELP devicefit_devices [ALPHA] Devices.
# TYPE devicefit_devices gauge
devicefit_devices{product="NVIDIA-H100-80GB-HBM3",resource="nvidia.com/gpu",state="allocatable"} 16
devicefit_devices{product="NVIDIA-H100-80GB-HBM3",resource="nvidia.com/gpu",state="allocated"} 12
devicefit_devices{product="NVIDIA-H100-80GB-HBM3",resource="nvidia.com/gpu",state="free"} 4
devicefit_devices{product="NVIDIA-H100-80GB-HBM3",resource="nvidia.com/gpu",state="stranded"} 1.5
devicefit_devices{product="NVIDIA-A100-SXM4-80GB-MIG-1g.10gb",resource="nvidia.com/mig-1g.10gb",state="allocated"} 3
# HELP devicefit_fragmentation_ratio [ALPHA] Ratio.
# TYPE devicefit_fragmentation_ratio gauge
devicefit_fragmentation_ratio{resource="nvidia.com/gpu"} 0.375
# HELP devicefit_filter_rejections_total [ALPHA] Rejections.
# TYPE devicefit_filter_rejections_total counter
devicefit_filter_rejections_total{reason="product"} 7
devicefit_filter_rejections_total{reason="memory"} 0
# HELP devicefit_placements_total [ALPHA] Placements.
# TYPE devicefit_placements_total counter
devicefit_placements_total{product="NVIDIA-H100-80GB-HBM3",resource="nvidia.com/gpu"} 5
# HELP scheduler_schedule_attempts_total [STABLE] Attempts.
# TYPE scheduler_schedule_attempts_total counter
scheduler_schedule_attempts_total{profile="devicefit",result="scheduled"} 9
scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 100
`

func TestParseDevicefitMetrics(t *testing.T) {
	m, err := parseDevicefitMetrics(exposition)
	if err != nil {
		t.Fatal(err)
	}
	wantDevices := []deviceGauge{
		{resource: "nvidia.com/gpu", product: "NVIDIA-H100-80GB-HBM3", allocatable: 16, allocated: 12, free: 4, stranded: 1.5},
		{resource: "nvidia.com/mig-1g.10gb", product: "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb", allocated: 3},
	}
	if diff := cmp.Diff(wantDevices, m.devices, cmp.AllowUnexported(deviceGauge{})); diff != "" {
		t.Errorf("devices (-want,+got):\n%s", diff)
	}
	// Zero rejections are left out; other profiles' attempts too.
	if diff := cmp.Diff(map[string]float64{"product": 7}, m.rejections); diff != "" {
		t.Errorf("rejections (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]float64{"scheduled": 9}, m.attempts); diff != "" {
		t.Errorf("attempts (-want,+got):\n%s", diff)
	}
	if got := m.placements["nvidia.com/gpu NVIDIA-H100-80GB-HBM3"]; got != 5 {
		t.Errorf("placements = %v, want 5", got)
	}

	// The API server says 12 GPUs and 4 slices are bound: the slices disagree.
	rows := []*productRow{{bound: map[v1.ResourceName]int64{"nvidia.com/gpu": 12, "nvidia.com/mig-1g.10gb": 4}}}
	want := []string{"nvidia.com/mig-1g.10gb: 4 devices bound according to the API server, 3 allocated according to devicefit_devices"}
	if diff := cmp.Diff(want, m.checkAgainst(rows)); diff != "" {
		t.Errorf("checkAgainst (-want,+got):\n%s", diff)
	}
}
