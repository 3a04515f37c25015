package e2eutil

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/devicefit/devicefit/internal/controlplane"
)

// DeployedSchedulerConfig returns the KubeSchedulerConfiguration the applied
// Deployment mounts: key scheduler-config.yaml of the ConfigMap
// devicefit-scheduler-config, found through the Deployment's volumes because
// kustomize's configMapGenerator appends a hash of the content to the name.
func DeployedSchedulerConfig(ctx context.Context, cs kubernetes.Interface) (name, data string, err error) {
	deploy, err := cs.AppsV1().Deployments(SystemNamespace).Get(ctx, SchedulerDeploy, metav1.GetOptions{})
	if err != nil {
		return "", "", err
	}
	var mounted []string
	for _, v := range deploy.Spec.Template.Spec.Volumes {
		if v.ConfigMap == nil || !strings.HasPrefix(v.ConfigMap.Name, SchedulerConfigMap) {
			continue
		}
		cm, err := cs.CoreV1().ConfigMaps(SystemNamespace).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
		if err != nil {
			return "", "", fmt.Errorf("ConfigMap of volume %s of Deployment %s/%s: %w", v.Name, SystemNamespace, SchedulerDeploy, err)
		}
		if data, ok := cm.Data[SchedulerConfigKey]; ok {
			return cm.Name, data, nil
		}
		mounted = append(mounted, cm.Name)
	}
	return "", "", fmt.Errorf("Deployment %s/%s mounts no ConfigMap %s* with key %s (ConfigMaps without it: %v)",
		SystemNamespace, SchedulerDeploy, SchedulerConfigMap, SchedulerConfigKey, mounted)
}

// SchedulerConfig is the deployed KubeSchedulerConfiguration, rendered for
// a scheduler process on this machine.
type SchedulerConfig struct {
	// Path is the rendered file, for --config.
	Path string
	// Kubeconfig authenticates as the manifests' ServiceAccount; the
	// rendered file names it in clientConnection.kubeconfig, and it is the
	// identity for the secure port's delegated authentication and
	// authorization too.
	Kubeconfig string
	// Lease is the lease the configuration names.
	Lease controlplane.LeaderElection
}

// RenderDeployedSchedulerConfig writes dir/name: the configuration of the
// applied ConfigMap (DeployedSchedulerConfig) with clientConnection.kubeconfig
// set to a new kubeconfig of the manifests' ServiceAccount
// (ServiceAccountKubeconfig), then changed by edit, when not nil, e.g.
// LeaderElectionTimings.
func RenderDeployedSchedulerConfig(ctx context.Context, cp *controlplane.ControlPlane, dir, name string, edit func(cfg map[string]interface{}) error) (*SchedulerConfig, error) {
	cmName, data, err := DeployedSchedulerConfig(ctx, cp.Client)
	if err != nil {
		return nil, err
	}
	kubeconfig, err := ServiceAccountKubeconfig(ctx, cp, dir, SystemNamespace, SchedulerSA)
	if err != nil {
		return nil, err
	}
	rendered, le, err := controlplane.RenderSchedulerConfig([]byte(data), kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s key %s: %w", SystemNamespace, cmName, SchedulerConfigKey, err)
	}
	if edit != nil {
		if rendered, err = editYAML(rendered, edit); err != nil {
			return nil, fmt.Errorf("ConfigMap %s/%s key %s: %w", SystemNamespace, cmName, SchedulerConfigKey, err)
		}
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, rendered, 0o600); err != nil {
		return nil, err
	}
	return &SchedulerConfig{Path: path, Kubeconfig: kubeconfig, Lease: le}, nil
}

func editYAML(data []byte, edit func(map[string]interface{}) error) ([]byte, error) {
	var cfg map[string]interface{}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return nil, err
	}
	if err := edit(cfg); err != nil {
		return nil, err
	}
	return yaml.Marshal(cfg)
}

// LeaderElectionTimings returns an edit for RenderDeployedSchedulerConfig
// that sets leaderElection's leaseDuration, renewDeadline and retryPeriod
// and keeps the rest (leaderElect, the lease's name and namespace). It
// refuses a configuration without leader election: there would be nothing
// to time. kube-scheduler requires leaseDuration > renewDeadline and
// renewDeadline > retryPeriod × 1.2 (client-go's JitterFactor).
func LeaderElectionTimings(leaseDuration, renewDeadline, retryPeriod time.Duration) func(map[string]interface{}) error {
	return func(cfg map[string]interface{}) error {
		le, ok := cfg["leaderElection"].(map[string]interface{})
		if !ok || le["leaderElect"] != true {
			return fmt.Errorf("leaderElection.leaderElect is not true: no leader election to time")
		}
		le["leaseDuration"] = leaseDuration.String()
		le["renewDeadline"] = renewDeadline.String()
		le["retryPeriod"] = retryPeriod.String()
		return nil
	}
}

// WithLog adds the end of p's log to err.
func WithLog(p *controlplane.Process, err error) error {
	return fmt.Errorf("%w\nlast lines of %s:\n%s", err, p.LogPath, controlplane.Tail(p.LogPath, 30))
}
