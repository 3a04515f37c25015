package perf

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/devicefit/devicefit/test/perf/results"
)

// TestCheckGangs runs the gang check on objects made by hand: two cliques
// of three 4-GPU trays.
func TestCheckGangs(t *testing.T) {
	node := func(name, clique string) *v1.Node {
		return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{cliqueLabel: clique}},
			Status: v1.NodeStatus{Allocatable: v1.ResourceList{gpuResource: resource.MustParse("4")}}}
	}
	pod := func(name, group, nodeName string, gpus string) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "measure"},
			Spec: v1.PodSpec{NodeName: nodeName, Containers: []v1.Container{{Name: "c",
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{gpuResource: resource.MustParse(gpus)}}}}}}
		if group != "" {
			p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &group}
		}
		return p
	}
	group := func(name string, min int32) *schedulingv1beta1.PodGroup {
		return &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "measure"},
			Spec: schedulingv1beta1.PodGroupSpec{
				SchedulingPolicy:      schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: min}},
				SchedulingConstraints: &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: []schedulingv1beta1.TopologyConstraint{{Key: cliqueLabel}}}}}
	}
	fleet := []runtime.Object{node("a1", "a"), node("a2", "a"), node("a3", "a"), node("b1", "b"), node("b2", "b"), node("b3", "b")}
	for _, tc := range []struct {
		name    string
		objects []runtime.Object
		want    results.Gangs
		wantErr string
	}{{
		// g0 (2x4) placed in a; g1 (3x4) arrived, unplaced; a single 1-GPU
		// pod on b1. a has 4 free on a3: no 2x4 or 3x4 fits, all 4
		// stranded. b: 3+4+4 free; 2x4 fits (b2, b3), 3 stranded on b1.
		objects: []runtime.Object{group("g0", 2), group("g1", 3),
			pod("p0", "g0", "a1", "4"), pod("p1", "g0", "a2", "4"),
			pod("q0", "g1", "", "4"), pod("q1", "g1", "", "4"), pod("q2", "g1", "", "4"),
			pod("s0", "", "b1", "1"), pod("s1", "", "", "2")},
		want: results.Gangs{Domains: 2, GPUs: 24, Allocated: 9, InGangs: 8, GroupsArrived: 2, GroupsPlaced: 1,
			SinglesArrived: 2, SinglesBound: 1, WholeDomains: 0, Stranded: 7, Shapes: []string{"2x4", "3x4"}},
	}, {
		// g1's pods have left (GangMix's departures): g1 is not counted,
		// nor is its shape.
		name:    "whole",
		objects: []runtime.Object{group("g0", 2), group("g1", 5), pod("p0", "g0", "a1", "4"), pod("p1", "g0", "a2", "4")},
		want: results.Gangs{Domains: 2, GPUs: 24, Allocated: 8, InGangs: 8, GroupsArrived: 1, GroupsPlaced: 1,
			WholeDomains: 1, Stranded: 4, Shapes: []string{"2x4"}},
	}, {
		name:    "partial",
		objects: []runtime.Object{group("g0", 2), pod("p0", "g0", "a1", "4"), pod("p1", "g0", "", "4")},
		wantErr: "1 pods bound, minCount 2",
	}, {
		name:    "two domains",
		objects: []runtime.Object{group("g0", 2), pod("p0", "g0", "a1", "4"), pod("p1", "g0", "b1", "4")},
		wantErr: "bound in 2 domains",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(append(append([]runtime.Object{}, fleet...), tc.objects...)...)
			got, found, err := checkGangs(context.Background(), client)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !found {
				t.Fatalf("found %v, error %v", found, err)
			}
			if got.Domains != tc.want.Domains || got.GPUs != tc.want.GPUs || got.Allocated != tc.want.Allocated ||
				got.InGangs != tc.want.InGangs || got.GroupsArrived != tc.want.GroupsArrived || got.GroupsPlaced != tc.want.GroupsPlaced ||
				got.SinglesArrived != tc.want.SinglesArrived || got.SinglesBound != tc.want.SinglesBound ||
				got.WholeDomains != tc.want.WholeDomains || got.Stranded != tc.want.Stranded ||
				strings.Join(got.Shapes, ",") != strings.Join(tc.want.Shapes, ",") {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
