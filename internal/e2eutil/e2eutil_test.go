package e2eutil

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

func TestLeaderElectionTimings(t *testing.T) {
	in := []byte(`kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: true
  resourceName: devicefit-scheduler
  resourceNamespace: devicefit-system
`)
	out, err := editYAML(in, LeaderElectionTimings(4*time.Second, 3*time.Second, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		LeaderElection map[string]interface{} `json:"leaderElection"`
	}
	if err := yaml.Unmarshal(out, &cfg); err != nil {
		t.Fatal(err)
	}
	want := map[string]interface{}{
		"leaderElect": true, "resourceName": "devicefit-scheduler", "resourceNamespace": "devicefit-system",
		"leaseDuration": "4s", "renewDeadline": "3s", "retryPeriod": "1s",
	}
	for k, v := range want {
		if cfg.LeaderElection[k] != v {
			t.Errorf("leaderElection.%s = %v, want %v", k, cfg.LeaderElection[k], v)
		}
	}
	if _, err := editYAML([]byte("kind: KubeSchedulerConfiguration\n"), LeaderElectionTimings(time.Second, time.Second, time.Second)); err == nil {
		t.Error("timings set on a configuration without leader election")
	}
}

func TestDecodeObjects(t *testing.T) {
	objs, err := DecodeObjects([]byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n# only a comment\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {name: b, namespace: a}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 || objs[0].GetKind() != "Namespace" || objs[1].GetName() != "b" {
		t.Errorf("DecodeObjects: %d objects %v", len(objs), objs)
	}
}

func TestNamespaceName(t *testing.T) {
	valid := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	for _, name := range []string{
		"TestAdmissionPolicy/unknown_key_(devicefit.io/product)",
		"TestDeviceChurn/MIG_single_to_mixed_with_a_very_long_case_name_indeed",
		"Test",
	} {
		got := NamespaceName("faults", name)
		if len(got) > 63 || !valid.MatchString(got) || !strings.HasPrefix(got, "faults-") {
			t.Errorf("NamespaceName(%q) = %q: not a namespace name with the prefix", name, got)
		}
	}
}
