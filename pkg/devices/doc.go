// Package devices is the device model of devicefit: which extended resources
// are discrete devices, what a pod demands of them, what a node's devices are
// (from NVIDIA GPU Feature Discovery labels and the vendors' equivalents), and
// which devices a pod's devicefit.io/* annotations select.
//
// It is pure Go over plain values: no scheduler framework and no client-go, so
// the plugins, the metrics collector and the replay tool share one model, and
// the parsers can be tested with tables and fuzzed.
//
// Kubernetes facts the model rests on:
//   - A device plugin advertises devices as an extended resource: an integer
//     count that is never overcommitted; a container must set a limit, and the
//     request, if set, must equal it (the API server defaults it to the limit).
//   - GFD labels describe one kind of device per node: nvidia.com/gpu.product,
//     .memory (MiB), .family, .compute.major/.minor, .count. Under the MIG
//     "single" strategy nvidia.com/gpu counts MIG slices and the product reads
//     "<model>-MIG-<profile>"; under "mixed" each profile is its own resource
//     nvidia.com/mig-<profile> with labels nvidia.com/mig-<profile>.product,
//     .memory and .count. With time-slicing or MPS and replicas > 1 the product
//     gets a "-SHARED" suffix (or the resource is renamed nvidia.com/gpu.shared).
//
// Fragmentation (fragmentation.go) follows FGD ("Beware of Fragmentation",
// ATC'23), made discrete: for a node, the expected number of its free devices
// that a job drawn from the workload distribution could not use there,
// because the job needs more devices than are free, or the node's free CPU or
// memory cannot carry it, or it wants another device resource, or its product
// selector rejects the node:
//
//	F(node) = Σ_class weight(class) · (free devices if the class cannot run there, else 0)
//
// DRA devices (drainventory.go, drausage.go, drafragmentation.go) are laid out in the
// upstream allocator's first-fit order and measured in hardware units: a GPU
// and its MIG partitions are one piece of hardware. Shared devices
// (consumable capacity, KEP-5075, drashares.go) follow FGD's definition on
// partial GPUs: a device's free share is what its allocations leave of its
// capacities; a job asking for a share s can use devices with at least s
// free, a job asking for whole devices only untouched ones, and the rest of
// the node's free share is fragmented for that job:
//
//	F(node) = Σ_class weight(class) · (free share − Σ free share of the devices the class can use)
//
// FGD's example: free shares (1, 0.5, 0.2), jobs of half a GPU and of one GPU
// equally likely: ½·0.2 + ½·0.7 = 0.45 GPU fragmented.
package devices
