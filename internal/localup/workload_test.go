package localup

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/devicefit/devicefit/pkg/devices"
)

// The hand-written expectations of the workload must refer to the fleet as it
// is, or the run's checks would prove nothing: on every control plane, with
// the classes and pools that one serves (features.go).
func TestWorkloadFitsFleet(t *testing.T) {
	for _, tc := range servedCases {
		t.Run(tc.name, func(t *testing.T) { workloadFitsFleet(t, tc.served, tc.minPods) })
	}
}

func workloadFitsFleet(t *testing.T, s served, minPods int) {
	products := map[string]bool{}
	offered := map[v1.ResourceName]int64{} // largest per-node offer
	for _, p := range fleet() {
		if prod := p.labels[labelGPUProduct]; prod != "" {
			products[prod] = true
		}
		for name, q := range p.devices {
			if q.Value() > offered[name] {
				offered[name] = q.Value()
			}
		}
	}
	// The DRA pools' products are their devices' (as DeviceFit reads them).
	_, slices := draNodes(s)
	for _, d := range devices.NewDRAInventory(slices).Devices {
		products[d.Facts.Product] = true
	}
	if len(products) < 3 {
		t.Errorf("fleet has %d GPU products, want at least 3", len(products))
	}

	total, names := 0, map[string]bool{}
	for _, c := range workload(s) {
		total += c.count
		if names[c.name] {
			t.Errorf("class %q appears twice", c.name)
		}
		names[c.name] = true
		for _, prod := range c.allowed {
			if !products[prod] {
				t.Errorf("class %q allows product %q, which no pool has", c.name, prod)
			}
		}
		if c.invalid && c.allowed != nil {
			t.Errorf("class %q is invalid but allows products", c.name)
		}
		for name, q := range c.devices {
			if offered[name] == 0 {
				t.Errorf("class %q requests %s, which no pool offers", c.name, name)
			}
			if !c.invalid && q.Value() > offered[name] {
				t.Errorf("class %q requests %d %s; the largest node offers %d", c.name, q.Value(), name, offered[name])
			}
		}
	}
	if total < minPods {
		t.Errorf("workload has %d pods, want at least %d", total, minPods)
	}
}

func TestBuildPodsIsDeterministic(t *testing.T) {
	a, b := buildPods(workload(allServed()), 42, true), buildPods(workload(allServed()), 42, true)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed built different pods")
	}
	c := buildPods(workload(allServed()), 43, true)
	if reflect.DeepEqual(podNames(a), podNames(c)) {
		t.Error("different seeds built the same submission order")
	}
}

func TestBuildPodsDeviceRequestsEqualLimits(t *testing.T) {
	routed := 0
	for _, p := range buildPods(workload(allServed()), 42, true) {
		// CPU pods are the default scheduler's; a third of the device pods
		// name no scheduler, for the routing policy.
		want := schedulerName
		if !isDevicePod(p) {
			want = ""
		} else if p.Spec.SchedulerName == "" {
			routed++
			want = ""
		}
		if p.Spec.SchedulerName != want {
			t.Errorf("%s: schedulerName %q, want %q", p.Name, p.Spec.SchedulerName, want)
		}
		res := p.Spec.Containers[0].Resources
		for name, q := range res.Requests {
			if !isDevice(name) {
				continue
			}
			// The apiserver rejects extended resources whose request and
			// limit differ; the demo must be admissible as a whole.
			if l, ok := res.Limits[name]; !ok || l.Cmp(q) != 0 {
				t.Errorf("%s: %s request %s, limit %v", p.Name, name, q.String(), res.Limits[name])
			}
		}
	}
	if routed == 0 {
		t.Error("every device pod names devicefit: the routing policy has nothing to route")
	}
}

func podNames(pods []*v1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}
