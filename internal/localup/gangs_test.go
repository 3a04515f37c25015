package localup

import (
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestGangJobs(t *testing.T) {
	a, b := gangJobs(42), gangJobs(42)
	if diff := cmp.Diff(a, b, cmp.AllowUnexported(job{})); diff != "" {
		t.Fatalf("same seed, different jobs:\n%s", diff)
	}
	var asked int
	for _, j := range a {
		asked += j.pods * j.gpus
		if j.pods > 1 && j.gpus != gpusPerTray {
			t.Errorf("%s: gang pods of %d GPUs, want whole trays (%d)", j.name, j.gpus, gpusPerTray)
		}
	}
	if capacity := cliques * traysPerClique * gpusPerTray; asked*10 < capacity*11 {
		t.Errorf("asked %d GPUs, want at least 110%% of %d", asked, capacity)
	}
}

func TestGangReportProblems(t *testing.T) {
	node := func(name, clique string) v1.Node {
		return v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{cliqueLabel: clique}},
			Status:     v1.NodeStatus{Allocatable: v1.ResourceList{resourceGPU: resource.MustParse("4")}},
		}
	}
	pod := func(job, node string, gpus int64) v1.Pod {
		return v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{jobLabel: job}},
			Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{resourceGPU: *resource.NewQuantity(gpus, resource.DecimalSI)}}}}},
		}
	}
	nodes := []v1.Node{node("a0", "a"), node("a1", "a"), node("b0", "b")}
	tests := []struct {
		name string
		jobs []job
		pods []v1.Pod
		want []string // substrings, in order
	}{{
		name: "whole gang in one clique",
		jobs: []job{{name: "g", pods: 2, gpus: 4}},
		pods: []v1.Pod{pod("g", "a0", 4), pod("g", "a1", 4)},
	}, {
		name: "gang split between cliques",
		jobs: []job{{name: "g", pods: 2, gpus: 4}},
		pods: []v1.Pod{pod("g", "a0", 4), pod("g", "b0", 4)},
		want: []string{"g: pods in cliques"},
	}, {
		name: "gang bound in part",
		jobs: []job{{name: "g", pods: 2, gpus: 4}},
		pods: []v1.Pod{pod("g", "a0", 4), pod("g", "", 4)},
		want: []string{"g: 1 of its 2 pods bound"},
	}, {
		name: "overcommitted node",
		jobs: []job{{name: "s1", pods: 1, gpus: 4}, {name: "s2", pods: 1, gpus: 2}},
		pods: []v1.Pod{pod("s1", "b0", 4), pod("s2", "b0", 2)},
		want: []string{"node b0: 6 GPUs bound, 4 allocatable"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := gangReport(io.Discard, nodes, tc.pods, tc.jobs)
			if len(got) != len(tc.want) {
				t.Fatalf("problems %q, want %d like %q", got, len(tc.want), tc.want)
			}
			for i := range got {
				if !strings.Contains(got[i], tc.want[i]) {
					t.Errorf("problem %q, want it to contain %q", got[i], tc.want[i])
				}
			}
		})
	}
}
