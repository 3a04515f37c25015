package support

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	"k8s.io/kubernetes/pkg/features"
)

// Feature is one device feature of devicefit and whether a control plane
// serves it: the README's support table, one row, for one cluster.
type Feature struct {
	// Name as the README's support table names it.
	Name string
	On   bool
	// Off says what a user gets instead when On is false.
	Off string
}

// Line is the feature as one line of the startup log and of kubectl
// devicefit, e.g. "DRA-backed extended resources (KEP-5004): not served by
// this API server (v1.35); pods asking nvidia.com/gpu are placed on
// device-plugin nodes only".
func (f Feature) Line(c *Cluster) string {
	if f.On {
		return f.Name + ": on"
	}
	return fmt.Sprintf("%s: not served by this API server (%s); %s", f.Name, c.Minor(), f.Off)
}

// MutatingAdmissionPolicies is the API of devicefit's routing policy
// (manifests/components/routing): admissionregistration.k8s.io/v1, served
// by default from Kubernetes 1.36.
var MutatingAdmissionPolicies = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicies"}

// podGroups is the Workload API's PodGroup as the v1.37 scheduler lists it.
var podGroups = schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1beta1", Resource: "podgroups"}

// Features are devicefit's device features on c, with the scheduler's
// feature gates (after emulation and DisableUnservedGates): a DRA feature
// that rides on fields of resource.k8s.io/v1 (not a resource of its own) is
// served exactly when its gate is on at the server's minor, which is what
// the emulated gates say; a feature with an API of its own must also be in
// discovery.
func Features(c *Cluster, gates featuregate.FeatureGate) []Feature {
	dra := gates.Enabled(features.DynamicResourceAllocation) && servesAll(c, draAPIs)
	on := func(f featuregate.Feature) bool { return dra && gates.Enabled(f) }
	return []Feature{
		{Name: "Dynamic Resource Allocation (resource.k8s.io/v1)", On: dra,
			Off: "pods with ResourceClaims stay pending; GPUs come through device plugins only"},
		{Name: "DRA-backed extended resources (KEP-5004)", On: on(features.DRAExtendedResource),
			Off: "pods asking nvidia.com/gpu are placed on device-plugin nodes only"},
		{Name: "Partitionable devices (KEP-4815)", On: on(features.DRAPartitionableDevices),
			Off: "MIG devices over shared counters are not published; whole GPUs and fixed MIG devices are"},
		{Name: "Consumable capacity (KEP-5075)", On: on(features.DRAConsumableCapacity),
			Off: "a DRA device serves one claim at a time; shared GPUs come through the device plugin (time-slicing, MPS)"},
		{Name: "Workload API and gang placement (KEP-4671)", On: gates.Enabled(features.GenericWorkload) && c.Serves(podGroups),
			Off: "pods are placed one by one; gangs need scheduling.k8s.io/v1beta1 and the GenericWorkload gate (docs/gangs.md)"},
		{Name: "Routing policy (MutatingAdmissionPolicy v1)", On: c.Serves(MutatingAdmissionPolicies),
			Off: "device pods are not routed to devicefit; they must name schedulerName: devicefit"},
	}
}

func servesAll(c *Cluster, rs []schema.GroupVersionResource) bool {
	for _, r := range rs {
		if !c.Serves(r) {
			return false
		}
	}
	return true
}

// DefaultFeatures are Features on c with the gates a devicefit-scheduler
// started without --emulated-version or --feature-gates has there: it
// emulates c's minor when older than its own (Emulation, returned; nil for
// the binary's own) and keeps that minor's defaults. kubectl devicefit and
// the local run say what the scheduler can do from this, without asking it.
func DefaultFeatures(c *Cluster) ([]Feature, *version.Version, error) {
	emulate, err := Emulation(c.Version, nil)
	if err != nil {
		return nil, nil, err
	}
	gates, err := GatesAt(emulate)
	if err != nil {
		return nil, nil, err
	}
	return Features(c, gates), emulate, nil
}

// GatesAt are the scheduler's default feature gates when it emulates minor
// (nil: the binary's own): what a devicefit-scheduler started without
// --feature-gates runs with against that server. kubectl devicefit reads
// them to say what the scheduler can do without asking the scheduler.
func GatesAt(minor *version.Version) (featuregate.MutableVersionedFeatureGate, error) {
	gates := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	if minor == nil {
		return gates, nil
	}
	if err := gates.SetEmulationVersion(minor); err != nil {
		return nil, fmt.Errorf("the feature gates of Kubernetes %s: %w", minor, err)
	}
	return gates, nil
}
