// Package results holds the JSON test/perf writes beside scheduler_perf's
// data items (BenchmarkPerfScheduling_extras_*.json: what the placement and
// gang checks found, per workload) and test/perf/benchsummary reads: one
// definition for the writer and the reader.
package results

// File is one run's extras file.
type File struct {
	Version   string     `json:"version"` // v1
	Workloads []Workload `json:"workloads"`
}

// Workload is what scheduler_perf's data items do not carry, one per
// workload: the placement check, the batching counters and the peak RSS.
type Workload struct {
	// Name is the benchmark name, e.g. BenchmarkPerfScheduling/GPUFleet_DeviceFit/500Nodes.
	Name string `json:"name"`
	// PeakRSSMiB is the process's VmHWM from the start of the workload (after
	// the apiserver and scheduler started) to its end. scheduler_perf runs
	// kube-apiserver, the scheduler and the test client in this one process,
	// so it is not the scheduler's alone: compare it between profiles. -1
	// when /proc cannot reset or report it.
	PeakRSSMiB float64 `json:"peakRSSMiB"`
	// Counters over the whole workload (initial and measured pods), summed
	// over the scheduler's only profile, from its own metrics.
	ScheduleAttempts map[string]float64 `json:"scheduleAttempts"` // scheduler_schedule_attempts_total by result
	BatchAttempts    map[string]float64 `json:"batchAttempts"`    // scheduler_batch_attempts_total by result
	BatchFlushes     map[string]float64 `json:"batchFlushes"`     // scheduler_batch_cache_flushed_total by reason
	Placement        Placement          `json:"placement"`
	// Gangs is the domain-level outcome of a workload with pod groups.
	Gangs *Gangs `json:"gangs,omitempty"`
	// Span times the measured phase of a workload whose pods wait for
	// their PodGroups (CliqueFleet).
	Span *Span `json:"span,omitempty"`
}

// Span is the measured phase as a watch in the benchmark's process saw it:
// from the first PodGroup created to the last measured pod bound.
type Span struct {
	Seconds float64 `json:"seconds"`
	Pods    int     `json:"pods"`
}

// Placement is what the check found among the pods bound at the end.
type Placement struct {
	BoundPods int `json:"boundPods"`
	// BoundByNamespace splits BoundPods: "measure" holds the measured pods.
	BoundByNamespace map[string]int `json:"boundByNamespace"`
	DevicePods       int            `json:"devicePods"`
	// SelectorViolations are bound device pods on a node whose devices
	// their devicefit.io/* annotations reject. Always 0 for the devicefit
	// profile (else the workload fails); the default scheduler does not read
	// the annotations.
	SelectorViolations int `json:"selectorViolations"`
	// Overcommitted counts node/resource pairs whose bound pods request more
	// devices than the node has, and violations of the DRA invariant (a
	// device in two claims, a shared counter over its value): never
	// allowed, under either profile.
	Overcommitted int `json:"overcommitted"`
	// DRADevices is the devices claims hold.
	DRADevices int `json:"draDevices,omitempty"`
}

// Gangs is the domain-level outcome at the end of a workload with pod
// groups (docs/placement.md, "Gangs"): what the API server holds then.
type Gangs struct {
	Domains int `json:"domains"`
	// GPUs is the fleet's GPUs in domains; Allocated those bound pods
	// request, InGangs the part of them held by pods of a pod group.
	GPUs      int64 `json:"gpus"`
	Allocated int64 `json:"allocated"`
	InGangs   int64 `json:"inGangs"`
	// GroupsArrived are the PodGroups with pods (a group whose pods have
	// all left, as GangMix's jobs do, is gone); GroupsPlaced those with at
	// least minCount pods bound.
	GroupsArrived int `json:"groupsArrived"`
	GroupsPlaced  int `json:"groupsPlaced"`
	// PodsArrived/PodsBound of the pods outside any group.
	SinglesArrived int `json:"singlesArrived"`
	SinglesBound   int `json:"singlesBound"`
	// WholeDomains have none of their GPUs requested.
	WholeDomains int `json:"wholeDomains"`
	// Stranded are free GPUs that no gang shape of the workload (pods x
	// GPUs per pod, from its PodGroups) could use: all the free GPUs of a
	// domain no shape fits any more, and in the others the free GPUs left
	// on a node below a whole pod of the smallest fitting per-pod size.
	Stranded int64 `json:"stranded"`
	// Shapes are the gang shapes, "pods x gpus".
	Shapes []string `json:"shapes"`
}
