package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/devicefit/devicefit/internal/controlplane"
	"github.com/devicefit/devicefit/internal/e2eutil"
	"github.com/devicefit/devicefit/pkg/apis/config"
	"github.com/devicefit/devicefit/pkg/apis/config/scheme"
	defragvalidation "github.com/devicefit/devicefit/pkg/apis/defragmenter/validation"
	"github.com/devicefit/devicefit/pkg/defrag"
	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/routing"
)

// The chart (charts/devicefit) is tested against the kustomize base: both
// must deploy the same scheduler. The README installs the chart as the
// release "devicefit" in devicefit-system, which the chart's naming makes
// render exactly the base's object names.
const (
	chartPath   = "charts/devicefit"
	helmRelease = "devicefit"
	// The base ships the ServiceMonitor and the PrometheusRule; the chart has
	// them behind switches, off by default (they need the operator's CRDs).
	helmMonitoring = "serviceMonitor.enabled=true,prometheusRule.enabled=true"
	// `helm template` asks no cluster: it knows only the API versions given
	// here (and group/versions of its own client, no kind). The chart
	// renders the routing policy where the cluster serves
	// admissionregistration.k8s.io/v1 MutatingAdmissionPolicy, as bin/'s
	// kube-apiserver (1.37, default gates) does and helm install there
	// finds by discovery (TestHelmInstall); so the rendering is the base
	// with components/routing, TestMain's. hack/test-chart.sh renders the
	// other minors.
	helmAPIVersions = "--api-versions=admissionregistration.k8s.io/v1/MutatingAdmissionPolicy"
)

// repoRoot is the repository, two levels above test/e2e.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// helm runs bin/helm in the repository with args and returns its stdout;
// stderr (warnings) goes to the log, or into the error. HELM_*_HOME point into a temporary
// directory: the test reads and writes nothing of the user's helm
// configuration, cache or repositories.
func helm(ctx context.Context, t *testing.T, args ...string) (string, error) {
	out, stderr, err := helmOutput(ctx, t, args...)
	if err == nil && strings.TrimSpace(stderr) != "" { // else err carries it
		t.Logf("helm %s: stderr:\n%s", strings.Join(args, " "), stderr)
	}
	return out, err
}

// helmOutput is helm with stderr returned.
func helmOutput(ctx context.Context, t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	bin := filepath.Join(s.binDir, "helm")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%v: build it with `make bin/helm` (make test-e2e does)", err)
	}
	home := t.TempDir()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), errOut.String(), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), errOut.String(), nil
}

// helmTemplate renders the chart as the README installs it on the test
// control plane's minor (helmAPIVersions), plus extra args, and decodes the
// output.
func helmTemplate(t *testing.T, extra ...string) []object {
	t.Helper()
	args := append([]string{"template", helmRelease, chartPath, "--namespace", systemNamespace, helmAPIVersions}, extra...)
	out, err := helm(testContext(t, time.Minute), t, args...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := e2eutil.DecodeObjects([]byte(out))
	if err != nil {
		t.Fatalf("helm template output: %v", err)
	}
	return objs
}

// objectKey names an object across the two renderings. kustomize appends a
// hash of the content to the scheduler ConfigMap's name; Helm keeps the name
// (its pod template carries a checksum instead), so the hash is cut off.
func objectKey(o object) string {
	name := o.GetName()
	if o.GetKind() == "ConfigMap" && strings.HasPrefix(name, schedulerConfigMap+"-") {
		name = schedulerConfigMap
	}
	return o.GetKind() + " " + o.GetNamespace() + "/" + name
}

func byKey(objs []object) map[string]object {
	out := map[string]object{}
	for _, o := range objs {
		out[objectKey(o)] = o
	}
	return out
}

// get returns objs[key], failing the test when the rendering lacks it.
func get(t *testing.T, objs map[string]object, key string) object {
	t.Helper()
	o := objs[key]
	if o == nil {
		t.Fatalf("no %s in the rendering (it has %v)", key, sortedKeys(objs))
	}
	return o
}

func sortedKeys(m map[string]object) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// comparable returns a copy of o without what legitimately differs between
// kustomize and Helm: labels (checked apart: Helm's must include the
// base's), Helm's annotations, the scheduler ConfigMap's name and content
// (compared apart, decoded) and imagePullPolicy (a chart value, left to the
// API server's default by the base).
func comparable(o object) map[string]interface{} {
	c := o.DeepCopy().Object
	unstructured.RemoveNestedField(c, "metadata", "labels")
	unstructured.RemoveNestedField(c, "metadata", "annotations", "helm.sh/resource-policy")
	if a, _, _ := unstructured.NestedMap(c, "metadata", "annotations"); len(a) == 0 {
		unstructured.RemoveNestedField(c, "metadata", "annotations")
	}
	switch o.GetKind() {
	case "ConfigMap":
		if objectKey(o) == "ConfigMap "+systemNamespace+"/"+schedulerConfigMap {
			unstructured.RemoveNestedField(c, "metadata", "name")
			unstructured.RemoveNestedField(c, "data")
		}
	case "Deployment":
		unstructured.RemoveNestedField(c, "spec", "template", "metadata")
		for _, field := range []string{"containers", "volumes"} {
			items, _, _ := unstructured.NestedSlice(c, "spec", "template", "spec", field)
			for _, it := range items {
				m := it.(map[string]interface{})
				delete(m, "imagePullPolicy")
				if name, ok, _ := unstructured.NestedString(m, "configMap", "name"); ok && strings.HasPrefix(name, schedulerConfigMap) {
					_ = unstructured.SetNestedField(m, schedulerConfigMap, "configMap", "name")
				}
			}
			_ = unstructured.SetNestedSlice(c, items, "spec", "template", "spec", field)
		}
	}
	return c
}

// lineBreaks compares strings with the blanks around each line break
// reduced to the break. kustomize's YAML round trip re-emits a folded
// scalar with more-indented lines (the admission policy's CEL) as a plain
// multi-line one that decodes with an extra empty line: the API server gets
// the same CEL (line breaks are blanks to CEL, and no CEL string literal
// spans lines) in other whitespace. Strings on one line compare exactly.
var lineBreaks = cmp.FilterValues(func(x, y string) bool {
	return strings.Contains(x, "\n") || strings.Contains(y, "\n")
}, cmpopts.AcyclicTransformer("lineBreaks", func(s string) string {
	return blanksAroundBreak.ReplaceAllString(s, "\n")
}))

var blanksAroundBreak = regexp.MustCompile(`[ \t]*\n\s*`)

// missingLabels lists the labels of want that got lacks or has otherwise.
func missingLabels(want, got map[string]string) []string {
	var out []string
	for k, v := range want {
		if got[k] != v {
			out = append(out, fmt.Sprintf("%s=%s (chart: %q)", k, v, got[k]))
		}
	}
	sort.Strings(out)
	return out
}

// decodeSchedulerConfig decodes key scheduler-config.yaml of a ConfigMap
// strictly, as the scheduler does, with defaults applied: two files that
// say the same thing in other words decode to the same configuration.
func decodeSchedulerConfig(t *testing.T, cm object) *schedconfig.KubeSchedulerConfiguration {
	t.Helper()
	data, _, _ := unstructured.NestedString(cm.Object, "data", schedulerConfigKey)
	if data == "" {
		t.Fatalf("%s has no key %s", objectKey(cm), schedulerConfigKey)
	}
	obj, _, err := scheme.Codecs.UniversalDecoder().Decode([]byte(data), nil, nil)
	if err != nil {
		t.Fatalf("%s: %v", objectKey(cm), err)
	}
	cfg, ok := obj.(*schedconfig.KubeSchedulerConfiguration)
	if !ok {
		t.Fatalf("%s decoded as %T", objectKey(cm), obj)
	}
	return cfg
}

// TestHelmChartMatchesManifests: `helm template` of the chart with its
// defaults (and monitoring on, as the base has it) renders the objects of
// `kubectl kustomize` of manifests/ with components/routing, on the test
// control plane's minor (helmAPIVersions): the same kinds and names, and each object
// the same but for labels and the few differences comparable names. The
// scheduler configuration is compared decoded.
func TestHelmChartMatchesManifests(t *testing.T) {
	renderedObjects(t, "")
	kust := byKey(s.objects)
	chart := byKey(helmTemplate(t, "--set", helmMonitoring))

	t.Run("objects", func(t *testing.T) {
		if diff := cmp.Diff(sortedKeys(kust), sortedKeys(chart)); diff != "" {
			t.Errorf("kinds and names differ (-kustomize,+helm):\n%s", diff)
		}
	})
	for _, key := range sortedKeys(kust) {
		k, c := kust[key], chart[key]
		if c == nil {
			continue // reported by "objects"
		}
		t.Run(key, func(t *testing.T) {
			if m := missingLabels(k.GetLabels(), c.GetLabels()); len(m) > 0 {
				t.Errorf("the chart's %s lacks labels of the base: %v", key, m)
			}
			if diff := cmp.Diff(comparable(k), comparable(c), lineBreaks); diff != "" {
				t.Errorf("%s differs (-kustomize,+helm):\n%s", key, diff)
			}
		})
	}
	t.Run("scheduler config", func(t *testing.T) {
		key := "ConfigMap " + systemNamespace + "/" + schedulerConfigMap
		if kust[key] == nil || chart[key] == nil {
			t.Fatalf("%s missing (kustomize: %t, helm: %t)", key, kust[key] != nil, chart[key] != nil)
		}
		want, got := decodeSchedulerConfig(t, kust[key]), decodeSchedulerConfig(t, chart[key])
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("KubeSchedulerConfiguration differs (-kustomize,+helm):\n%s", diff)
		}
	})
	t.Run("pod template labels", func(t *testing.T) {
		key := "Deployment " + systemNamespace + "/" + schedulerDeploy
		if kust[key] == nil || chart[key] == nil {
			t.Fatalf("%s missing", key)
		}
		want, _, _ := unstructured.NestedStringMap(kust[key].Object, "spec", "template", "metadata", "labels")
		got, _, _ := unstructured.NestedStringMap(chart[key].Object, "spec", "template", "metadata", "labels")
		if m := missingLabels(want, got); len(m) > 0 {
			t.Errorf("the chart's pod template lacks labels of the base: %v", m)
		}
	})
	// Helm reads no file outside the chart, kustomize none outside
	// manifests/: the dashboard is kept twice, and must be the same bytes.
	t.Run("dashboard copy", func(t *testing.T) {
		root := repoRoot(t)
		base, err := os.ReadFile(filepath.Join(root, "manifests", "dashboards", "devicefit.json"))
		if err != nil {
			t.Fatal(err)
		}
		copied, err := os.ReadFile(filepath.Join(root, chartPath, "files", "devicefit-dashboard.json"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(base, copied) {
			t.Errorf("%s/files/devicefit-dashboard.json differs from manifests/dashboards/devicefit.json: copy it over (cp manifests/dashboards/devicefit.json %s/files/devicefit-dashboard.json)", chartPath, chartPath)
		}
	})
}

// TestHelmChartValues: values other than the defaults reach the objects
// that depend on them, and a configuration the scheduler would refuse or
// that would run replicas without a lease is refused at render time.
func TestHelmChartValues(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		check   func(t *testing.T, objs map[string]object)
		wantErr string // rendering fails with this
	}{{
		name: "other release and namespace",
		args: []string{"--namespace", "gpu-scheduling", "--set", "fullnameOverride=gpu"},
		check: func(t *testing.T, objs map[string]object) {
			cfg := decodeSchedulerConfig(t, get(t, objs, "ConfigMap gpu-scheduling/gpu-scheduler-config"))
			le := cfg.LeaderElection
			if le.ResourceNamespace != "gpu-scheduling" || le.ResourceName != "gpu-scheduler" {
				t.Errorf("lease %s/%s, want gpu-scheduling/gpu-scheduler", le.ResourceNamespace, le.ResourceName)
			}
			role := get(t, objs, "Role gpu-scheduling/gpu-scheduler:leader-election")
			rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
			names, _, _ := unstructured.NestedStringSlice(rules[1].(map[string]interface{}), "resourceNames")
			if !cmp.Equal(names, []string{"gpu-scheduler"}) {
				t.Errorf("leader-election Role grants leases %v, want [gpu-scheduler]", names)
			}
			for _, key := range []string{"ClusterRoleBinding /gpu-scheduler", "RoleBinding kube-system/gpu-scheduler:extension-apiserver-authentication-reader"} {
				subjects, _, _ := unstructured.NestedSlice(get(t, objs, key).Object, "subjects")
				if ns := subjects[0].(map[string]interface{})["namespace"]; ns != "gpu-scheduling" {
					t.Errorf("%s binds a ServiceAccount in %v, want gpu-scheduling", key, ns)
				}
			}
			if ns := get(t, objs, "Namespace /gpu-scheduling"); ns.GetLabels()["pod-security.kubernetes.io/enforce"] != "restricted" {
				t.Errorf("Namespace gpu-scheduling does not enforce restricted: %v", ns.GetLabels())
			}
		},
	}, {
		name: "image, replicas, resources, plugin args, extra profile",
		args: []string{"--set", "image.repository=registry.example.com/df,image.tag=v9,replicas=3,resources.limits.memory=4Gi",
			"--set", "schedulerName=gpu,devicePackArgs.scarcityWeight=7,deviceFitArgs.deviceNodePolicy=Require",
			"--set", "extraProfiles[0].schedulerName=gpu-spread"},
		check: func(t *testing.T, objs map[string]object) {
			d := get(t, objs, "Deployment "+systemNamespace+"/"+schedulerDeploy)
			containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
			c := containers[0].(map[string]interface{})
			if c["image"] != "registry.example.com/df:v9" {
				t.Errorf("image %v", c["image"])
			}
			if mem, _, _ := unstructured.NestedString(c, "resources", "limits", "memory"); mem != "4Gi" {
				t.Errorf("memory limit %q, want 4Gi", mem)
			}
			// Decoded through JSON: numbers are float64.
			if r, _, _ := unstructured.NestedFieldNoCopy(d.Object, "spec", "replicas"); r != float64(3) {
				t.Errorf("replicas %v, want 3", r)
			}
			cfg := decodeSchedulerConfig(t, get(t, objs, "ConfigMap "+systemNamespace+"/"+schedulerConfigMap))
			var names []string
			for _, p := range cfg.Profiles {
				names = append(names, p.SchedulerName)
			}
			if !cmp.Equal(names, []string{"gpu", "gpu-spread"}) {
				t.Errorf("profiles %v, want [gpu gpu-spread]", names)
			}
			for _, pc := range cfg.Profiles[0].PluginConfig {
				switch args := pc.Args.(type) {
				case *config.DeviceFitArgs:
					if args.DeviceNodePolicy != config.DeviceNodePolicyRequire {
						t.Errorf("DeviceFitArgs.deviceNodePolicy %q, want Require", args.DeviceNodePolicy)
					}
				case *config.DevicePackArgs:
					if args.ScarcityWeight != 7 {
						t.Errorf("DevicePackArgs.scarcityWeight %d, want 7", args.ScarcityWeight)
					}
				}
			}
			conds, _, _ := unstructured.NestedSlice(get(t, objs, "ValidatingAdmissionPolicy /devicefit-pod-requests").Object, "spec", "matchConditions")
			if expr := conds[0].(map[string]interface{})["expression"]; expr != "object.spec.schedulerName in ['gpu','gpu-spread']" {
				t.Errorf("admission policy matchCondition %q, want both profiles", expr)
			}
		},
	}, {
		// The base's admission policy is edited by hand for this; the
		// chart's follows the scheduler's own list (* marks a prefix).
		name: "device resources reach the admission policy",
		args: []string{"--set", "deviceFitArgs.deviceResources={example.com/fpga,example.com/acc-*}"},
		check: func(t *testing.T, objs map[string]object) {
			vars, _, _ := unstructured.NestedSlice(get(t, objs, "ValidatingAdmissionPolicy /devicefit-pod-requests").Object, "spec", "variables")
			got := map[string]interface{}{}
			for _, v := range vars {
				m := v.(map[string]interface{})
				got[m["name"].(string)] = m["expression"]
			}
			want := map[string]interface{}{"deviceResources": "['example.com/fpga']", "deviceResourcePrefixes": "['example.com/acc-']"}
			for name, expr := range want {
				if got[name] != expr {
					t.Errorf("admission policy variable %s = %q, want %q", name, got[name], expr)
				}
			}
		},
	}, {
		// Node ownership with a taint without value: the chart's mutations
		// are the generator's (manifests/components/node-ownership is
		// checked against it for the default taint).
		name: "node ownership",
		args: []string{"--set", "routingPolicy.nodeOwnership.enabled=true,routingPolicy.nodeOwnership.taint.key=example.com/accelerator,routingPolicy.nodeOwnership.taint.value=,routingPolicy.nodeOwnership.taint.effect=NoExecute"},
		check: func(t *testing.T, objs map[string]object) {
			policy, _, err := routing.Policy(routing.Options{SchedulerName: e2eutil.SchedulerName, Resources: devices.DefaultResourcePatterns(),
				Toleration: &v1.Toleration{Key: "example.com/accelerator", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}})
			if err != nil {
				t.Fatal(err)
			}
			var want []interface{}
			for _, m := range policy.Spec.Mutations {
				want = append(want, map[string]interface{}{"patchType": string(m.PatchType), "jsonPatch": map[string]interface{}{"expression": m.JSONPatch.Expression}})
			}
			got, _, _ := unstructured.NestedSlice(get(t, objs, "MutatingAdmissionPolicy /"+routing.Name).Object, "spec", "mutations")
			if diff := cmp.Diff(want, got, lineBreaks); diff != "" {
				t.Errorf("mutations (-generated,+chart):\n%s", diff)
			}
		},
	}, {
		// Off by default (TestHelmChartMatchesManifests: the base has no
		// defragmenter); on, its configuration is one the defragmenter
		// accepts, with the values, and its RBAC, metrics Service,
		// ServiceMonitor and alerts are the component's.
		name: "defragmenter",
		args: []string{"--set", "defragmenter.enabled=true,defragmenter.budget.movesPerHour=3,defragmenter.freeNodes.count=1,defragmenter.optIn.namespaces={batch}," + helmMonitoring},
		check: func(t *testing.T, objs map[string]object) {
			cm := get(t, objs, "ConfigMap "+systemNamespace+"/devicefit-defragmenter-config")
			data, _, _ := unstructured.NestedString(cm.Object, "data", "defragmenter-config.yaml")
			cfg, err := defrag.DecodeConfig([]byte(data))
			if err != nil {
				t.Fatalf("the chart's DefragmenterConfiguration: %v\n%s", err, data)
			}
			if errs := defragvalidation.ValidateConfiguration(cfg, devices.DefaultResourcePatterns()); len(errs) > 0 {
				t.Errorf("the chart's DefragmenterConfiguration is invalid: %v\n%s", errs, data)
			}
			le := cfg.LeaderElection
			if *cfg.Budget.MovesPerHour != 3 || cfg.FreeNodes == nil || cfg.FreeNodes.Count != 1 || !cmp.Equal(cfg.OptIn.Namespaces, []string{"batch"}) ||
				cfg.OptIn.PodSelector == nil || cfg.SchedulerName != e2eutil.SchedulerName || le.ResourceNamespace != systemNamespace || le.ResourceName != "devicefit-defragmenter" {
				t.Errorf("the values did not reach the configuration:\n%s", data)
			}
			d := get(t, objs, "Deployment "+systemNamespace+"/devicefit-defragmenter")
			volumes, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "volumes")
			var mounted []string
			for _, v := range volumes {
				name, _, _ := unstructured.NestedString(v.(map[string]interface{}), "configMap", "name")
				mounted = append(mounted, name)
			}
			if !cmp.Equal(mounted, []string{"devicefit-defragmenter-config", schedulerConfigMap}) {
				t.Errorf("the defragmenter mounts %v, want its ConfigMap and the scheduler's", mounted)
			}
			// The RBAC rules, the metrics Service, its ServiceMonitor and
			// the alerts are the component's.
			for file, field := range map[string]string{"rbac-defragmenter.yaml": "rules", "service.yaml": "spec", "servicemonitor.yaml": "spec", "prometheusrule.yaml": "spec"} {
				component, err := os.ReadFile(filepath.Join(repoRoot(t), "manifests", "components", "defragmenter", file))
				if err != nil {
					t.Fatal(err)
				}
				kust, err := e2eutil.DecodeObjects(component)
				if err != nil {
					t.Fatal(err)
				}
				for _, k := range kust {
					key := objectKey(k)
					if diff := cmp.Diff(k.Object[field], get(t, objs, key).Object[field], lineBreaks); diff != "" {
						t.Errorf("%s %s differs (-component,+chart):\n%s", key, field, diff)
					}
				}
			}
		},
	}, {
		name:    "node ownership: a taint without effect",
		args:    []string{"--set", "routingPolicy.nodeOwnership.enabled=true,routingPolicy.nodeOwnership.taint.effect=Never"},
		wantErr: "effect",
	}, {
		name:    "replicas without leader election",
		args:    []string{"--set", "leaderElection.enabled=false"},
		wantErr: "replicas > 1 needs leaderElection.enabled",
	}, {
		name:    "schema: a string for an integer",
		args:    []string{"--set-string", "replicas=two"},
		wantErr: "replicas",
	}, {
		name:    "schema: an unknown DevicePack arg",
		args:    []string{"--set", "devicePackArgs.fragmentationWeigth=1"},
		wantErr: "fragmentationWeigth",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"template", helmRelease, chartPath, "--namespace", systemNamespace, helmAPIVersions}, tc.args...)
			out, err := helm(testContext(t, time.Minute), t, args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("helm template: error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			objs, err := e2eutil.DecodeObjects([]byte(out))
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, byKey(objs))
		})
	}
}

// readmeHelmInstall returns the `helm install` command of README.md, its
// backslash-continued lines joined and split into arguments (it has no
// quoting), without "helm": the test runs what users are told to.
func readmeHelmInstall(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var found [][]string
	var cmd []string // the command being read, nil when none
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if cmd == nil && !strings.HasPrefix(line, "helm install ") {
			continue
		}
		more := strings.HasSuffix(line, "\\")
		cmd = append(cmd, strings.Fields(strings.TrimSuffix(line, "\\"))...)
		if !more {
			found = append(found, cmd[1:])
			cmd = nil
		}
	}
	if len(found) != 1 {
		t.Fatalf("README.md has %d lines starting with `helm install`, want 1", len(found))
	}
	return found[0]
}

// TestHelmInstall: the README's `helm install` on a control plane of its
// own (the package's has the kustomize base applied, whose objects Helm
// would rightly refuse to take over), then bin/devicefit-scheduler with the
// configuration and the ServiceAccount the release created: it takes the
// release's lease, binds a GPU pod, and RBAC refuses it nothing. The
// release's admission policy rejects a misspelt devicefit.io annotation.
func TestHelmInstall(t *testing.T) {
	ctx := testContext(t, 5*time.Minute)
	cp, dir, err := e2eutil.StartControlPlane(ctx, "e2e-helm", s.binDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cp.Stop()
		if !t.Failed() {
			os.RemoveAll(dir)
		} else {
			t.Logf("logs of the helm control plane and scheduler kept in %s", dir)
		}
	})
	k := e2eutil.Kubectl{Binary: filepath.Join(s.binDir, "kubectl"), Kubeconfig: cp.AdminKubeconfig}
	if err := e2eutil.InstallOperatorCRDs(ctx, k, s.crdDir); err != nil {
		t.Fatal(err)
	}

	install := readmeHelmInstall(t)
	if !strings.Contains(strings.Join(install, " "), "install "+helmRelease+" "+chartPath+" -n "+systemNamespace+" --create-namespace") {
		t.Errorf("README's install is `helm %s`; the tests and the base's names assume release %s in %s",
			strings.Join(install, " "), helmRelease, systemNamespace)
	}
	out, warnings, err := helmOutput(ctx, t, append(install, "--kubeconfig", cp.AdminKubeconfig)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("helm %s:\n%s%s", strings.Join(install, " "), out, warnings)
	if strings.Contains(warnings, "would violate PodSecurity") {
		t.Errorf("helm install warned about PodSecurity:\n%s", warnings)
	}

	// The namespace --create-namespace made, with the chart's Pod Security
	// labels applied on top.
	ns, err := cp.Client.CoreV1().Namespaces().Get(ctx, systemNamespace, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"enforce", "audit", "warn"} {
		if v := ns.Labels["pod-security.kubernetes.io/"+mode]; v != "restricted" {
			t.Errorf("namespace %s: pod-security.kubernetes.io/%s=%q, want restricted", systemNamespace, mode, v)
		}
	}

	// The identity is the release's: its Deployment runs as its
	// ServiceAccount, which its ClusterRoleBinding binds.
	deploy, err := cp.Client.AppsV1().Deployments(systemNamespace).Get(ctx, schedulerDeploy, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sa := deploy.Spec.Template.Spec.ServiceAccountName; sa != schedulerSA {
		t.Errorf("Deployment runs as ServiceAccount %q, want %q", sa, schedulerSA)
	}
	crb, err := cp.Client.RbacV1().ClusterRoleBindings().Get(ctx, schedulerDeploy, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if owner := crb.Annotations["meta.helm.sh/release-name"]; owner != helmRelease {
		t.Errorf("ClusterRoleBinding %s belongs to release %q, want %q", crb.Name, owner, helmRelease)
	}
	// helm install reads the capabilities from discovery, which lists
	// admissionregistration.k8s.io/v1/MutatingAdmissionPolicy on this
	// control plane (1.37): the release has the routing policy, and its
	// NOTES say nothing was left out.
	if _, err := cp.Client.AdmissionregistrationV1().MutatingAdmissionPolicies().Get(ctx, routing.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the release's routing policy on Kubernetes 1.37: %v", err)
	}
	if strings.Contains(out, "not installed") || strings.Contains(out, "not enabled") {
		t.Errorf("helm install's NOTES say something was left out on Kubernetes 1.37:\n%s", out)
	}

	cfg, err := e2eutil.RenderDeployedSchedulerConfig(ctx, cp, dir, "scheduler-config.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	sched, err := controlplane.StartScheduler(controlplane.SchedulerOptions{
		Binary:     filepath.Join(s.binDir, "devicefit-scheduler"),
		Config:     cfg.Path,
		Kubeconfig: cfg.Kubeconfig,
		Dir:        dir,
		ExtraArgs:  []string{"--v=2"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sched.Process.Stop(10 * time.Second) })
	if err := sched.WaitReady(ctx, 90*time.Second); err != nil {
		t.Fatal(withLog(sched.Process, err))
	}

	node := "helm-h100-0"
	capacity := v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse("64"),
		v1.ResourceMemory: resource.MustParse("512Gi"),
		v1.ResourcePods:   resource.MustParse("110"),
		resourceGPU:       resource.MustParse("8"),
	}
	if err := controlplane.RegisterNode(ctx, cp.Client, node, gfdLabels(productH100, 81559, 9, 0, 8, "hopper"), capacity); err != nil {
		t.Fatal(err)
	}
	podNS := "helm-gpu"
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: podNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The policy takes effect once the API server has compiled it: retry
	// the dry run for a while.
	typo := devicePod(podNS, "typo", resourceGPU, 1, "devicefit.io/product", productH100)
	err = controlplane.Poll(ctx, 500*time.Millisecond, 30*time.Second, sched.Process, func(ctx context.Context) (bool, error) {
		err := e2eutil.CreatePods(ctx, cp.Client, []*v1.Pod{typo.DeepCopy()}, metav1.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "devicefit-pod-requests"), nil
	})
	if err != nil {
		t.Errorf("the release's admission policy never rejected a pod annotated devicefit.io/product: %v", err)
	}

	pod := devicePod(podNS, "h100-2", resourceGPU, 2, "devicefit.io/products", productH100)
	if err := e2eutil.CreatePods(ctx, cp.Client, []*v1.Pod{pod}); err != nil {
		t.Fatal(err)
	}
	var bound *v1.Pod
	err = controlplane.Poll(ctx, 500*time.Millisecond, 60*time.Second, sched.Process, func(ctx context.Context) (bool, error) {
		p, err := cp.Client.CoreV1().Pods(podNS).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		bound = p
		return p.Spec.NodeName != "", nil
	})
	if err != nil {
		why := "(not found)"
		if bound != nil {
			why = scheduledMessage(bound)
		}
		t.Fatal(withLog(sched.Process, fmt.Errorf("pod %s/%s not bound %s: %w", podNS, pod.Name, why, err)))
	}
	if bound.Spec.NodeName != node {
		t.Errorf("pod bound to %s, want %s", bound.Spec.NodeName, node)
	}

	lease, err := cp.Client.CoordinationV1().Leases(cfg.Lease.ResourceNamespace).Get(ctx, cfg.Lease.ResourceName, metav1.GetOptions{})
	switch {
	case err != nil:
		t.Errorf("lease %s/%s: %v", cfg.Lease.ResourceNamespace, cfg.Lease.ResourceName, err)
	case cfg.Lease.ResourceNamespace != systemNamespace || cfg.Lease.ResourceName != schedulerDeploy:
		t.Errorf("the release's lease is %s/%s, want %s/%s", lease.Namespace, lease.Name, systemNamespace, schedulerDeploy)
	case lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "":
		t.Errorf("lease %s/%s has no holder", lease.Namespace, lease.Name)
	}

	lines, err := forbiddenLines(sched.Process)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) > 0 {
		t.Errorf("the scheduler was refused by RBAC %d times (%s), first: %s", len(lines), sched.Process.LogPath, lines[0])
	}

	// Day 2: a changed plugin arg reaches the ConfigMap and rolls the
	// Deployment (checksum/config), which kustomize's hashed name does for
	// the base.
	checksum := func() string {
		d, err := cp.Client.AppsV1().Deployments(systemNamespace).Get(ctx, schedulerDeploy, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d.Spec.Template.Annotations["checksum/config"]
	}
	before := checksum()
	upgrade := []string{"upgrade", helmRelease, chartPath, "-n", systemNamespace, "--reuse-values",
		"--set", "devicePackArgs.scarcityWeight=50", "--kubeconfig", cp.AdminKubeconfig}
	if _, err := helm(ctx, t, upgrade...); err != nil {
		t.Fatal(err)
	}
	if after := checksum(); before == "" || after == before {
		t.Errorf("helm upgrade with another scarcityWeight left the pod template's checksum/config at %q (before %q)", after, before)
	}
	_, data, err := e2eutil.DeployedSchedulerConfig(ctx, cp.Client)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(data, "scarcityWeight: 50") {
		t.Errorf("after helm upgrade, the scheduler configuration is:\n%s\nwant scarcityWeight: 50", data)
	}
}
