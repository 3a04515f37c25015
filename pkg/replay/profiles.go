package replay

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedvalidation "k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	frameworkplugins "k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/devicefit/devicefit/pkg/apis/config/scheme"
	dfvalidation "github.com/devicefit/devicefit/pkg/apis/config/validation"
	"github.com/devicefit/devicefit/pkg/plugins/devicefit"
	"github.com/devicefit/devicefit/pkg/plugins/devicepack"
)

// Built-in policy names.
const (
	PolicyDefault       = "default"
	PolicyMostAllocated = "mostallocated"
	PolicyDeviceFit     = "devicefit"
)

// MostAllocatedDeviceWeight is the weight of nvidia.com/gpu (cpu and memory
// weigh 1) in the mostallocated policy's NodeResourcesFit scoring: devices
// dominate the packing, as a cluster operator tuning upstream for GPUs would
// set it.
const MostAllocatedDeviceWeight = 3

// defaultConfig is an empty configuration: the scheme's defaulting makes
// it the upstream default profile (default-scheduler, default plugins,
// NodeResourcesFit LeastAllocated, adaptive percentageOfNodesToScore).
const defaultConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
`

// mostAllocatedConfig is the upstream default plugins with NodeResourcesFit
// scoring MostAllocated, devices weighted, every node scored (the best an
// upstream-only packing can do; sampling would only weaken it).
var mostAllocatedConfig = fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 100
profiles:
- schedulerName: mostallocated
  pluginConfig:
  - name: NodeResourcesFit
    args:
      apiVersion: kubescheduler.config.k8s.io/v1
      kind: NodeResourcesFitArgs
      scoringStrategy:
        type: MostAllocated
        resources:
        - name: cpu
          weight: 1
        - name: memory
          weight: 1
        - name: %s
          weight: %d
`, DeviceResource, MostAllocatedDeviceWeight)

// Policy is a scheduling profile to replay.
type Policy struct {
	// Name labels the policy in the report.
	Name string
	// Source says where the profile came from (a file or "built-in").
	Source  string
	Profile schedconfig.KubeSchedulerProfile
	// PercentageOfNodesToScore is the profile's value, else the
	// configuration's (0 = upstream's adaptive default).
	PercentageOfNodesToScore int32
	// ConfigSHA256 identifies the configuration text the profile came from.
	ConfigSHA256 string
}

// Registry returns the plugins a replay can use: the in-tree registry and
// the devicefit plugins, as cmd/scheduler compiles them in.
func Registry() (frameworkruntime.Registry, error) {
	r := frameworkplugins.NewInTreeRegistry()
	if err := r.Merge(frameworkruntime.Registry{
		devicefit.Name:  devicefit.New,
		devicepack.Name: devicepack.New,
	}); err != nil {
		return nil, err
	}
	return r, nil
}

// DecodeConfig decodes and validates a KubeSchedulerConfiguration as
// kube-scheduler does (strictly, with defaulting), plus the devicefit args
// with field paths. name is used in error messages.
func DecodeConfig(name string, data []byte) (*schedconfig.KubeSchedulerConfiguration, error) {
	obj, gvk, err := scheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	cfg, ok := obj.(*schedconfig.KubeSchedulerConfiguration)
	if !ok {
		return nil, fmt.Errorf("%s: want a KubeSchedulerConfiguration, got %s", name, gvk)
	}
	cfg.TypeMeta.APIVersion = gvk.GroupVersion().String()
	if err := schedvalidation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := dfvalidation.ValidateConfiguration(cfg); err != nil {
		return nil, fmt.Errorf("%s: invalid devicefit plugin args: %w", name, err)
	}
	return cfg, nil
}

// policiesFrom turns a configuration's profiles into policies. One profile
// takes name; several become name/schedulerName.
func policiesFrom(name, source string, data []byte, cfg *schedconfig.KubeSchedulerConfiguration) []Policy {
	out := make([]Policy, 0, len(cfg.Profiles))
	sum := sha256.Sum256(data)
	for _, p := range cfg.Profiles {
		pol := Policy{Name: name, Source: source, Profile: p, ConfigSHA256: hex.EncodeToString(sum[:])}
		if cfg.PercentageOfNodesToScore != nil {
			pol.PercentageOfNodesToScore = *cfg.PercentageOfNodesToScore
		}
		if len(cfg.Profiles) > 1 {
			pol.Name = name + "/" + p.SchedulerName
		}
		if p.PercentageOfNodesToScore != nil {
			pol.PercentageOfNodesToScore = *p.PercentageOfNodesToScore
		}
		out = append(out, pol)
	}
	return out
}

// BuiltinPolicy returns default or mostallocated; devicefit comes from a
// file (LoadPolicies).
func BuiltinPolicy(name string) (Policy, error) {
	var text string
	switch name {
	case PolicyDefault:
		text = defaultConfig
	case PolicyMostAllocated:
		text = mostAllocatedConfig
	default:
		return Policy{}, fmt.Errorf("no built-in policy %q", name)
	}
	cfg, err := DecodeConfig("built-in "+name, []byte(text))
	if err != nil {
		return Policy{}, err
	}
	return policiesFrom(name, "built-in", []byte(text), cfg)[0], nil
}

// LoadPolicies reads a KubeSchedulerConfiguration file; its profiles are
// named after name (or, when name is empty, the file's base name without
// extension).
func LoadPolicies(path, name string) ([]Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cfg, err := DecodeConfig(path, data)
	if err != nil {
		return nil, err
	}
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	return policiesFrom(name, filepath.ToSlash(path), data, cfg), nil
}

// ResolvePolicies turns --policies names (default, mostallocated,
// devicefit) and --profile files into policies; devicefitConfig is the
// file of the devicefit policy. Names must be unique.
func ResolvePolicies(names []string, devicefitConfig string, profileFiles []string) ([]Policy, error) {
	var out []Policy
	for _, n := range names {
		switch n {
		case PolicyDefault, PolicyMostAllocated:
			p, err := BuiltinPolicy(n)
			if err != nil {
				return nil, err
			}
			out = append(out, p)
		case PolicyDeviceFit:
			ps, err := LoadPolicies(devicefitConfig, PolicyDeviceFit)
			if err != nil {
				return nil, err
			}
			out = append(out, ps...)
		default:
			return nil, fmt.Errorf("--policies: unknown policy %q; want %s, %s or %s (other profiles with --profile FILE)",
				n, PolicyDefault, PolicyMostAllocated, PolicyDeviceFit)
		}
	}
	for _, f := range profileFiles {
		ps, err := LoadPolicies(f, "")
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
	}
	seen := map[string]bool{}
	for _, p := range out {
		if seen[p.Name] {
			return nil, fmt.Errorf("policy %q given twice", p.Name)
		}
		seen[p.Name] = true
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no policy to replay")
	}
	return out, nil
}
