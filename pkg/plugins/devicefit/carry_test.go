package devicefit

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/devicefit/devicefit/pkg/plugins/shared"
)

// listingHandle is snapshotHandle that lists a profile's PreFilter
// plugins, as the framework's handle does (upstream.Plugins).
type listingHandle struct {
	snapshotHandle
	preFilter []string
}

func (h listingHandle) ListPlugins() *schedconfig.Plugins {
	p := &schedconfig.Plugins{}
	for _, n := range h.preFilter {
		p.PreFilter.Enabled = append(p.PreFilter.Enabled, schedconfig.Plugin{Name: n})
	}
	return p
}

// TestListGoesToTheCarrier: DeviceFit returns its candidate list itself
// unless the carrier runs PreFilter after it in the profile; then the
// Verdict carries the list, and PostFilter names DeviceFit, not the
// carrier, for the nodes the list left out that it gives no reason.
func TestListGoesToTheCarrier(t *testing.T) {
	tests := []struct {
		name       string
		preFilter  []string
		wantHanded bool
	}{
		{"carrier after DeviceFit", []string{"NodeResourcesFit", Name, shared.ListCarrier}, true},
		{"carrier before DeviceFit", []string{shared.ListCarrier, Name}, false},
		{"no carrier", []string{"NodeResourcesFit", Name}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			base, nodes, pod := hiddenFleet(t)
			snap := base.handle.(snapshotHandle).snapshot
			var pl *DeviceFit
			pl = newPlugin(t, defaultArgs(), listingHandle{snapshotHandle{snapshot: snap, pl: &pl}, tt.preFilter})
			state := framework.NewCycleState()
			res, status := pl.PreFilter(ctx, state, pod, nodes)
			if !status.IsSuccess() {
				t.Fatal(status)
			}
			v := shared.ReadVerdict(state)
			returned, carried := res, v.List
			if tt.wantHanded {
				returned, carried = carried, res
			}
			if !carried.AllNodes() {
				t.Errorf("list both returned and carried: %v", carried.NodeNames)
			}
			if returned.AllNodes() || !sets.New("l4").Equal(returned.NodeNames) {
				t.Fatalf("list: want [l4] (handed %v), got returned %v, carried %v", tt.wantHanded, res, v.List)
			}
			// The framework names the plugins that returned lists.
			returner := Name
			if tt.wantHanded {
				returner = shared.ListCarrier
			}
			m := framework.NewDefaultNodeToStatus()
			m.SetAbsentNodesStatus(fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node(s) didn't satisfy plugin(s) ["+returner+"]"))
			m.Set("l4", fwk.NewStatus(fwk.Unschedulable, "Insufficient cpu"))
			pl.PostFilter(ctx, state, pod, m)
			if got, want := strings.Join(m.Get("tainted").Reasons(), "; "), "node(s) didn't satisfy plugin(s) [DeviceFit]"; got != want {
				t.Errorf("node left out by the pod's own rules: got %q, want %q", got, want)
			}
			if got := m.Get("h100").Reasons(); len(got) != 1 || got[0] != ReasonProduct {
				t.Errorf("node left out for its product: got %q", got)
			}
		})
	}
}
