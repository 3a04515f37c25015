package devices

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Well-known device resources. Each is advertised by the vendor's device plugin.
const (
	NVIDIAGPU       v1.ResourceName = "nvidia.com/gpu"
	NVIDIASharedGPU v1.ResourceName = "nvidia.com/gpu.shared"
	// nvidiaMIGPrefix starts every MIG resource under the mixed strategy,
	// e.g. nvidia.com/mig-1g.10gb.
	nvidiaMIGPrefix = "nvidia.com/mig-"
)

// DefaultResourcePatterns returns the device resources recognised when the
// plugin args do not list any. A fresh slice each call: callers may keep it.
func DefaultResourcePatterns() []string {
	return []string{
		string(NVIDIAGPU),
		string(NVIDIASharedGPU),
		nvidiaMIGPrefix + "*",
		"amd.com/gpu",
		"aws.amazon.com/neuron",
		"aws.amazon.com/neuroncore",
		"aws.amazon.com/neurondevice",
		"google.com/tpu",
		"gpu.intel.com/i915",
		"gpu.intel.com/xe",
		"habana.ai/gaudi",
	}
}

// ResourceSet recognises device resources by exact name or by prefix.
// The zero value contains nothing. Contains does not allocate.
type ResourceSet struct {
	exact    map[v1.ResourceName]struct{}
	prefixes []string
}

// NewResourceSet builds a set from exact names ("nvidia.com/gpu") and prefix
// patterns ("nvidia.com/mig-*"). It rejects anything that is not a
// domain-qualified extended resource name, so that a typo in the plugin args
// fails at start-up rather than silently ignoring a device.
func NewResourceSet(patterns []string) (ResourceSet, error) {
	s := ResourceSet{exact: make(map[v1.ResourceName]struct{}, len(patterns))}
	for _, p := range patterns {
		if err := ValidateResourcePattern(p); err != nil {
			return ResourceSet{}, err
		}
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			s.prefixes = append(s.prefixes, prefix)
			continue
		}
		s.exact[v1.ResourceName(p)] = struct{}{}
	}
	return s, nil
}

// ValidateResourcePattern reports why p cannot name device resources, or nil.
func ValidateResourcePattern(p string) error {
	name, isPrefix := strings.CutSuffix(p, "*")
	if strings.Contains(name, "*") {
		return fmt.Errorf("%q: '*' is allowed only at the end", p)
	}
	domain, rest, ok := strings.Cut(name, "/")
	if !ok || domain == "" || rest == "" && !isPrefix {
		return fmt.Errorf("%q: want a domain-qualified extended resource name such as nvidia.com/gpu", p)
	}
	// Extended resources live outside the kubernetes.io namespace, which is
	// reserved for native resources; upstream's IsNativeResource treats any
	// name containing "kubernetes.io/" as native, and so do we. The one
	// exception is DRA's implicit extended resource of every DeviceClass,
	// deviceclass.resource.kubernetes.io/<class> (KEP-5004).
	if strings.Contains(domain+"/", "kubernetes.io/") && domain+"/" != resourceapi.ResourceDeviceClassPrefix {
		return fmt.Errorf("%q: the kubernetes.io domain holds native resources, not devices", p)
	}
	probe := name
	if isPrefix {
		// A prefix is valid when some name that extends it is valid.
		probe = name + "x"
	}
	if errs := validation.IsQualifiedName(probe); len(errs) > 0 {
		return fmt.Errorf("%q: %s", p, strings.Join(errs, "; "))
	}
	return nil
}

// Contains reports whether name is a device resource.
func (s ResourceSet) Contains(name v1.ResourceName) bool {
	if _, ok := s.exact[name]; ok {
		return true
	}
	for _, p := range s.prefixes {
		if strings.HasPrefix(string(name), p) {
			return true
		}
	}
	return false
}

// MIGProfile returns the profile of a MIG resource under the mixed strategy
// ("1g.10gb" for nvidia.com/mig-1g.10gb).
func MIGProfile(name v1.ResourceName) (string, bool) {
	profile, ok := strings.CutPrefix(string(name), nvidiaMIGPrefix)
	if !ok || profile == "" {
		return "", false
	}
	return profile, true
}
