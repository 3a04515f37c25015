// Package validation checks a DefragmenterConfiguration with field paths,
// as upstream validates KubeSchedulerConfiguration.
package validation

import (
	"time"

	v1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	componentbaseconfig "k8s.io/component-base/config"
	componentbaseconfigv1alpha1 "k8s.io/component-base/config/v1alpha1"
	componentbasevalidation "k8s.io/component-base/config/validation"

	"github.com/devicefit/devicefit/pkg/apis/defragmenter/v1alpha1"
	"github.com/devicefit/devicefit/pkg/devices"
)

// MaxMovesPerPod bounds pending.maxMoves: a plan evicts its moves one
// batch at a time, and a pod worth more moves than this is better served
// by a person with `kubectl devicefit defrag`.
const MaxMovesPerPod = 16

// ValidateConfiguration returns every error of c, defaulted, with its path.
// deviceResources are the profile's DeviceFit device resources (patterns
// such as nvidia.com/gpu or nvidia.com/mig-*): freeNodes.resource must be
// one of them, since the planner judges only those.
func ValidateConfiguration(c *v1alpha1.DefragmenterConfiguration, deviceResources []string) field.ErrorList {
	var errs field.ErrorList
	if c.SchedulerConfigFile == "" {
		errs = append(errs, field.Required(field.NewPath("schedulerConfigFile"), "the scheduler's KubeSchedulerConfiguration, whose profile plans the moves"))
	}
	errs = append(errs, positive(field.NewPath("interval"), c.Interval.Duration)...)
	errs = append(errs, positive(field.NewPath("moveTimeout"), c.MoveTimeout.Duration)...)
	if g := c.EvictionGracePeriodSeconds; g != nil && *g < 0 {
		errs = append(errs, field.Invalid(field.NewPath("evictionGracePeriodSeconds"), *g, "must be greater than or equal to 0"))
	}
	if p := c.Pending; p != nil {
		path := field.NewPath("pending")
		errs = append(errs, positive(path.Child("after"), p.After.Duration)...)
		if p.MaxMoves < 1 || p.MaxMoves > MaxMovesPerPod {
			errs = append(errs, field.Invalid(path.Child("maxMoves"), p.MaxMoves, "must be between 1 and 16"))
		}
	}
	if f := c.FreeNodes; f != nil {
		errs = append(errs, validateFreeNodes(field.NewPath("freeNodes"), f, deviceResources)...)
	}
	errs = append(errs, validateOptIn(field.NewPath("optIn"), &c.OptIn)...)
	path := field.NewPath("budget")
	if n := c.Budget.MovesPerHour; n == nil || *n < 1 {
		errs = append(errs, field.Invalid(path.Child("movesPerHour"), deref(n), "must be at least 1 (dryRun: true plans without moving)"))
	}
	if n := c.Budget.ConcurrentMoves; n == nil || *n < 1 {
		errs = append(errs, field.Invalid(path.Child("concurrentMoves"), deref(n), "must be at least 1"))
	} else if m := c.Budget.MovesPerHour; m != nil && *m >= 1 && *n > *m {
		errs = append(errs, field.Invalid(path.Child("concurrentMoves"), *n, "must not exceed movesPerHour"))
	}
	var le componentbaseconfig.LeaderElectionConfiguration
	if err := componentbaseconfigv1alpha1.Convert_v1alpha1_LeaderElectionConfiguration_To_config_LeaderElectionConfiguration(&c.LeaderElection, &le, nil); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("leaderElection"), c.LeaderElection, err.Error()))
	} else {
		errs = append(errs, componentbasevalidation.ValidateLeaderElectionConfiguration(&le, field.NewPath("leaderElection"))...)
	}
	// client-go implements only lease locks now.
	if l := c.LeaderElection.ResourceLock; l != "leases" {
		errs = append(errs, field.NotSupported(field.NewPath("leaderElection", "resourceLock"), l, []string{"leases"}))
	}
	return errs
}

func validateFreeNodes(path *field.Path, f *v1alpha1.FreeNodesTrigger, deviceResources []string) field.ErrorList {
	var errs field.ErrorList
	if f.Count < 0 {
		errs = append(errs, field.Invalid(path.Child("count"), f.Count, "must be greater than or equal to 0"))
	}
	if err := devices.ValidateResourcePattern(f.Resource); err != nil || f.Resource == "" {
		msg := "want a device resource name such as nvidia.com/gpu"
		if err != nil {
			msg = err.Error()
		}
		errs = append(errs, field.Invalid(path.Child("resource"), f.Resource, msg))
	} else if set, err := devices.NewResourceSet(deviceResources); err == nil && !set.Contains(v1.ResourceName(f.Resource)) {
		errs = append(errs, field.NotSupported(path.Child("resource"), f.Resource, deviceResources))
	}
	if f.Product != "" {
		if _, err := devices.ParseProductPattern(f.Product); err != nil {
			errs = append(errs, field.Invalid(path.Child("product"), f.Product, err.Error()))
		}
	}
	return errs
}

func validateOptIn(path *field.Path, o *v1alpha1.OptIn) field.ErrorList {
	var errs field.ErrorList
	if len(o.Namespaces) == 0 && o.PodSelector == nil {
		return append(errs, field.Required(path, "name the namespaces or the pod labels whose pods may move (moving a pod restarts it)"))
	}
	seen := sets.New[string]()
	for i, ns := range o.Namespaces {
		p := path.Child("namespaces").Index(i)
		for _, msg := range apivalidation.ValidateNamespaceName(ns, false) {
			errs = append(errs, field.Invalid(p, ns, msg))
		}
		if seen.Has(ns) {
			errs = append(errs, field.Duplicate(p, ns))
		}
		seen.Insert(ns)
	}
	if o.PodSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(o.PodSelector, metav1validation.LabelSelectorValidationOptions{}, path.Child("podSelector"))...)
	}
	return errs
}

func positive(path *field.Path, d time.Duration) field.ErrorList {
	if d <= 0 {
		return field.ErrorList{field.Invalid(path, d.String(), "must be greater than 0")}
	}
	return nil
}

func deref(n *int32) int32 {
	if n == nil {
		return 0
	}
	return *n
}
