package integration

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/kubernetes/pkg/scheduler"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	configtesting "k8s.io/kubernetes/pkg/scheduler/apis/config/testing"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	testutil "k8s.io/kubernetes/test/integration/util"
	"k8s.io/utils/ptr"

	// Registers DeviceFitArgs into the upstream kube-scheduler config scheme,
	// which V1ToInternalWithDefaults converts with.
	_ "github.com/devicefit/devicefit/pkg/apis/config/scheme"
	dfv1 "github.com/devicefit/devicefit/pkg/apis/config/v1"
	"github.com/devicefit/devicefit/pkg/plugins/devicefit"
	"github.com/devicefit/devicefit/pkg/plugins/devicepack"
)

// Scheduler names of the profiles the tests run. A pod picks its profile with
// spec.schedulerName; pods naming anything else are ignored by our scheduler.
const (
	// schedulerName is the profile users get: default args (deviceNodePolicy None,
	// no allowedCounts).
	schedulerName = "devicefit"
	// strictSchedulerName adds allowedCounts 1, 2, 4, 8 and deviceNodePolicy Require.
	strictSchedulerName = "devicefit-strict"
)

// allowedCounts of the strict profile.
var strictAllowedCounts = []int64{1, 2, 4, 8}

// cluster is one real kube-apiserver (on the package's etcd) plus one
// in-process scheduler with the devicefit out-of-tree registry.
type cluster struct {
	*testutil.TestContext
}

// profile returns a v1 profile that enables DeviceFit at multiPoint on top of
// the upstream default plugins, configured with args.
func profile(name string, args *dfv1.DeviceFitArgs) configv1.KubeSchedulerProfile {
	return configv1.KubeSchedulerProfile{
		SchedulerName: ptr.To(name),
		Plugins: &configv1.Plugins{
			MultiPoint: configv1.PluginSet{
				Enabled: []configv1.Plugin{{Name: devicefit.Name}},
			},
		},
		PluginConfig: []configv1.PluginConfig{{
			Name: devicefit.Name,
			Args: runtime.RawExtension{Object: args},
		}},
	}
}

// defaultProfiles are the two profiles most tests use.
func defaultProfiles() []configv1.KubeSchedulerProfile {
	return []configv1.KubeSchedulerProfile{
		profile(schedulerName, &dfv1.DeviceFitArgs{
			DeviceNodePolicy: ptr.To(dfv1.DeviceNodePolicyNone),
		}),
		profile(strictSchedulerName, &dfv1.DeviceFitArgs{
			AllowedCounts:    strictAllowedCounts,
			DeviceNodePolicy: ptr.To(dfv1.DeviceNodePolicyRequire),
		}),
	}
}

// TestDeviceFit is the package's single top-level test. Starting a
// kube-apiserver costs seconds (and upstream's harness allows it only 10s to
// become healthy, which a loaded 2-core machine can miss), so all suites share
// one apiserver. Each suite gets its own namespace, its own nodes (deleted
// when it ends) and its own scheduler; suites run one after another, so node
// counts in scheduler messages are the suite's own. Select one suite with
// -run 'TestDeviceFit/Placement' (or NoOvercommit, DRAExtendedResource).
func TestDeviceFit(t *testing.T) {
	api := startAPIServer(t)
	t.Run("Placement", func(t *testing.T) { testPlacement(t, api.suite(t, "placement")) })
	t.Run("NoOvercommit", func(t *testing.T) { testNoOvercommit(t, api.suite(t, "overcommit")) })
	t.Run("DRAExtendedResource", func(t *testing.T) { testDRAExtendedResource(t, api.suite(t, "dra")) })
	t.Run("Packing", func(t *testing.T) { testPacking(t, api.suite(t, "packing")) })
	t.Run("RequeueAfterDelete", func(t *testing.T) { testRequeueAfterDelete(t, api.suite(t, "requeue")) })
	t.Run("PendingReasons", func(t *testing.T) { testPendingReasons(t, api.suite(t, "reasons")) })
	t.Run("DRADevices", func(t *testing.T) { testDRADevices(t, api.suite(t, "dradevices")) })
	t.Run("ShortlistMiss", func(t *testing.T) { testShortlistMiss(t, api.suite(t, "miss")) })
}

// startAPIServer starts a kube-apiserver for t (torn down, with all nodes and
// the test namespace, by t.Cleanup).
func startAPIServer(t *testing.T) *cluster {
	t.Helper()
	return &cluster{TestContext: testutil.InitTestAPIServer(t, "devicefit", nil)}
}

// suite returns a view of the apiserver with a fresh namespace for one suite
// (t); its pods are deleted when t ends.
func (c *cluster) suite(t *testing.T, nsPrefix string) *cluster {
	t.Helper()
	s := &cluster{TestContext: testutil.WithNewNamespace(t, c.TestContext, nsPrefix)}
	t.Cleanup(func() { s.deletePodsAndWait(t, s.NS.Name) })
	return s
}

// startScheduler starts the scheduler with the given v1 profiles. Start it after
// the nodes exist or not: it picks up later objects through its informers.
// It is stopped by t.Cleanup before the apiserver goes away.
func (c *cluster) startScheduler(t *testing.T, profiles ...configv1.KubeSchedulerProfile) {
	t.Helper()
	cfg := configtesting.V1ToInternalWithDefaults(t, configv1.KubeSchedulerConfiguration{
		Profiles: profiles,
	})
	c.startSchedulerWithProfiles(t, cfg.Profiles...)
}

// startSchedulerWithProfiles starts the scheduler with internal (decoded and
// defaulted) profiles, e.g. those of manifests/scheduler-config.yaml.
func (c *cluster) startSchedulerWithProfiles(t *testing.T, profiles ...schedconfig.KubeSchedulerProfile) {
	t.Helper()
	c.startSchedulerWithPlugins(t, nil, profiles...)
}

// startSchedulerWithPlugins starts the scheduler with profiles that may also
// enable the test's own plugins (extra, beside devicefit's).
func (c *cluster) startSchedulerWithPlugins(t *testing.T, extra frameworkruntime.Registry, profiles ...schedconfig.KubeSchedulerProfile) {
	t.Helper()
	registry := frameworkruntime.Registry{devicefit.Name: devicefit.New, devicepack.Name: devicepack.New}
	if err := registry.Merge(extra); err != nil {
		t.Fatal(err)
	}
	testutil.InitTestSchedulerWithOptions(t, c.TestContext, 0,
		scheduler.WithProfiles(profiles...),
		scheduler.WithFrameworkOutOfTreeRegistry(registry),
		// Retry unschedulable pods quickly: some tests free capacity and expect
		// waiting pods to follow promptly.
		scheduler.WithPodInitialBackoffSeconds(1),
		scheduler.WithPodMaxBackoffSeconds(2),
	)
	t.Cleanup(c.SchedulerCloseFn)
	testutil.SyncSchedulerInformerFactory(c.TestContext)
	go c.Scheduler.Run(c.SchedulerCtx)
}

// v1ToInternal converts and defaults one v1 profile.
func v1ToInternal(t *testing.T, p configv1.KubeSchedulerProfile) schedconfig.KubeSchedulerProfile {
	t.Helper()
	return configtesting.V1ToInternalWithDefaults(t, configv1.KubeSchedulerConfiguration{
		Profiles: []configv1.KubeSchedulerProfile{p},
	}).Profiles[0]
}
