package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/routing"
)

// TestRoutingPolicyManifest: manifests/components/routing/routing-policy.yaml
// is the command's output for manifests/scheduler-config.yaml, so the
// device resources it routes are the deployed DeviceFit args', never a copy.
func TestRoutingPolicyManifest(t *testing.T) {
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{Out: &out, ErrOut: &errOut}
	if code := run(streams, []string{"routing-policy", "--config", "../../manifests/scheduler-config.yaml"}); code != 0 {
		t.Fatalf("exit code %d: %s", code, errOut.String())
	}
	committed, err := os.ReadFile("../../manifests/components/routing/routing-policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(committed), out.String()); diff != "" {
		t.Errorf("manifests/components/routing/routing-policy.yaml is not the output of `kubectl devicefit routing-policy --config manifests/scheduler-config.yaml` "+
			"(make generate writes it) (-committed,+generated):\n%s", diff)
	}
}

func TestRoutingPolicyErrors(t *testing.T) {
	for name, args := range map[string][]string{
		"taint without effect": {"routing-policy", "--config", "../../manifests/scheduler-config.yaml", "--node-ownership", "nvidia.com/gpu=present"},
		"unknown effect":       {"routing-policy", "--config", "../../manifests/scheduler-config.yaml", "--node-ownership", "nvidia.com/gpu=present:NoWay"},
		"no such profile":      {"routing-policy", "--config", "../../manifests/scheduler-config.yaml", "--profile", "nobody"},
	} {
		var out, errOut bytes.Buffer
		if code := run(genericiooptions.IOStreams{Out: &out, ErrOut: &errOut}, args); code != 1 || !strings.HasPrefix(errOut.String(), "error: ") {
			t.Errorf("%s: exit code %d, stderr %q", name, code, errOut.String())
		}
	}
}

func TestParseTaint(t *testing.T) {
	tests := []struct {
		in   string
		want v1.Toleration
	}{
		{"nvidia.com/gpu=present:NoSchedule", v1.Toleration{Key: "nvidia.com/gpu", Operator: v1.TolerationOpEqual, Value: "present", Effect: v1.TaintEffectNoSchedule}},
		{"devicefit.io/devices:NoExecute", v1.Toleration{Key: "devicefit.io/devices", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}},
	}
	for _, tt := range tests {
		got, err := parseTaint(tt.in)
		if err != nil {
			t.Errorf("%s: %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, *got); diff != "" {
			t.Errorf("%s (-want,+got):\n%s", tt.in, diff)
		}
	}
}

// TestNodeOwnershipComponent: manifests/components/node-ownership adds the
// mutation the command generates for nvidia.com/gpu=present:NoSchedule.
func TestNodeOwnershipComponent(t *testing.T) {
	data, err := os.ReadFile("../../manifests/components/node-ownership/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var component struct {
		Patches []struct {
			Patch string `json:"patch"`
		} `json:"patches"`
	}
	if err := yaml.Unmarshal(data, &component); err != nil {
		t.Fatal(err)
	}
	if len(component.Patches) != 1 {
		t.Fatalf("%d patches, want 1", len(component.Patches))
	}
	var ops []struct {
		Op    string               `json:"op"`
		Path  string               `json:"path"`
		Value admissionv1.Mutation `json:"value"`
	}
	if err := yaml.UnmarshalStrict([]byte(component.Patches[0].Patch), &ops); err != nil {
		t.Fatal(err)
	}
	taint, err := parseTaint("nvidia.com/gpu=present:NoSchedule")
	if err != nil {
		t.Fatal(err)
	}
	policy, _, err := routing.Policy(routing.Options{SchedulerName: "devicefit", Resources: devices.DefaultResourcePatterns(), Toleration: taint})
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 1 || ops[0].Op != "add" || ops[0].Path != "/spec/mutations/-" {
		t.Fatalf("patch %+v, want one add to /spec/mutations/-", ops)
	}
	if diff := cmp.Diff(policy.Spec.Mutations[1], ops[0].Value); diff != "" {
		t.Errorf("the component's mutation is not the generated one (-generated,+component):\n%s", diff)
	}
}
