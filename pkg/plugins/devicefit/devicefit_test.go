package devicefit

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2/ktesting"

	"github.com/devicefit/devicefit/pkg/apis/config"
	"github.com/devicefit/devicefit/pkg/devices"
)

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		args    runtime.Object
		wantErr string
	}{
		{name: "defaults", args: defaultArgs()},
		{name: "wrong type", args: &runtime.Unknown{}, wantErr: "want args to be of type DeviceFitArgs, got *runtime.Unknown"},
		{
			name:    "bad policy",
			args:    &config.DeviceFitArgs{DeviceResources: devices.DefaultResourcePatterns(), DeviceNodePolicy: "Sometimes"},
			wantErr: `deviceNodePolicy: Unsupported value: "Sometimes"`,
		},
		{
			name:    "bad resource",
			args:    &config.DeviceFitArgs{DeviceResources: []string{"gpu"}, DeviceNodePolicy: config.DeviceNodePolicyNone},
			wantErr: `deviceResources[0]: Invalid value: "gpu"`,
		},
		{
			name:    "bad count",
			args:    &config.DeviceFitArgs{DeviceResources: devices.DefaultResourcePatterns(), DeviceNodePolicy: config.DeviceNodePolicyNone, AllowedCounts: []int64{0}},
			wantErr: "allowedCounts[0]: Invalid value: 0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			_, err := New(ctx, tt.args, nil)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
