package routing

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/devicefit/devicefit/pkg/devices"
)

func TestPolicyErrors(t *testing.T) {
	ok := Options{SchedulerName: "devicefit", Resources: devices.DefaultResourcePatterns()}
	tests := []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"no scheduler", func(o *Options) { o.SchedulerName = "" }, "want devicefit's profile"},
		{"the default scheduler", func(o *Options) { o.SchedulerName = v1.DefaultSchedulerName }, "want devicefit's profile"},
		{"no resources", func(o *Options) { o.Resources = nil }, "no device resources"},
		{"native resource", func(o *Options) { o.Resources = []string{"cpu"} }, "domain-qualified"},
		{"toleration without effect", func(o *Options) { o.Toleration = &v1.Toleration{Key: "nvidia.com/gpu"} }, "want a key and an effect"},
		{"Exists with a value", func(o *Options) {
			o.Toleration = &v1.Toleration{Key: "k", Operator: v1.TolerationOpExists, Value: "v", Effect: v1.TaintEffectNoSchedule}
		}, "takes no value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := ok
			tt.edit(&o)
			if _, _, err := Policy(o); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
	if _, _, err := Policy(ok); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

// TestPolicyResources: exact names and prefixes as the args give them, and
// DRA's implicit extended resources always.
func TestPolicyResources(t *testing.T) {
	p, _, err := Policy(Options{SchedulerName: "gpu", Resources: []string{"example.com/gpu", "example.com/slice-*"}})
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, v := range p.Spec.Variables {
		vars[v.Name] = v.Expression
	}
	if got, want := vars["deviceResources"], "['example.com/gpu']"; got != want {
		t.Errorf("deviceResources %s, want %s", got, want)
	}
	if got, want := vars["deviceResourcePrefixes"], "['example.com/slice-', 'deviceclass.resource.kubernetes.io/']"; got != want {
		t.Errorf("deviceResourcePrefixes %s, want %s", got, want)
	}
	if got := p.Spec.Mutations[0].JSONPatch.Expression; !strings.Contains(got, "value: 'gpu'") {
		t.Errorf("the mutation does not route to the profile: %s", got)
	}
	if len(p.Spec.Mutations) != 1 {
		t.Errorf("%d mutations without node ownership, want 1", len(p.Spec.Mutations))
	}
}
