package controlplane

import (
	"os"
	"path/filepath"
)

// defaultSchedulerConfig is kube-scheduler's default profile, as every
// cluster runs it: no plugins configured, no lease to wait for.
const defaultSchedulerConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
`

// StartDefaultScheduler starts binDir/kube-scheduler, the upstream
// scheduler built from the module graph, with its default profile
// (schedulerName default-scheduler), as SchedulerUser (the bootstrap RBAC
// policy's identity for it) through kubeconfig; its configuration and log
// go to dir; args follow --v=2 (e.g. --emulated-version for a control plane
// older than the binary). It does not wait: see WaitReady.
func StartDefaultScheduler(binDir, dir, kubeconfig string, args ...string) (*Scheduler, error) {
	data, _, err := RenderSchedulerConfig([]byte(defaultSchedulerConfig), kubeconfig)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "kube-scheduler-config.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return nil, err
	}
	return StartScheduler(SchedulerOptions{
		Binary:     filepath.Join(binDir, "kube-scheduler"),
		Config:     path,
		Kubeconfig: kubeconfig,
		Dir:        dir,
		Name:       "kube-scheduler",
		ExtraArgs:  append([]string{"--v=2"}, args...),
	})
}
