package replay

import (
	"context"
	"fmt"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/devicefit/devicefit/pkg/plugins/devicepack"
)

// TestSoakClassesStayBounded is the short version of `make soak`: arrivals
// of more distinct shapes than DevicePack's observed workload may track,
// with departures, through the deployed profile; the workload's class map
// must stay within its bound. (Heap and CPU are measured by `make soak`,
// never asserted in a test.)
func TestSoakClassesStayBounded(t *testing.T) {
	const arrivals = 6000
	pols, err := ResolvePolicies([]string{PolicyDeviceFit}, manifestsConfig, nil)
	if err != nil {
		t.Fatal(err)
	}
	rng := newRNG(1)
	shapes := map[string]bool{}
	for i := range arrivals {
		if p := soakPod(rng, i); p.GPUs > 0 {
			shapes[fmt.Sprint(p.GPUs, p.MilliCPU, p.MemoryMiB, p.Products)] = true
		}
	}
	if len(shapes) <= devicepack.MaxObservedClasses {
		t.Fatalf("%d distinct device pod shapes: no more than the %d classes the workload may track", len(shapes), devicepack.MaxObservedClasses)
	}
	ctx := klog.NewContext(context.Background(), logr.Discard())
	samples, err := Soak(ctx, pols[0], SoakOptions{Nodes: 100, Arrivals: arrivals, Seed: 1, Samples: 10})
	if err != nil {
		t.Fatal(err)
	}
	var departures int
	for _, s := range samples {
		departures += s.Departures
		if s.Classes > devicepack.MaxObservedClasses || s.Classes <= 0 {
			t.Errorf("after %d arrivals of a tenth: %d observed classes, want 1..%d", s.Arrivals, s.Classes, devicepack.MaxObservedClasses)
		}
	}
	if departures == 0 {
		t.Error("no pod departed: the soak never filled the fleet")
	}
}
