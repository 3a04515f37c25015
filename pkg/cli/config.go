// Package cli is what `kubectl devicefit` computes and prints, apart from
// its command line (cmd/kubectl-devicefit): the deployed profile
// (config.go), the device inventory and DRA pools (inventory.go, pools.go),
// the snapshot of a cluster (snapshot.go), the figures of a defragmentation plan (defrag.go) and
// the printing of all of them (print.go, explain.go). The simulations
// themselves (explain, defrag plans) and the replay file are pkg/replay's. It reads the API
// server only: nothing here needs the scheduler to run.
package cli

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/devicefit/devicefit/pkg/apis/config"
	"github.com/devicefit/devicefit/pkg/plugins/devicefit"
	"github.com/devicefit/devicefit/pkg/plugins/devicepack"
	"github.com/devicefit/devicefit/pkg/replay"
)

// ConfigFile is the key of the KubeSchedulerConfiguration in the
// scheduler's ConfigMap (manifests/kustomization.yaml).
const ConfigFile = "scheduler-config.yaml"

// DefaultScheduler is the Deployment manifests/ installs.
const DefaultScheduler = "devicefit-system/devicefit-scheduler"

// Profile is the devicefit profile the tools judge with, and where it came
// from.
type Profile struct {
	// Source says where: "configmap devicefit-system/devicefit-scheduler-config-abc (deployment ...)",
	// a file path, or "defaults" with the reason.
	Source  string
	Profile schedconfig.KubeSchedulerProfile
	// Profiles are the scheduler names of every profile of the
	// configuration: the pods any of them places are devicefit's.
	Profiles []string
	// Data is the configuration's text (nil for defaults).
	Data []byte
	// Fit and Pack are the profile's plugin args, defaulted; Pack is nil
	// when the profile lacks DevicePack.
	Fit  *config.DeviceFitArgs
	Pack *config.DevicePackArgs
}

// defaultConfig is manifests' choice of plugins with every arg defaulted,
// for a cluster where the scheduler's configuration cannot be read.
const defaultConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: devicefit
  plugins:
    multiPoint:
      enabled:
      - name: DeviceFit
      - name: DevicePack
    postFilter:
      enabled:
      - name: DevicePack
`

// LoadProfile reads the profile named schedulerName from file when file is
// set, else from the ConfigMap the scheduler Deployment (namespace/name)
// mounts. A Deployment or ConfigMap that is absent or not readable gives
// the plugins' defaults, with the reason in Source; a configuration that is
// there but invalid is an error.
func LoadProfile(ctx context.Context, cs kubernetes.Interface, file, deployment, schedulerName string) (*Profile, error) {
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		return profileFrom(file, data, schedulerName)
	}
	data, source, err := deployedConfig(ctx, cs, deployment)
	if err != nil {
		if !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) && !isMissing(err) {
			return nil, err
		}
		p, derr := profileFrom("built-in defaults", []byte(defaultConfig), "devicefit")
		if derr != nil {
			return nil, derr
		}
		p.Source = "defaults (" + err.Error() + ")"
		p.Data = nil
		return p, nil
	}
	return profileFrom(source, data, schedulerName)
}

// missing is a Deployment without the configuration volume or key.
type missing struct{ what string }

func (m missing) Error() string { return m.what }

func isMissing(err error) bool { _, ok := err.(missing); return ok }

// deployedConfig finds the KubeSchedulerConfiguration a scheduler
// Deployment runs with: the ConfigMap of its volume named "config"
// (manifests/deployment.yaml; the name carries kustomize's content hash).
func deployedConfig(ctx context.Context, cs kubernetes.Interface, deployment string) ([]byte, string, error) {
	ns, name, ok := strings.Cut(deployment, "/")
	if !ok || ns == "" || name == "" {
		return nil, "", fmt.Errorf("--scheduler %q: want NAMESPACE/DEPLOYMENT", deployment)
	}
	d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, "", err
	}
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name != "config" || v.ConfigMap == nil {
			continue
		}
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
		if err != nil {
			return nil, "", err
		}
		data, ok := cm.Data[ConfigFile]
		if !ok {
			return nil, "", missing{fmt.Sprintf("configmap %s/%s has no %s", ns, cm.Name, ConfigFile)}
		}
		return []byte(data), fmt.Sprintf("configmap %s/%s (deployment %s)", ns, cm.Name, deployment), nil
	}
	return nil, "", missing{fmt.Sprintf("deployment %s mounts no configmap as volume \"config\"", deployment)}
}

// profileFrom decodes data as kube-scheduler does and picks the profile.
func profileFrom(source string, data []byte, schedulerName string) (*Profile, error) {
	cfg, err := replay.DecodeConfig(source, data)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, p := range cfg.Profiles {
		names = append(names, p.SchedulerName)
		if p.SchedulerName != schedulerName {
			continue
		}
		out := &Profile{Source: source, Profile: p, Data: data}
		for _, q := range cfg.Profiles {
			out.Profiles = append(out.Profiles, q.SchedulerName)
		}
		for _, pc := range p.PluginConfig {
			switch args := pc.Args.(type) {
			case *config.DeviceFitArgs:
				if pc.Name == devicefit.Name {
					out.Fit = args
				}
			case *config.DevicePackArgs:
				if pc.Name == devicepack.Name {
					out.Pack = args
				}
			}
		}
		if out.Fit == nil {
			return nil, fmt.Errorf("%s: profile %q has no DeviceFit args: not a devicefit profile", source, schedulerName)
		}
		if !enabled(p, devicepack.Name) {
			out.Pack = nil
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: no profile %q (profiles: %s)", source, schedulerName, strings.Join(names, ", "))
}

// enabled reports whether a plugin scores in the profile: enabled at Score
// or multiPoint (which the framework expands into Score) and not disabled
// at Score.
func enabled(p schedconfig.KubeSchedulerProfile, name string) bool {
	if p.Plugins == nil {
		return false
	}
	has := func(list []schedconfig.Plugin) bool {
		return slices.ContainsFunc(list, func(e schedconfig.Plugin) bool { return e.Name == name || e.Name == "*" })
	}
	if has(p.Plugins.Score.Disabled) {
		return false
	}
	return has(p.Plugins.Score.Enabled) || has(p.Plugins.MultiPoint.Enabled)
}
