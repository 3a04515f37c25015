package e2e

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestPodSecurityRestricted: devicefit-system enforces the restricted Pod
// Security Standard, and a pod made from the scheduler Deployment's template
// is admitted there (server-side dry run: no kubelet would run it). The same
// pod made privileged, or allowed to run as root, is refused by PodSecurity:
// the namespace really enforces, the positive result is not vacuous.
func TestPodSecurityRestricted(t *testing.T) {
	requireManifests(t)
	ctx := testContext(t, time.Minute)
	cs := s.cp.Client

	ns, err := cs.CoreV1().Namespaces().Get(ctx, systemNamespace, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("namespace %s: %v", systemNamespace, err)
	}
	if got := ns.Labels["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Errorf("namespace %s: label pod-security.kubernetes.io/enforce=%q, want restricted", systemNamespace, got)
	}

	deploy, err := cs.AppsV1().Deployments(systemNamespace).Get(ctx, schedulerDeploy, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("deployment %s/%s: %v", systemNamespace, schedulerDeploy, err)
	}
	podFromTemplate := func(name string) *v1.Pod {
		tmpl := deploy.Spec.Template.DeepCopy()
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Namespace:   systemNamespace,
				Labels:      tmpl.Labels,
				Annotations: tmpl.Annotations,
			},
			Spec: tmpl.Spec,
		}
	}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}

	if _, err := cs.CoreV1().Pods(systemNamespace).Create(ctx, podFromTemplate("pss-template"), dryRun); err != nil {
		t.Errorf("a pod from the Deployment's template was refused in %s: %v", systemNamespace, err)
	}

	for _, tc := range []struct {
		name   string
		mutate func(*v1.Pod)
	}{
		{"privileged", func(p *v1.Pod) {
			sc := p.Spec.Containers[0].SecurityContext
			if sc == nil {
				sc = &v1.SecurityContext{}
				p.Spec.Containers[0].SecurityContext = sc
			}
			sc.Privileged = ptr.To(true)
			// privileged with allowPrivilegeEscalation false does not
			// validate.
			sc.AllowPrivilegeEscalation = nil
		}},
		{"run-as-root", func(p *v1.Pod) {
			if p.Spec.SecurityContext == nil {
				p.Spec.SecurityContext = &v1.PodSecurityContext{}
			}
			p.Spec.SecurityContext.RunAsNonRoot = ptr.To(false)
			for i := range p.Spec.Containers {
				if sc := p.Spec.Containers[i].SecurityContext; sc != nil {
					sc.RunAsNonRoot = nil
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := podFromTemplate("pss-" + tc.name)
			tc.mutate(p)
			_, err := cs.CoreV1().Pods(systemNamespace).Create(ctx, p, dryRun)
			switch {
			case err == nil:
				t.Fatalf("a %s pod was admitted in %s", tc.name, systemNamespace)
			case !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `PodSecurity "restricted`):
				t.Fatalf("a %s pod was refused, but not by PodSecurity restricted: %v", tc.name, err)
			}
			t.Logf("refused as expected: %v", err)
		})
	}
}
