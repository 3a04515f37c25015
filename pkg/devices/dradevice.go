package devices

import (
	"strings"

	resourceapi "k8s.io/api/resource/v1"
)

// NVIDIA's DRA driver (kubernetes-sigs/dra-driver-nvidia-gpu, formerly
// NVIDIA/k8s-dra-driver-gpu) publishes each GPU and MIG device with these
// attributes and capacities; unqualified names belong to the driver's domain.
const (
	NVIDIADRADriver = "gpu.nvidia.com"

	draAttrType         = "type" // "gpu" or "mig" (or "vfio")
	draAttrProductName  = "productName"
	draAttrArchitecture = "architecture"
	draAttrCompute      = "cudaComputeCapability"
	draAttrProfile      = "profile" // MIG profile, e.g. "1g.10gb"
	draCapMemory        = "memory"  // bytes

	draTypeMIG = "mig"
)

// DescribeDRADevice maps a device published in a ResourceSlice by driver
// onto the facts GFD labels give for a device-plugin node, so that one
// devicefit.io/* annotation selects the same GPUs in both worlds:
//
//   - productName is sanitised as GFD sanitises nvidia.com/gpu.product
//     ("NVIDIA L40S" → "NVIDIA-L40S"); a MIG device gets GFD's
//     "<model>-MIG-<profile>", a product of its own as under the single
//     strategy, so a product selector for whole GPUs never takes a slice;
//   - architecture ("Ada Lovelace") → family ("ada-lovelace", GFD's names);
//   - cudaComputeCapability (a version, "8.9.0") → compute 8.9;
//   - capacity memory (bytes) → memory in MiB, GFD's unit;
//   - allowMultipleAllocations (KEP-5075) → shared: the device serves
//     several claims at once, like a time-sliced replica.
//
// Other drivers' devices get no product facts: they are counted and packed,
// and only selectors that ask for nothing (or for exclusive use) accept them.
func DescribeDRADevice(driver string, d *resourceapi.Device) Device {
	var dev Device
	if d == nil {
		return dev
	}
	dev.Shared = d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations
	if driver != NVIDIADRADriver {
		return dev
	}
	if name := draString(driver, d, draAttrProductName); name != "" {
		dev.Product = SanitiseProduct(name)
		if draString(driver, d, draAttrType) == draTypeMIG {
			if profile := draString(driver, d, draAttrProfile); profile != "" {
				dev.Product += migInfix + SanitiseProduct(profile)
			}
		}
	}
	if arch := draString(driver, d, draAttrArchitecture); arch != "" {
		dev.Family = strings.ToLower(SanitiseProduct(arch))
	}
	if a := draAttribute(driver, d, draAttrCompute); a != nil && a.VersionValue != nil {
		dev.Compute, dev.HasCompute = parseVersionCompute(*a.VersionValue)
	}
	if c, ok := d.Capacity[draCapMemory]; ok {
		dev.MemoryMiB = max(c.Value.Value(), 0) >> 20
	} else if c, ok := d.Capacity[resourceapi.QualifiedName(driver+"/"+draCapMemory)]; ok {
		dev.MemoryMiB = max(c.Value.Value(), 0) >> 20
	}
	return dev
}

// draAttribute looks an attribute up by its short name or, as CEL does, by
// the name qualified with the driver's domain.
func draAttribute(driver string, d *resourceapi.Device, name string) *resourceapi.DeviceAttribute {
	if a, ok := d.Attributes[resourceapi.QualifiedName(name)]; ok {
		return &a
	}
	if a, ok := d.Attributes[resourceapi.QualifiedName(driver+"/"+name)]; ok {
		return &a
	}
	return nil
}

func draString(driver string, d *resourceapi.Device, name string) string {
	if a := draAttribute(driver, d, name); a != nil && a.StringValue != nil {
		return *a.StringValue
	}
	return ""
}

// parseVersionCompute reads "major.minor[.patch]" (a semantic version, as
// DRA's VersionValue holds it).
func parseVersionCompute(v string) (Compute, bool) {
	majorText, rest, ok := strings.Cut(v, ".")
	if !ok {
		return Compute{}, false
	}
	minorText, _, _ := strings.Cut(rest, ".")
	major, okMajor := parseSmall(majorText)
	minor, okMinor := parseSmall(minorText)
	if !okMajor || !okMinor {
		return Compute{}, false
	}
	return Compute{Major: major, Minor: minor}, true
}

// SanitiseProduct is GPU Feature Discovery's sanitising of the NVML product
// name into the nvidia.com/gpu.product label (internal/lm/resource.go of
// NVIDIA/k8s-device-plugin): every character but letters, digits, '-', '_',
// '.' and space is dropped, and runs of spaces become one '-'.
func SanitiseProduct(name string) string {
	var b strings.Builder
	b.Grow(len(name))
	for _, r := range name {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_. ", r) {
			b.WriteRune(r)
		}
	}
	return strings.Join(strings.Fields(b.String()), "-")
}
