package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	componentbaseconfigv1alpha1 "k8s.io/component-base/config/v1alpha1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DefragmenterConfiguration configures devicefit-defragmenter: which pods
// it may move, when, and how many per hour. It plans with the same code as
// `kubectl devicefit defrag` and the scheduler profile of
// SchedulerConfigFile, so a plan places pods as the scheduler would.
type DefragmenterConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	// SchedulerConfigFile is the scheduler's KubeSchedulerConfiguration (the
	// manifests mount the scheduler's ConfigMap). Required.
	SchedulerConfigFile string `json:"schedulerConfigFile"`
	// SchedulerName picks the profile of SchedulerConfigFile to plan with.
	// Default: devicefit (the manifests' profile).
	SchedulerName string `json:"schedulerName,omitempty"`
	// DryRun: plan and report (Events, metrics, logs) but evict nothing.
	DryRun bool `json:"dryRun,omitempty"`
	// Interval between two looks at the cluster. Default: 30s.
	Interval metav1.Duration `json:"interval,omitempty"`

	// Pending makes room for device pods pending for a while. Default:
	// enabled, after 2m, at most 2 moves per pod.
	Pending *PendingTrigger `json:"pending,omitempty"`
	// FreeNodes keeps whole device nodes free (for a large job, or for a
	// cluster autoscaler to scale down). Default: off.
	FreeNodes *FreeNodesTrigger `json:"freeNodes,omitempty"`

	// OptIn says which pods may move. Nothing moves unless it is set:
	// moving a pod restarts it.
	OptIn OptIn `json:"optIn"`
	// Budget caps moves so that no burst exceeds it.
	Budget Budget `json:"budget,omitempty"`

	// EvictionGracePeriodSeconds overrides each evicted pod's
	// terminationGracePeriodSeconds when set.
	EvictionGracePeriodSeconds *int64 `json:"evictionGracePeriodSeconds,omitempty"`
	// MoveTimeout bounds the wait for a moved pod to be gone and its
	// controller's replacement scheduled. Default: 5m.
	MoveTimeout metav1.Duration `json:"moveTimeout,omitempty"`

	// LeaderElection: one replica acts at a time. Default: enabled, lease
	// devicefit-system/devicefit-defragmenter.
	LeaderElection componentbaseconfigv1alpha1.LeaderElectionConfiguration `json:"leaderElection"`
}

// PendingTrigger moves pods when a device pod has been unschedulable for
// After and fits a node after at most MaxMoves moves.
type PendingTrigger struct {
	// Enabled: false turns the trigger off. Default: true.
	Enabled *bool `json:"enabled,omitempty"`
	// After is how long the pod must have been unschedulable. Default: 2m.
	After metav1.Duration `json:"after,omitempty"`
	// MaxMoves is the most pods moved for one pending pod. Default: 2.
	MaxMoves int32 `json:"maxMoves,omitempty"`
}

// FreeNodesTrigger keeps Count nodes advertising Resource (of Product, when
// set) with none of it allocated, moving pods when fewer are.
type FreeNodesTrigger struct {
	// Count of whole-free nodes wanted; 0 turns the trigger off.
	Count int32 `json:"count"`
	// Resource is a device resource of the profile. Default: nvidia.com/gpu.
	Resource string `json:"resource,omitempty"`
	// Product restricts the nodes to a product, as devicefit.io/products
	// patterns do (e.g. NVIDIA-H100*).
	Product string `json:"product,omitempty"`
}

// OptIn selects the pods that may move: those in Namespaces, and those whose
// labels match PodSelector (a workload opts in by labelling its pod
// template). A pod must also be recreated by its controller (not bare,
// static or a DaemonSet's), be of no higher priority than the pending pod,
// and be allowed a disruption by its PodDisruptionBudgets.
type OptIn struct {
	Namespaces  []string              `json:"namespaces,omitempty"`
	PodSelector *metav1.LabelSelector `json:"podSelector,omitempty"`
}

// Budget bounds the moves made: a plan starts only when all of its moves
// fit the budget.
type Budget struct {
	// MovesPerHour: pods evicted in any sliding hour. Default: 10.
	MovesPerHour *int32 `json:"movesPerHour,omitempty"`
	// ConcurrentMoves: pods evicted whose replacement is not scheduled yet.
	// Default: 1.
	ConcurrentMoves *int32 `json:"concurrentMoves,omitempty"`
}
