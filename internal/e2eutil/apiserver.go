package e2eutil

import (
	"context"
	"testing"
	"time"

	"k8s.io/klog/v2"

	"github.com/devicefit/devicefit/internal/controlplane"
)

// APIServerOutage is how long RestartAPIServer's outage lasted, both
// counted from the SIGTERM.
type APIServerOutage struct {
	// Exited: until the old process had exited (it stops listening at
	// once, but with watches open tends to take its whole grace).
	Exited time.Duration
	// Ready: until the new process passed /readyz.
	Ready time.Duration
}

// RestartAPIServer stops kube-apiserver (SIGTERM) and starts it again on
// the same etcd, port, certificates and tokens (ControlPlane.RestartAPIServer),
// failing t with the end of its log when it does not come back.
func RestartAPIServer(t testing.TB, ctx context.Context, cp *controlplane.ControlPlane) APIServerOutage {
	t.Helper()
	stopped := time.Now()
	cp.StopAPIServer()
	out := APIServerOutage{Exited: time.Since(stopped)}
	if err := cp.StartAPIServer(ctx); err != nil {
		t.Fatalf("starting kube-apiserver again: %v\n%s", err, controlplane.Tail(cp.APIServer.LogPath, 30))
	}
	out.Ready = time.Since(stopped)
	klog.FromContext(ctx).Info("kube-apiserver restarted", "exited", out.Exited, "ready", out.Ready)
	return out
}
