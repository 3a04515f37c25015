package defrag

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/devicefit/devicefit/pkg/apis/defragmenter/v1alpha1"
)

const schedulerConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: devicefit
  plugins:
    multiPoint:
      enabled:
      - name: DeviceFit
      - name: DevicePack
  pluginConfig:
  - name: DeviceFit
    args:
      deviceResources: [nvidia.com/gpu, amd.com/gpu]
`

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	sched := filepath.Join(dir, "scheduler-config.yaml")
	if err := os.WriteFile(sched, []byte(schedulerConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	head := "apiVersion: devicefit.io/v1alpha1\nkind: DefragmenterConfiguration\nschedulerConfigFile: " + sched + "\n"
	tests := []struct {
		name, body string
		// wantErr: substrings of the error; none for a valid file.
		wantErr []string
		check   func(*testing.T, *v1alpha1.DefragmenterConfiguration)
	}{
		{name: "defaults", body: "optIn: {namespaces: [batch]}\n", check: func(t *testing.T, c *v1alpha1.DefragmenterConfiguration) {
			want := v1alpha1.DefragmenterConfiguration{
				SchedulerName: "devicefit", Interval: metav1.Duration{Duration: 30 * time.Second},
				Pending:     &v1alpha1.PendingTrigger{Enabled: ptr.To(true), After: metav1.Duration{Duration: 2 * time.Minute}, MaxMoves: 2},
				Budget:      v1alpha1.Budget{MovesPerHour: ptr.To[int32](10), ConcurrentMoves: ptr.To[int32](1)},
				MoveTimeout: metav1.Duration{Duration: 5 * time.Minute},
			}
			got := v1alpha1.DefragmenterConfiguration{SchedulerName: c.SchedulerName, Interval: c.Interval, Pending: c.Pending, Budget: c.Budget, MoveTimeout: c.MoveTimeout}
			if got.String() != want.String() {
				t.Errorf("defaults:\n%s\nwant\n%s", got.String(), want.String())
			}
			le := c.LeaderElection
			if !*le.LeaderElect || le.ResourceLock != "leases" || le.ResourceNamespace != "devicefit-system" || le.ResourceName != "devicefit-defragmenter" || le.LeaseDuration.Duration != 15*time.Second {
				t.Errorf("leader election defaults: %+v", le)
			}
		}},
		{name: "the profile's second resource", body: "optIn: {namespaces: [batch]}\nfreeNodes: {count: 1, resource: amd.com/gpu}\n"},
		{name: "negative budget", body: "optIn: {namespaces: [batch]}\nbudget: {movesPerHour: -5}\n",
			wantErr: []string{"invalid DefragmenterConfiguration in", "budget.movesPerHour: Invalid value: -5"}},
		{name: "malformed budget", body: "optIn: {namespaces: [batch]}\nbudget: {movesPerHour: ten}\n",
			wantErr: []string{"movesPerHour", "cannot unmarshal string"}},
		{name: "unknown field", body: "optIn: {namespaces: [batch]}\nbudget: {movesPerMinute: 1}\n",
			wantErr: []string{`unknown field "budget.movesPerMinute"`}},
		{name: "unknown resource", body: "optIn: {namespaces: [batch]}\nfreeNodes: {count: 1, resource: example.com/fpga}\n",
			wantErr: []string{`freeNodes.resource: Unsupported value: "example.com/fpga": supported values: "nvidia.com/gpu", "amd.com/gpu"`}},
		{name: "several errors at once", body: "optIn: {}\nbudget: {concurrentMoves: -1}\n",
			wantErr: []string{"optIn: Required value", "budget.concurrentMoves: Invalid value: -1"}},
		{name: "no such profile", body: "schedulerName: other\noptIn: {namespaces: [batch]}\n",
			wantErr: []string{`schedulerConfigFile: ` + sched + `: no profile "other" (profiles: devicefit)`}},
		{name: "wrong kind", body: "", wantErr: []string{`no kind "Defragmenter" is registered for version "devicefit.io/v1alpha1"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "defragmenter.yaml")
			data := head + tc.body
			if tc.name == "wrong kind" {
				data = "apiVersion: devicefit.io/v1alpha1\nkind: Defragmenter\n"
			}
			if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, profile, err := LoadConfig(path)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error, want %q", tc.wantErr)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q\nwant it to contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if profile.Profile.SchedulerName != "devicefit" {
				t.Errorf("profile %q", profile.Profile.SchedulerName)
			}
			if tc.check != nil {
				tc.check(t, cfg)
			}
		})
	}
}

func TestOptedIn(t *testing.T) {
	pod := func(ns string, labels map[string]string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p", Labels: labels}}
	}
	allow := map[string]string{"devicefit.io/defrag": "allow"}
	tests := []struct {
		name string
		in   v1alpha1.OptIn
		want []bool // batch, other, other labelled
	}{
		{name: "namespaces", in: v1alpha1.OptIn{Namespaces: []string{"batch"}}, want: []bool{true, false, false}},
		{name: "labels", in: v1alpha1.OptIn{PodSelector: &metav1.LabelSelector{MatchLabels: allow}}, want: []bool{false, false, true}},
		{name: "either", in: v1alpha1.OptIn{Namespaces: []string{"batch"}, PodSelector: &metav1.LabelSelector{MatchLabels: allow}}, want: []bool{true, false, true}},
		// An empty selector would select every pod: it is not a way to opt
		// every pod in by accident... but it is a deliberate one.
		{name: "empty selector", in: v1alpha1.OptIn{PodSelector: &metav1.LabelSelector{}}, want: []bool{true, true, true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := OptedIn(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			got := []bool{f(pod("batch", nil)), f(pod("other", nil)), f(pod("other", allow))}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("pod %d: %v, want %v", i, got[i], tc.want[i])
				}
			}
		})
	}
}
