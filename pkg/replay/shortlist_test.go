package replay

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/klog/v2"
)

// TestShortlistPlacesAlike replays a generated trace past full (so that
// pods fail too) under the deployed profile and under the same profile
// with DevicePack's shortlist off: every pod must land on the same node,
// or fail in both. The shortlist must also have been used, in most cycles,
// or the comparison proves nothing. Both device modes: nvidia.com/gpu from
// a device plugin, and from ResourceSlices through a DeviceClass, where
// DynamicResources allocates it and the shortlist counts the free devices.
func TestShortlistPlacesAlike(t *testing.T) {
	for _, mode := range []DeviceMode{DevicesPlugin, DevicesDRA} {
		t.Run(string(mode), func(t *testing.T) { testShortlistPlacesAlike(t, mode) })
	}
}

func testShortlistPlacesAlike(t *testing.T, mode DeviceMode) {
	data, err := os.ReadFile(manifestsConfig)
	if err != nil {
		t.Fatal(err)
	}
	const penalty = "          deviceNodePenalty: 10\n"
	if !strings.Contains(string(data), penalty) {
		t.Fatalf("%s: no %q line to add shortlist: false after", manifestsConfig, strings.TrimSpace(penalty))
	}
	onPath := filepath.Join(t.TempDir(), "shortlist.yaml")
	if err := os.WriteFile(onPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	off := filepath.Join(t.TempDir(), "noshortlist.yaml")
	if err := os.WriteFile(off, []byte(strings.Replace(string(data), penalty, penalty+"          shortlist: false\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	pols, err := ResolvePolicies([]string{PolicyDeviceFit}, onPath, []string{off})
	if err != nil {
		t.Fatal(err)
	}
	// DevicePack logs each shortlist at V(5); count them.
	var listed atomic.Int64
	logger := funcr.New(func(_, _ string) { listed.Add(1) }, funcr.Options{Verbosity: 5})
	ctx := klog.NewContext(context.Background(), logr.New(onlyShortlist{logger.GetSink()}))
	nodes, pods := benchFleet(200, 900)
	cfg := Config{Nodes: nodes, Pods: pods, Fractional: FractionalRoundUp, Policies: pols,
		Arrival: ArrivalOptions{Tune: 1.2, Order: OrderShuffle, Seed: 7}, Engine: EngineOptions{Parallelism: 2, Devices: mode}}
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	on, noList := res.Policies[0], res.Policies[1]
	if noList.Name != "noshortlist" {
		t.Fatalf("policies %s, %s", on.Name, noList.Name)
	}
	var placed, differ int
	for i := range on.Placements {
		if on.Placements[i] != "" {
			placed++
		}
		if on.Placements[i] != noList.Placements[i] {
			differ++
			if differ <= 5 {
				t.Errorf("pod %d: %q with the shortlist, %q without", i, on.Placements[i], noList.Placements[i])
			}
		}
	}
	if differ > 0 {
		t.Errorf("%d of %d pods placed differently with the shortlist", differ, len(on.Placements))
	}
	if on.Final.FailedPods == 0 || placed == 0 {
		t.Errorf("%d pods placed, %d failed: the trace should fill the fleet past full", placed, on.Final.FailedPods)
	}
	t.Logf("%d pods placed, %d failed, %d shortlists", placed, on.Final.FailedPods, listed.Load())
	if n := listed.Load(); n > int64(placed) {
		// Each arrival has one cycle; when no node fits, no list may be
		// named (every plugin must say why on every node).
		t.Errorf("%d shortlists for %d placed pods: some named nodes where the pod did not fit", n, placed)
	}
	if n := listed.Load(); n < int64(placed)/2 {
		t.Errorf("the shortlist named nodes in %d cycles of %d placed pods: too few for the comparison to mean anything", n, placed)
	}
}

// onlyShortlist passes on DevicePack's shortlist lines alone: the
// framework logs every cycle at V(5) too.
type onlyShortlist struct{ logr.LogSink }

func (s onlyShortlist) Info(level int, msg string, kv ...any) {
	if msg == "Shortlist" {
		s.LogSink.Info(level, msg, kv...)
	}
}

func (s onlyShortlist) WithValues(kv ...any) logr.LogSink {
	return onlyShortlist{s.LogSink.WithValues(kv...)}
}
func (s onlyShortlist) WithName(name string) logr.LogSink {
	return onlyShortlist{s.LogSink.WithName(name)}
}
