package devices

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// NVIDIA GPU Feature Discovery node labels.
const (
	LabelGPUProduct      = "nvidia.com/gpu.product"
	LabelGPUMemory       = "nvidia.com/gpu.memory" // MiB per device
	LabelGPUFamily       = "nvidia.com/gpu.family"
	LabelGPUComputeMajor = "nvidia.com/gpu.compute.major"
	LabelGPUComputeMinor = "nvidia.com/gpu.compute.minor"
	LabelGPUCount        = "nvidia.com/gpu.count"
	LabelMIGStrategy     = "nvidia.com/mig.strategy"
	LabelSharingStrategy = "nvidia.com/gpu.sharing-strategy"
	LabelGPUReplicas     = "nvidia.com/gpu.replicas"
)

// Labels of other vendors' node labellers that name the device model.
const (
	LabelAMDProduct = "amd.com/gpu.product-name"
	LabelAMDFamily  = "amd.com/gpu.family"
	LabelTPUProduct = "cloud.google.com/gke-tpu-accelerator"
)

// MIGStrategy is GFD's nvidia.com/mig.strategy.
type MIGStrategy string

const (
	MIGStrategyNone   MIGStrategy = "none"
	MIGStrategySingle MIGStrategy = "single"
	MIGStrategyMixed  MIGStrategy = "mixed"
)

// Compute is a CUDA compute capability.
type Compute struct{ Major, Minor int }

// AtLeast reports whether c >= min.
func (c Compute) AtLeast(min Compute) bool {
	return c.Major > min.Major || c.Major == min.Major && c.Minor >= min.Minor
}

// Device is what a node's labels say about the devices behind one resource.
// Strings are slices of the label values: building one does not allocate.
type Device struct {
	// Product is the label value as written ("" when the node has none).
	Product string
	// MemoryMiB is the memory of one device (a slice, for MIG); 0 if unknown.
	MemoryMiB int64
	// Count is GFD's device count (nvidia.com/gpu.count or
	// nvidia.com/mig-<profile>.count): physical devices, not replicas.
	Count   int64
	Family  string
	Compute Compute
	// HasCompute is false when the compute labels are absent or not numbers.
	HasCompute bool
	// Shared is true for time-sliced or MPS replicas.
	Shared bool
	// MIGStrategy is the node's strategy; "" when unlabelled.
	MIGStrategy MIGStrategy
	// MIGInvalid is true when GFD reports a broken single-strategy MIG setup.
	MIGInvalid bool
}

// DeviceLabels are the label keys that describe one device resource. Build
// them once per pod (NewDeviceLabels) and read many nodes with Describe: the
// MIG keys are formatted from the profile, and that must not happen per node.
type DeviceLabels struct {
	resource                 v1.ResourceName
	product, memory, family  string
	count                    string
	computeMajor, computeMin string
	mig                      bool
	sharedResource           bool
}

// NewDeviceLabels returns the label keys that describe resource's devices.
// Resources of vendors without a known product label get empty keys: their
// nodes then match no product, memory, family or compute selector.
func NewDeviceLabels(resource v1.ResourceName) DeviceLabels {
	l := DeviceLabels{resource: resource}
	switch {
	case resource == NVIDIAGPU || resource == NVIDIASharedGPU:
		l.product, l.memory, l.family, l.count = LabelGPUProduct, LabelGPUMemory, LabelGPUFamily, LabelGPUCount
		l.computeMajor, l.computeMin = LabelGPUComputeMajor, LabelGPUComputeMinor
		l.sharedResource = resource == NVIDIASharedGPU
	case strings.HasPrefix(string(resource), nvidiaMIGPrefix):
		// Mixed strategy: per-profile product and memory; family and compute
		// are those of the parent GPU.
		base := string(resource)
		l.product, l.memory, l.count = base+".product", base+".memory", base+".count"
		l.family = LabelGPUFamily
		l.computeMajor, l.computeMin = LabelGPUComputeMajor, LabelGPUComputeMinor
		l.mig = true
	case strings.HasPrefix(string(resource), "amd.com/"):
		l.product, l.family = LabelAMDProduct, LabelAMDFamily
	case strings.HasPrefix(string(resource), "google.com/tpu"):
		l.product = LabelTPUProduct
	}
	return l
}

// Resource returns the resource the keys describe.
func (l *DeviceLabels) Resource() v1.ResourceName { return l.resource }

// IsMIG reports whether the resource is a mixed-strategy MIG profile.
func (l *DeviceLabels) IsMIG() bool { return l.mig }

// Describe reads a node's labels. Malformed numeric labels read as unknown
// (0 / HasCompute false), so a selector on them fails closed rather than
// matching on garbage.
func (l *DeviceLabels) Describe(labels map[string]string) Device {
	var d Device
	if l.product != "" {
		d.Product = labels[l.product]
	}
	if l.memory != "" {
		d.MemoryMiB = parseNonNegative(labels[l.memory])
	}
	if l.count != "" {
		d.Count = parseNonNegative(labels[l.count])
	}
	if l.family != "" {
		d.Family = labels[l.family]
	}
	if l.computeMajor != "" {
		major, okMajor := parseSmall(labels[l.computeMajor])
		minor, okMinor := parseSmall(labels[l.computeMin])
		if okMajor && okMinor {
			d.Compute, d.HasCompute = Compute{Major: major, Minor: minor}, true
		}
	}
	d.MIGStrategy = MIGStrategy(labels[LabelMIGStrategy])
	_, profile, sharedSuffix := SplitProduct(d.Product)
	d.MIGInvalid = strings.EqualFold(profile, migInvalid)
	d.Shared = l.sharedResource || sharedSuffix || sharedByStrategy(labels)
	return d
}

// sharedByStrategy reports GFD's sharing labels for replicas > 1.
func sharedByStrategy(labels map[string]string) bool {
	switch labels[LabelSharingStrategy] {
	case "time-slicing", "mps":
		n, ok := parseSmall(labels[LabelGPUReplicas])
		// Replicas that do not parse are treated as shared: refusing an
		// exclusive pod is safer than handing it a slice.
		return !ok || n > 1
	}
	return false
}

// parseNonNegative and parseSmall read decimal labels without strconv, whose
// errors allocate: Describe runs per node per pod.
func parseNonNegative(s string) int64 {
	n, ok := parseDigits(s, 1<<53)
	if !ok {
		return 0
	}
	return n
}

func parseSmall(s string) (int, bool) {
	n, ok := parseDigits(s, 1<<20)
	return int(n), ok
}

func parseDigits(s string, max int64) (int64, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, n <= max
}
