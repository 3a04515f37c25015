// Package replay replays a GPU-cluster trace through the real kube-scheduler
// framework: the same plugins (upstream's and devicefit's) and the same
// KubeSchedulerConfiguration profiles as the deployed scheduler, over a
// simulated fleet held in memory, one pod at a time.
//
// # Inputs
//
// The Alibaba GPU trace v2023 (cluster-trace-gpu-v2023) CSVs, read strictly
// (errors say file:line:column: column: problem): nodes
// sn,cpu_milli,memory_mib,gpu,model; pods
// name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,qos,pod_phase,
// creation_time,deletion_time,scheduled_time]. Or the own YAML format (see
// yamlFile). A node becomes a v1.Node with cpu, memory, 256 pods and
// nvidia.com/gpu, labelled as GPU Feature Discovery would
// (nvidia.com/gpu.product = the trace's model code, .count, .present).
// A pod has one container whose requests equal its limits; gpu_spec "A|B"
// becomes the devicefit.io/products annotation for profiles that enable
// DeviceFit, and a required node affinity on nvidia.com/gpu.product for the
// others, so every policy honours the same constraints. Fractional pods
// (gpu_milli < 1000) take one whole device or are skipped (ApplyFractional).
//
// # Arrival (the FGD method)
//
// As in FGD's simulator (hkust-adsl/kubernetes-scheduler-simulator, used for
// "Beware of Fragmentation", ATC'23), counting whole devices: the trace's
// pods are shuffled with the seed (or kept in file order), then resized to
// Tune × the fleet's devices, by appending copies drawn with replacement or
// by removing random pods (see Arrivals). Nothing departs; a pod that fits
// nowhere fails for good (no preemption, no retry).
//
// # Engine
//
// Per policy, a fresh fleet: a scheduler snapshot of the nodes, the
// framework built by frameworkruntime.NewFramework from the profile with
// the in-tree registry plus DeviceFit and DevicePack, an informer factory
// over an empty fake clientset (plugins that list volumes or DRA objects
// find none) and a DRA manager as scheduler.New builds it. Per pod, with a
// new CycleState, what schedule_one.go does minus binding:
//
//   - PreFilter; a rejection fails the pod.
//   - Filter on the nodes in fleet order, rotating the start as upstream's
//     nextStartNodeIndex does, until the profile's percentageOfNodesToScore
//     (upstream's rule, including the adaptive default and the 100-node
//     minimum) has found enough feasible nodes. Nodes are filtered in
//     parallel chunks but counted in rotation order, so the result does not
//     depend on timing (upstream counts in completion order).
//   - One feasible node is taken; else PreScore and Score (NormalizeScore,
//     weights) and the highest total wins.
//   - Ties go to the node listed first in the fleet file. (Upstream takes
//     whatever its heap yields, which depends on the order its parallel
//     filters finished.)
//   - Reserve, then the pod is assumed in the snapshot (Snapshot.AssumePod)
//     and the next pod sees it. No Permit, PreBind, Bind or PostFilter.
//
// A capacity pre-screen keeps nodes that lack the pod slot, cpu, memory or
// devices the pod requests away from the framework when NodeResourcesFit
// filters (it would reject them anyway); EngineOptions.NoPrescreen turns it
// off, and a test checks that placements do not change.
//
// # Metrics
//
// With capacity = the fleet's devices, after each pod: arrived = devices
// requested by the pods tried so far; allocated = devices bound;
// unallocated = capacity - allocated; fragmented = Σ over nodes of
// devices.Workload.Stranded (expected free devices a job drawn from the
// workload could not use there), where the workload is the trace's own
// device pods grouped by devices, cpu, memory and accepted models and
// weighted by frequency (FGD's definition, discrete). All as % of capacity.
// CPU-only pods take cpu and memory (and so can strand devices) but count in
// no device figure; failed_pods counts every failed pod, failed_device_pods
// those with devices.
//
// The report has a point at every whole arrived percent p: the state after
// the last pod that kept arrived demand at or below p.
//
// # Determinism
//
// The same inputs and flags give byte-identical JSON: the arrival sequence
// comes from our own draws on a PCG generator, pod UIDs are positions,
// filtering and tie-breaking do not depend on goroutine timing, and
// percentages are rounded to two decimals. Only --timing adds a field that
// differs between runs (wall_seconds).
//
// # Variants
//
// Variant (replay variant) draws a workload from a trace the way the
// trace's other pod lists were sampled from its default one: the share of
// GPU pods that are fractional and the number and CPU of the CPU-only pods
// changed, each group resized on its own with seeded draws. With it a
// packing is judged on shapes of workload it was not tuned on
// (docs/placement.md). WriteFGDComparison sets replays beside FGD's
// published figures.
package replay
