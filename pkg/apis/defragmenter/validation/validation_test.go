package validation

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/devicefit/devicefit/pkg/apis/defragmenter/v1alpha1"
)

func valid() *v1alpha1.DefragmenterConfiguration {
	c := &v1alpha1.DefragmenterConfiguration{
		SchedulerConfigFile: "/etc/devicefit/scheduler-config.yaml",
		OptIn:               v1alpha1.OptIn{Namespaces: []string{"batch"}},
		FreeNodes:           &v1alpha1.FreeNodesTrigger{Count: 1},
	}
	v1alpha1.SetObjectDefaults_DefragmenterConfiguration(c)
	return c
}

func TestValidateConfiguration(t *testing.T) {
	profile := []string{"nvidia.com/gpu", "nvidia.com/mig-*"}
	tests := []struct {
		name string
		edit func(*v1alpha1.DefragmenterConfiguration)
		// want are the errors' texts, in order; none for a valid config.
		want []string
	}{
		{name: "defaults with an opt-in", edit: func(*v1alpha1.DefragmenterConfiguration) {}},
		{name: "a MIG resource the profile matches by prefix", edit: func(c *v1alpha1.DefragmenterConfiguration) {
			c.FreeNodes.Resource = "nvidia.com/mig-1g.10gb"
		}},
		{name: "negative budget", edit: func(c *v1alpha1.DefragmenterConfiguration) {
			c.Budget.MovesPerHour = ptr.To[int32](-1)
		}, want: []string{"budget.movesPerHour: Invalid value: -1: must be at least 1"}},
		{name: "no concurrent moves", edit: func(c *v1alpha1.DefragmenterConfiguration) {
			c.Budget.ConcurrentMoves = ptr.To[int32](0)
		}, want: []string{"budget.concurrentMoves: Invalid value: 0: must be at least 1"}},
		{name: "more concurrent moves than per hour", edit: func(c *v1alpha1.DefragmenterConfiguration) {
			c.Budget.MovesPerHour, c.Budget.ConcurrentMoves = ptr.To[int32](2), ptr.To[int32](3)
		}, want: []string{"budget.concurrentMoves: Invalid value: 3: must not exceed movesPerHour"}},
		{name: "unknown resource", edit: func(c *v1alpha1.DefragmenterConfiguration) {
			c.FreeNodes.Resource = "amd.com/gpu"
		}, want: []string{`freeNodes.resource: Unsupported value: "amd.com/gpu": supported values: "nvidia.com/gpu", "nvidia.com/mig-*"`}},
		{name: "malformed resource", edit: func(c *v1alpha1.DefragmenterConfiguration) {
			c.FreeNodes.Resource = "gpu"
		}, want: []string{`freeNodes.resource: Invalid value: "gpu": "gpu": want a domain-qualified extended resource name such as nvidia.com/gpu`}},
		{name: "negative count", edit: func(c *v1alpha1.DefragmenterConfiguration) {
			c.FreeNodes.Count = -2
		}, want: []string{"freeNodes.count: Invalid value: -2: must be greater than or equal to 0"}},
		{name: "no opt-in", edit: func(c *v1alpha1.DefragmenterConfiguration) {
			c.OptIn = v1alpha1.OptIn{}
		}, want: []string{"optIn: Required value: name the namespaces or the pod labels whose pods may move"}},
		{name: "bad namespace and duplicate", edit: func(c *v1alpha1.DefragmenterConfiguration) {
			c.OptIn.Namespaces = []string{"batch", "Batch_2", "batch"}
		}, want: []string{`optIn.namespaces[1]: Invalid value: "Batch_2"`, `optIn.namespaces[2]: Duplicate value: "batch"`}},
		{name: "bad pod selector", edit: func(c *v1alpha1.DefragmenterConfiguration) {
			c.OptIn.PodSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}
		}, want: []string{`optIn.podSelector.matchExpressions[0].operator: Invalid value: "Near"`}},
		{name: "max moves out of range", edit: func(c *v1alpha1.DefragmenterConfiguration) {
			c.Pending.MaxMoves = 17
		}, want: []string{"pending.maxMoves: Invalid value: 17: must be between 1 and 16"}},
		{name: "negative durations", edit: func(c *v1alpha1.DefragmenterConfiguration) {
			c.Interval.Duration, c.Pending.After.Duration = -time.Second, -time.Minute
			c.EvictionGracePeriodSeconds = ptr.To[int64](-1)
		}, want: []string{`interval: Invalid value: "-1s": must be greater than 0`, "evictionGracePeriodSeconds: Invalid value: -1",
			`pending.after: Invalid value: "-1m0s": must be greater than 0`}},
		{name: "no scheduler config", edit: func(c *v1alpha1.DefragmenterConfiguration) {
			c.SchedulerConfigFile = ""
		}, want: []string{"schedulerConfigFile: Required value"}},
		{name: "leader election timings", edit: func(c *v1alpha1.DefragmenterConfiguration) {
			c.LeaderElection.RenewDeadline.Duration = time.Minute
		}, want: []string{`leaderElection.leaseDuration: Invalid value: "1m0s": must be greater than`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			tc.edit(c)
			errs := ValidateConfiguration(c, profile)
			if len(errs) != len(tc.want) {
				t.Fatalf("got %d errors, want %d:\n%v", len(errs), len(tc.want), errs)
			}
			for i, err := range errs {
				if !strings.Contains(err.Error(), tc.want[i]) {
					t.Errorf("error %d: %q\nwant it to contain %q", i, err.Error(), tc.want[i])
				}
			}
		})
	}
}
