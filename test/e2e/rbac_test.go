package e2e

import (
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// access is one request the scheduler's ServiceAccount makes or must never
// be able to make.
type access struct {
	verb, group, resource, subresource, namespace, name string
	path                                                string // a non-resource URL instead
}

func (a access) String() string {
	if a.path != "" {
		return a.verb + " " + a.path
	}
	s := a.verb + " " + a.resource
	if a.subresource != "" {
		s += "/" + a.subresource
	}
	if a.group != "" {
		s += "." + a.group
	}
	if a.namespace != "" {
		s += " in " + a.namespace
	}
	if a.name != "" {
		s += " named " + a.name
	}
	return s
}

// TestSchedulerRBACLeastPrivilege asks the real apiserver's authorizer
// (SubjectAccessReview) what the manifests' RBAC grants the scheduler's
// ServiceAccount: what scheduling needs, and nothing of a list of requests
// that would let a compromised scheduler read credentials, run workloads,
// change nodes or policy, or take over another scheduler's lease.
// TestSchedulerWithManifestsRBAC shows the allowed list is enough.
func TestSchedulerRBACLeastPrivilege(t *testing.T) {
	requireManifests(t)
	ctx := testContext(t, time.Minute)
	user := "system:serviceaccount:" + systemNamespace + ":" + schedulerSA
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + systemNamespace, "system:authenticated"}

	allowed := []access{
		{verb: "create", resource: "pods", subresource: "binding", namespace: "team-a"},
		{verb: "patch", resource: "pods", subresource: "status", namespace: "team-a"},
		{verb: "delete", resource: "pods", namespace: "team-a"}, // preemption
		{verb: "watch", resource: "nodes"},
		{verb: "create", group: "events.k8s.io", resource: "events", namespace: "team-a"},
		{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: systemNamespace, name: "devicefit-scheduler"},
		{verb: "get", resource: "configmaps", namespace: "kube-system", name: "extension-apiserver-authentication"},
		{verb: "create", group: "authentication.k8s.io", resource: "tokenreviews"},
		{verb: "list", group: "resource.k8s.io", resource: "resourceslices"},
	}
	forbidden := []access{
		{verb: "get", resource: "secrets", namespace: "kube-system"},
		{verb: "list", resource: "secrets"},
		{verb: "watch", resource: "secrets", namespace: systemNamespace},
		{verb: "create", resource: "pods", namespace: "team-a"},
		{verb: "create", resource: "pods", subresource: "exec", namespace: "team-a"},
		{verb: "update", resource: "pods", namespace: "team-a"},
		{verb: "create", resource: "serviceaccounts", subresource: "token", namespace: systemNamespace, name: schedulerSA},
		{verb: "update", resource: "nodes"},
		{verb: "patch", resource: "nodes", subresource: "status"},
		{verb: "delete", resource: "nodes"},
		{verb: "list", resource: "configmaps", namespace: "kube-system"},
		{verb: "update", resource: "configmaps", namespace: systemNamespace},
		{verb: "update", group: "apps", resource: "deployments", namespace: systemNamespace},
		{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: "kube-system", name: "kube-scheduler"},
		{verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: "kube-system"},
		{verb: "create", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings"},
		{verb: "escalate", group: "rbac.authorization.k8s.io", resource: "clusterroles"},
		{verb: "bind", group: "rbac.authorization.k8s.io", resource: "clusterroles"},
		{verb: "impersonate", resource: "users"},
		{verb: "update", group: "admissionregistration.k8s.io", resource: "validatingadmissionpolicies"},
		{verb: "create", group: "apiextensions.k8s.io", resource: "customresourcedefinitions"},
		{verb: "update", group: "resource.k8s.io", resource: "resourceslices"},
		{verb: "get", path: "/metrics"},
		{verb: "get", path: "/configz"},
	}

	check := func(a access, want bool) {
		t.Helper()
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups}}
		if a.path != "" {
			sar.Spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Verb: a.verb, Path: a.path}
		} else {
			sar.Spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
				Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.subresource,
				Namespace: a.namespace, Name: a.name,
			}
		}
		got, err := s.cp.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		switch {
		case err != nil:
			t.Errorf("%s: SubjectAccessReview: %v", a, err)
		case got.Status.Allowed != want && want:
			t.Errorf("%s: denied to %s, but scheduling needs it (%s)", a, user, got.Status.Reason)
		case got.Status.Allowed != want:
			t.Errorf("%s: allowed to %s (%s); the scheduler must not be able to", a, user, got.Status.Reason)
		}
	}
	for _, a := range allowed {
		check(a, true)
	}
	for _, a := range forbidden {
		check(a, false)
	}
}
