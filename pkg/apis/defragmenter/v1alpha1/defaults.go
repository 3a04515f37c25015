package v1alpha1

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	componentbaseconfigv1alpha1 "k8s.io/component-base/config/v1alpha1"
	"k8s.io/utils/ptr"
)

// Defaults the manifests and the docs name.
const (
	DefaultSchedulerName  = "devicefit"
	DefaultLeaseName      = "devicefit-defragmenter"
	DefaultLeaseNamespace = "devicefit-system"
	DefaultResource       = "nvidia.com/gpu"
)

// SetDefaults_DefragmenterConfiguration fills what is unset.
func SetDefaults_DefragmenterConfiguration(c *DefragmenterConfiguration) {
	if c.SchedulerName == "" {
		c.SchedulerName = DefaultSchedulerName
	}
	if c.Interval.Duration == 0 {
		c.Interval.Duration = 30 * time.Second
	}
	if c.Pending == nil {
		c.Pending = &PendingTrigger{}
	}
	if c.Pending.Enabled == nil {
		c.Pending.Enabled = ptr.To(true)
	}
	if c.Pending.After.Duration == 0 {
		c.Pending.After.Duration = 2 * time.Minute
	}
	if c.Pending.MaxMoves == 0 {
		c.Pending.MaxMoves = 2
	}
	if c.FreeNodes != nil && c.FreeNodes.Resource == "" {
		c.FreeNodes.Resource = DefaultResource
	}
	if c.Budget.MovesPerHour == nil {
		c.Budget.MovesPerHour = ptr.To[int32](10)
	}
	if c.Budget.ConcurrentMoves == nil {
		c.Budget.ConcurrentMoves = ptr.To[int32](1)
	}
	if c.MoveTimeout.Duration == 0 {
		c.MoveTimeout.Duration = 5 * time.Minute
	}
	le := &c.LeaderElection
	if le.ResourceName == "" {
		le.ResourceName = DefaultLeaseName
	}
	if le.ResourceNamespace == "" {
		le.ResourceNamespace = DefaultLeaseNamespace
	}
	// component-base's recommended default lock is still "endpoints", which
	// client-go no longer implements; leases, as kube-scheduler's defaults.
	if le.ResourceLock == "" {
		le.ResourceLock = "leases"
	}
	// Leader election on by default, 15s/10s/2s: component-base's
	// recommended defaults, as kube-scheduler's.
	componentbaseconfigv1alpha1.RecommendedDefaultLeaderElectionConfiguration(le)
}

var _ = runtime.Object(&DefragmenterConfiguration{})
