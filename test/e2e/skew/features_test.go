package skew

import (
	"strings"
	"testing"

	"github.com/devicefit/devicefit/pkg/support"
)

// servedByDefault is the README's support table: for each supported minor,
// the device features its API server serves with default gates and
// --runtime-config. Each row is checked twice on that minor's real server:
// against what support.Features reads off it (what the scheduler and
// kubectl devicefit say), and by a pod that uses the feature
// (kustomize_test.go). A bump of go.mod adds a minor here and drops the
// oldest; the test fails until it does.
var servedByDefault = map[string]map[string]bool{
	"1.35": {dra: true, extendedResources: false, partitionable: false, consumable: false, workloads: false, routing: false},
	"1.36": {dra: true, extendedResources: true, partitionable: true, consumable: true, workloads: false, routing: true},
	"1.37": {dra: true, extendedResources: true, partitionable: true, consumable: true, workloads: false, routing: true},
}

// Feature names as support.Features starts them.
const (
	dra               = "Dynamic Resource Allocation"
	extendedResources = "DRA-backed extended resources"
	partitionable     = "Partitionable devices"
	consumable        = "Consumable capacity"
	workloads         = "Workload API"
	routing           = "Routing policy"
)

// checkFeatures compares support.Features on cluster, with the gates the
// scheduler emulates there, with servedByDefault, and returns the rows.
func checkFeatures(t *testing.T, m minor, cluster *support.Cluster) map[string]support.Feature {
	t.Helper()
	want, ok := servedByDefault[m.String()]
	if !ok {
		t.Fatalf("servedByDefault has no row for Kubernetes %s: add it (and the README's support table)", m)
	}
	features, _, err := support.DefaultFeatures(cluster)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]support.Feature{}
	for _, f := range features {
		for name := range want {
			if strings.HasPrefix(f.Name, name) {
				got[name] = f
			}
		}
	}
	for name, on := range want {
		f, found := got[name]
		switch {
		case !found:
			t.Errorf("Kubernetes %s: support.Features has no %q", m, name)
		case f.On != on:
			t.Errorf("Kubernetes %s: support.Features says %q; the support table says on=%v", m, f.Line(cluster), on)
		}
	}
	return got
}
