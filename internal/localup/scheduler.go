package localup

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/devicefit/devicefit/internal/controlplane"
)

// renderSchedulerConfig copies the KubeSchedulerConfiguration at src into dir
// with clientConnection.kubeconfig set (controlplane.RenderSchedulerConfig).
func renderSchedulerConfig(src, dir, kubeconfig string) (string, controlplane.LeaderElection, error) {
	data, err := os.ReadFile(src)
	if err != nil {
		return "", controlplane.LeaderElection{}, err
	}
	out, le, err := controlplane.RenderSchedulerConfig(data, kubeconfig)
	if err != nil {
		return "", le, fmt.Errorf("%s: %w", src, err)
	}
	dst := filepath.Join(dir, "scheduler-config.yaml")
	return dst, le, os.WriteFile(dst, out, 0o600)
}

// grantLeaderElection lets SchedulerUser hold the lease named in the config,
// creating the lease's namespace if it does not exist yet. The bootstrap
// ClusterRole system:kube-scheduler covers every API the scheduler reads and
// writes, but its lease rule names only "kube-scheduler"; a secondary
// scheduler needs its own lease, as in the manifests' RBAC.
func grantLeaderElection(ctx context.Context, cp *controlplane.ControlPlane, le controlplane.LeaderElection) error {
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: le.ResourceNamespace}}
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", le.ResourceNamespace, err)
	}
	name := "devicefit-scheduler:leader-election"
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: le.ResourceNamespace},
		Rules: []rbacv1.PolicyRule{{
			APIGroups:     []string{"coordination.k8s.io"},
			Resources:     []string{"leases"},
			ResourceNames: []string{le.ResourceName},
			Verbs:         []string{"get", "update", "patch"},
		}},
	}
	if _, err := cp.Client.RbacV1().Roles(le.ResourceNamespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating Role %s/%s: %w", le.ResourceNamespace, name, err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: le.ResourceNamespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: controlplane.SchedulerUser}},
	}
	if _, err := cp.Client.RbacV1().RoleBindings(le.ResourceNamespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating RoleBinding %s/%s: %w", le.ResourceNamespace, name, err)
	}
	return nil
}

// startScheduler renders the KubeSchedulerConfiguration at config into dir,
// lets SchedulerUser hold its lease, and starts bin/devicefit-scheduler with
// it as SchedulerUser; its /metrics is read with the admin token. It returns
// the lease the config names. It does not wait: the fleet is registered
// while the scheduler boots.
func startScheduler(ctx context.Context, binDir, dir, config string, cp *controlplane.ControlPlane, extraArgs ...string) (*controlplane.Scheduler, controlplane.LeaderElection, error) {
	rendered, le, err := renderSchedulerConfig(config, dir, cp.SchedulerKubeconfig)
	if err != nil {
		return nil, le, err
	}
	if err := grantLeaderElection(ctx, cp, le); err != nil {
		return nil, le, err
	}
	sched, err := controlplane.StartScheduler(controlplane.SchedulerOptions{
		Binary:     filepath.Join(binDir, "devicefit-scheduler"),
		Config:     rendered,
		Kubeconfig: cp.SchedulerKubeconfig,
		Dir:        dir,
		Token:      cp.AdminToken,
		ExtraArgs:  append([]string{"--v=2"}, extraArgs...),
	})
	return sched, le, err
}
