// Package routing builds the MutatingAdmissionPolicy that routes device pods
// to devicefit: a pod created for the default scheduler that asks for a
// device gets spec.schedulerName of devicefit, so that one scheduler, with
// one cache, books every device (docs/coexistence.md).
//
// MutatingAdmissionPolicy is admissionregistration.k8s.io/v1 since
// Kubernetes 1.36: CEL run by the API server itself, so there is no webhook
// to be down and no failing open while it is. The device resources are the
// DeviceFit args' (deviceResources, defaulted), so the policy routes exactly
// the pods the scheduler counts devices for.
package routing

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/devicefit/devicefit/pkg/devices"
)

// Name names the policy and its binding.
const Name = "devicefit-route-device-pods"

// OptOutLabel on a pod or its namespace, with the value "false", keeps the
// pod with the scheduler it names. A label, not a devicefit.io annotation:
// the validating policy rejects unknown devicefit.io annotations on
// devicefit's pods, and labels are what admission selectors match.
const OptOutLabel = "devicefit.io/route"

// Options say what the policy routes, and where to.
type Options struct {
	// Name of the policy and its binding; empty means Name.
	Name string
	// SchedulerName is the devicefit profile routed pods get.
	SchedulerName string
	// Resources are DeviceFit's deviceResources: names, or prefixes ending
	// in "*" (devices.DefaultResourcePatterns when the args list none).
	Resources []string
	// Toleration, when set, is added to every routed pod that lacks it:
	// node ownership, where device nodes carry the matching taint and only
	// devicefit's pods may land there (nil: off).
	Toleration *v1.Toleration
}

// defaultSchedulers are the names a pod meant for the default scheduler
// has: spec.schedulerName is defaulted to default-scheduler when the pod is
// decoded, before admission, so "" is only for objects that skip defaulting.
var defaultSchedulers = []string{"", v1.DefaultSchedulerName}

// Policy returns the MutatingAdmissionPolicy and its binding.
func Policy(o Options) (*admissionv1.MutatingAdmissionPolicy, *admissionv1.MutatingAdmissionPolicyBinding, error) {
	if o.SchedulerName == "" || slices.Contains(defaultSchedulers, o.SchedulerName) {
		return nil, nil, fmt.Errorf("scheduler name %q: want devicefit's profile, not the default scheduler", o.SchedulerName)
	}
	name := o.Name
	if name == "" {
		name = Name
	}
	names, prefixes, err := split(o.Resources)
	if err != nil {
		return nil, nil, err
	}
	mutations := []admissionv1.Mutation{{
		PatchType: admissionv1.PatchTypeJSONPatch,
		// "add" sets a member whether or not it is there (RFC 6902).
		JSONPatch: &admissionv1.JSONPatch{Expression: "!variables.asksForDevice ? [] :\n" +
			"[JSONPatch{op: 'add', path: '/spec/schedulerName', value: " + quote(o.SchedulerName) + "}]"},
	}}
	if o.Toleration != nil {
		m, err := tolerationMutation(*o.Toleration)
		if err != nil {
			return nil, nil, err
		}
		mutations = append(mutations, m)
	}
	optOut := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: OptOutLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"false"},
	}}}
	policy := &admissionv1.MutatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/name": "devicefit-scheduler"}},
		Spec: admissionv1.MutatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Ignore),
			MatchConstraints: &admissionv1.MatchResources{
				ResourceRules: []admissionv1.NamedRuleWithOperations{{RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				}}},
				NamespaceSelector: optOut,
				ObjectSelector:    optOut,
			},
			MatchConditions: []admissionv1.MatchCondition{
				// devicefit's own pods too: with node ownership they need
				// the toleration as much as routed ones (setting their
				// scheduler name again changes nothing).
				{Name: "default-scheduler-or-devicefit", Expression: "!has(object.spec.schedulerName) || object.spec.schedulerName in " + list(append(slices.Clone(defaultSchedulers), o.SchedulerName))},
				{Name: "not-bound", Expression: "!has(object.spec.nodeName) || object.spec.nodeName == ''"},
			},
			// matchConditions cannot read variables (they run first): the
			// device test is a variable the mutations read.
			Variables: []admissionv1.Variable{
				{Name: "deviceResources", Expression: list(names)},
				{Name: "deviceResourcePrefixes", Expression: list(prefixes)},
				{Name: "containers", Expression: "object.spec.containers +\n(has(object.spec.initContainers) ? object.spec.initContainers : [])"},
				{Name: "quantities", Expression: quantities},
				{Name: "asksForDevice", Expression: asksForDevice},
			},
			Mutations: mutations,
			// IfNeeded: should a webhook after this policy add a device
			// request, the API server runs the policy again. Each mutation
			// is idempotent.
			ReinvocationPolicy: admissionv1.IfNeededReinvocationPolicy,
		},
	}
	binding := &admissionv1.MutatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/name": "devicefit-scheduler"}},
		Spec:       admissionv1.MutatingAdmissionPolicyBindingSpec{PolicyName: name},
	}
	return policy, binding, nil
}

// split turns resource patterns into exact names and prefixes, in the
// order given, and adds DRA's implicit extended resources
// (deviceclass.resource.kubernetes.io/<class>, KEP-5004): a pod asking one
// asks a DRA device whichever class serves it.
func split(patterns []string) (names, prefixes []string, err error) {
	if len(patterns) == 0 {
		return nil, nil, errors.New("no device resources: want DeviceFit's deviceResources")
	}
	for _, p := range patterns {
		if err := devices.ValidateResourcePattern(p); err != nil {
			return nil, nil, err
		}
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			prefixes = append(prefixes, prefix)
		} else {
			names = append(names, p)
		}
	}
	if !slices.Contains(prefixes, resourceapi.ResourceDeviceClassPrefix) {
		prefixes = append(prefixes, resourceapi.ResourceDeviceClassPrefix)
	}
	return names, prefixes, nil
}

// quantities are the resource maps of the pod: its overhead, and each
// container's requests and limits (limits count too: defaulting copies them
// to absent requests, but the policy should not depend on it).
const quantities = `[has(object.spec.overhead) ? object.spec.overhead : {}] +
variables.containers.map(c, has(c.resources) && has(c.resources.requests) ? c.resources.requests : {}) +
variables.containers.map(c, has(c.resources) && has(c.resources.limits) ? c.resources.limits : {})`

// asksForDevice is true when the pod has resource claims, or asks a device
// resource a quantity other than zero. A quantity is never parsed
// (apimachinery's parser costs 10^exponent for an exponent such as
// 1e100000); zero is recognised by its digits: 0, 0.0, 00, 0m, 0Ki, 0e3.
const asksForDevice = `(has(object.spec.resourceClaims) && size(object.spec.resourceClaims) > 0) ||
variables.quantities.exists(m, m.exists(r,
  (r in variables.deviceResources ||
   variables.deviceResourcePrefixes.exists(p, r.startsWith(p))) &&
  !m[r].matches(r'^[+-]?0*\.?0*([eE][+-]?[0-9]+|[a-zA-Z]*)$')))`

// tolerationMutation adds t to the pod's tolerations unless one equal to it
// is there. A JSONPatch: tolerations are an atomic list, which an apply
// configuration may not change. It appends to the list when there is one
// and creates it otherwise; writing the whole list back instead fails in
// v1.37.2 (the pod's own tolerations do not convert to JSON:
// "type conversion error from struct type v1.Toleration").
func tolerationMutation(t v1.Toleration) (admissionv1.Mutation, error) {
	if t.Key == "" || t.Effect == "" {
		return admissionv1.Mutation{}, fmt.Errorf("node ownership toleration %v: want a key and an effect", t)
	}
	if t.Operator == "" {
		t.Operator = v1.TolerationOpEqual
	}
	fields := []string{"key: " + quote(t.Key), "operator: " + quote(string(t.Operator))}
	same := []string{"t.?key.orValue('') == " + quote(t.Key), "t.?effect.orValue('') == " + quote(string(t.Effect))}
	switch t.Operator {
	case v1.TolerationOpEqual:
		fields = append(fields, "value: "+quote(t.Value))
		same = append(same, "t.?operator.orValue('Equal') == 'Equal'", "t.?value.orValue('') == "+quote(t.Value))
	case v1.TolerationOpExists:
		if t.Value != "" {
			return admissionv1.Mutation{}, fmt.Errorf("node ownership toleration %v: operator Exists takes no value", t)
		}
		same = append(same, "t.?operator.orValue('Equal') == 'Exists'")
	default:
		return admissionv1.Mutation{}, fmt.Errorf("node ownership toleration %v: operator %q: want Equal or Exists", t, t.Operator)
	}
	fields = append(fields, "effect: "+quote(string(t.Effect)))
	tol := fmt.Sprintf("Object.spec.tolerations{%s}", strings.Join(fields, ", "))
	expr := fmt.Sprintf("!variables.asksForDevice ||\n"+
		"object.spec.?tolerations.orValue([]).exists(t, %s) ? [] :\n"+
		"has(object.spec.tolerations) ?\n"+
		"  [JSONPatch{op: 'add', path: '/spec/tolerations/-', value: %s}] :\n"+
		"  [JSONPatch{op: 'add', path: '/spec/tolerations', value: [%s]}]",
		strings.Join(same, " && "), tol, tol)
	return admissionv1.Mutation{PatchType: admissionv1.PatchTypeJSONPatch, JSONPatch: &admissionv1.JSONPatch{Expression: expr}}, nil
}

// quote is a CEL string literal. Resource names and scheduler names are
// DNS-like and need no escapes; a quote or backslash is refused upstream of
// here (ValidateResourcePattern, the profile's validation).
func quote(s string) string { return "'" + s + "'" }

// list is a CEL list of string literals.
func list(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// Header explains the policy in the manifest that holds it: YAML has no
// place for comments once the objects are marshalled.
const Header = `# Routes device pods to devicefit (MutatingAdmissionPolicy, CEL in the API
# server, Kubernetes 1.36 or later; docs/coexistence.md).
#
# Generated by kubectl devicefit routing-policy from the DeviceFit args of the
# scheduler configuration (deviceResources): run it again after changing them.
#
# A pod created for the default scheduler (schedulerName default-scheduler)
# that asks for a device gets spec.schedulerName of devicefit: a container,
# init container or the pod overhead requests or limits a device resource
# (a quantity other than zero), a DRA-backed extended resource
# (deviceclass.resource.kubernetes.io/...), or the pod has resourceClaims.
# Two schedulers with two caches would otherwise book the same devices, and
# the kubelet rejects the loser (OutOfnvidia.com/gpu, UnexpectedAdmissionError).
#
# Left alone: pods naming another scheduler, pods already bound
# (spec.nodeName), CPU pods, and pods whose labels or namespace's labels have
# devicefit.io/route: "false".
#
# failurePolicy Ignore: a policy that cannot evaluate a pod (a CEL cost or
# runtime limit, which a pathological pod could reach) must not block pod
# creation in the whole cluster, CPU pods included. Such a pod stays with the
# default scheduler; with node ownership (the taint on device nodes that this
# policy's toleration answers) the default scheduler cannot place it on a
# device node, so it waits, visibly, instead of being double-booked.
`

// Manifest is the policy and binding as the YAML file the kustomize
// component manifests/components/routing holds.
func Manifest(o Options) ([]byte, error) {
	policy, binding, err := Policy(o)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString(Header)
	for i, obj := range []any{policy, binding} {
		data, err := yaml.Marshal(obj)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(data)
	}
	return []byte(b.String()), nil
}
