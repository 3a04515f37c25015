package validation

import (
	"strings"
	"testing"

	"github.com/devicefit/devicefit/pkg/apis/config"
	configv1 "github.com/devicefit/devicefit/pkg/apis/config/v1"
)

func defaultDevicePackArgs(t *testing.T) *config.DevicePackArgs {
	t.Helper()
	var v configv1.DevicePackArgs
	configv1.SetDefaults_DevicePackArgs(&v)
	var args config.DevicePackArgs
	if err := configv1.Convert_v1_DevicePackArgs_To_config_DevicePackArgs(&v, &args, nil); err != nil {
		t.Fatal(err)
	}
	return &args
}

func TestValidateDevicePackArgs(t *testing.T) {
	tests := []struct {
		name string
		edit func(*config.DevicePackArgs)
		want []string // substrings, one per expected error; none = valid
	}{
		{name: "defaults", edit: func(*config.DevicePackArgs) {}},
		{
			name: "static with classes",
			edit: func(a *config.DevicePackArgs) { a.Workload.Mode = config.WorkloadStatic },
		},
		{
			name: "weights out of range",
			edit: func(a *config.DevicePackArgs) { a.FragmentationWeight, a.DeviceNodePenalty = 101, -1 },
			want: []string{"args.fragmentationWeight: Invalid value: 101", "args.deviceNodePenalty: Invalid value: -1"},
		},
		{
			name: "all weights zero",
			edit: func(a *config.DevicePackArgs) {
				a.FragmentationWeight, a.BestFitWeight, a.ProductValueWeight, a.ScarcityWeight, a.DeviceNodePenalty = 0, 0, 0, 0, 0
			},
			want: []string{"all weights are 0"},
		},
		{
			name: "unknown mode",
			edit: func(a *config.DevicePackArgs) { a.Workload.Mode = "Learned" },
			want: []string{`args.workload.mode: Unsupported value: "Learned"`},
		},
		{
			name: "static without classes",
			edit: func(a *config.DevicePackArgs) { a.Workload.Mode, a.Workload.Classes = config.WorkloadStatic, nil },
			want: []string{"args.workload.classes: Required value"},
		},
		{
			name: "half-life and prior out of range",
			edit: func(a *config.DevicePackArgs) { a.Workload.HalfLifePods, a.Workload.PriorPods = 0, -5 },
			want: []string{"args.workload.halfLifePods: Invalid value: 0", "args.workload.priorPods: Invalid value: -5"},
		},
		{
			name: "bad class",
			edit: func(a *config.DevicePackArgs) {
				a.Workload.Classes = []config.WorkloadClass{{Resource: "nvidia.com/mig-*", Devices: 0, MilliCPU: -1, Products: "H100,,", Weight: 0}}
			},
			want: []string{
				"args.workload.classes[0].resource", "args.workload.classes[0].devices", "args.workload.classes[0].milliCPU",
				"args.workload.classes[0].products", "args.workload.classes[0].weight",
			},
		},
		{
			name: "bad product value",
			edit: func(a *config.DevicePackArgs) {
				a.ProductValues = []config.ProductValue{{Product: "H100 (SXM)", Value: -1}}
			},
			want: []string{"args.productValues[0].product", "args.productValues[0].value"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := defaultDevicePackArgs(t)
			tt.edit(args)
			errs := devicePackArgsErrors(fieldPath("args"), args)
			if len(errs) != len(tt.want) {
				t.Fatalf("got %d errors %v, want %d %v", len(errs), errs, len(tt.want), tt.want)
			}
			for i, want := range tt.want {
				if !strings.Contains(errs[i].Error(), want) {
					t.Errorf("error %d = %q, want it to contain %q", i, errs[i].Error(), want)
				}
			}
		})
	}
}
