package controlplane

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/klog/v2"
)

// StartControllerManager starts bin/kube-controller-manager with only the
// given controllers, by their names (e.g. replicaset-controller,
// resourceclaim-controller; the short aliases differ per controller and
// are not accepted here), as the admin user, with
// no leader election and no serving port, and waits until it has started
// them (its log says so). A caller that needs a controller's effect waits
// for the effect itself (pods of a ReplicaSet, a PodDisruptionBudget's
// status). Without kubelets, the node-lifecycle controllers must stay off:
// they would taint every node unreachable.
func (cp *ControlPlane) StartControllerManager(ctx context.Context, controllers ...string) error {
	if cp.ControllerManager != nil {
		return fmt.Errorf("kube-controller-manager runs already (pid %d)", cp.ControllerManager.Pid())
	}
	p, err := StartProcess("kube-controller-manager", filepath.Join(cp.binDir, "kube-controller-manager"), []string{
		"--kubeconfig=" + cp.AdminKubeconfig,
		"--controllers=" + strings.Join(controllers, ","),
		"--leader-elect=false",
		// Every controller acts as the admin user: no service account token
		// controller runs to give them tokens of their own.
		"--use-service-account-credentials=false",
		"--secure-port=0",
		"--v=2",
	}, cp.Dir)
	if err != nil {
		return err
	}
	cp.ControllerManager = p
	err = Poll(ctx, 200*time.Millisecond, time.Minute, p, func(context.Context) (bool, error) {
		log := Tail(p.LogPath, 400)
		for _, c := range controllers {
			// "Controller starting..." controller="replicaset-controller"
			if !strings.Contains(log, `"Controller starting..." controller="`+c+`"`) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return WaitFailed(p, err, "waiting for kube-controller-manager to start %s", strings.Join(controllers, ", "))
	}
	klog.InfoS("kube-controller-manager is running", "controllers", controllers)
	return nil
}
