package main

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/version"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkplugins "k8s.io/kubernetes/pkg/scheduler/framework/plugins"

	"github.com/devicefit/devicefit/pkg/apis/config/validation"
	"github.com/devicefit/devicefit/pkg/support"
)

// discoveryTimeout bounds how long the scheduler waits for an API server
// it cannot reach before it exits with the reason (its Deployment restarts
// it): long enough for a control plane's restart, short enough that a wrong
// address shows in the pod's status.
const discoveryTimeout = 2 * time.Minute

// beforeScheduler runs between flag parsing and upstream's own
// PersistentPreRunE (which fixes the feature gates). In this order:
//  1. the devicefit args and the profiles' plugin names are checked, with no
//     cluster needed (a bad file fails at once, with field paths);
//  2. the API server's version and resources are read (support.Discover);
//  3. a server outside the supported range is refused by name, and an older
//     supported one is emulated (--emulated-version, KEP-4330), so that the
//     feature gates take that minor's defaults;
//  4. upstream fixes the gates (upstream, the wrapped PersistentPreRunE);
//  5. a gate whose API the server does not list is turned off (the
//     served-API check), and every device feature the server does not serve
//     is one log line.
func beforeScheduler(upstream func(*cobra.Command, []string) error, outOfTree []string) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if f := cmd.Flags().Lookup("version"); f != nil && f.Changed {
			return upstream(cmd, args) // prints and exits in RunE; no cluster
		}
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		logger := klog.FromContext(ctx)
		configFile := cmd.Flag("config").Value.String()
		err := validation.ValidateConfigFile(configFile)
		if err != nil {
			return err
		}
		var cfg *schedconfig.KubeSchedulerConfiguration
		if configFile != "" {
			if cfg, err = options.LoadConfigFromFile(klog.Background(), configFile); err != nil {
				return err
			}
			if err := knownPlugins(configFile, cfg, outOfTree); err != nil {
				return err
			}
		}
		cluster, err := discover(ctx, cmd.Flag("master").Value.String(), kubeconfigPath(cmd, cfg))
		if err != nil {
			return err
		}
		requested, err := requestedEmulation(cmd)
		if err != nil {
			return err
		}
		emulate, err := support.Emulation(cluster.Version, requested)
		if err != nil {
			return err
		}
		if emulate != nil && requested == nil {
			logger.Info(fmt.Sprintf("The API server is Kubernetes %s: emulating Kubernetes %d.%d (--emulated-version), "+
				"so that the scheduler is not newer than the API server and its feature gates are that minor's defaults",
				cluster.GitVersion, emulate.Major(), emulate.Minor()), "serverVersion", cluster.GitVersion)
			if err := cmd.Flags().Set("emulated-version", fmt.Sprintf("%d.%d", emulate.Major(), emulate.Minor())); err != nil {
				return err
			}
		}
		if err := upstream(cmd, args); err != nil {
			return err
		}
		if err := support.DisableUnservedGates(ctx, cluster, utilfeature.DefaultMutableFeatureGate); err != nil {
			return err
		}
		for _, f := range support.Features(cluster, utilfeature.DefaultFeatureGate) {
			if !f.On {
				logger.Info(f.Line(cluster), "serverVersion", cluster.GitVersion)
			}
		}
		return nil
	}
}

// kubeconfigPath is the kubeconfig the scheduler will use: the config file's
// clientConnection.kubeconfig, else the deprecated --kubeconfig (upstream
// reads that only without --config); empty means in-cluster.
func kubeconfigPath(cmd *cobra.Command, cfg *schedconfig.KubeSchedulerConfiguration) string {
	if cfg == nil {
		return cmd.Flag("kubeconfig").Value.String()
	}
	return cfg.ClientConnection.Kubeconfig
}

func discover(ctx context.Context, master, kubeconfig string) (*support.Cluster, error) {
	restConfig, err := clientcmd.BuildConfigFromFlags(master, kubeconfig)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(restConfig)
	if err != nil {
		return nil, err
	}
	return support.DiscoverWithRetry(ctx, dc, discoveryTimeout)
}

// requestedEmulation is the kube component's --emulated-version, if given
// ("1.35" or "kube=1.35").
func requestedEmulation(cmd *cobra.Command) (*version.Version, error) {
	f := cmd.Flags().Lookup("emulated-version")
	if f == nil || !f.Changed {
		return nil, nil
	}
	values, err := cmd.Flags().GetStringSlice("emulated-version")
	if err != nil {
		return nil, err
	}
	for _, v := range values {
		component, minor, found := strings.Cut(v, "=")
		if !found {
			component, minor = "kube", v
		}
		if strings.TrimSpace(component) == "kube" {
			return version.Parse(strings.TrimSpace(minor))
		}
	}
	return nil, nil
}

// knownPlugins fails on a profile that names a plugin this binary does not
// have, as upstream's framework would, but before the cluster is asked
// anything. The in-tree registry is built on a copy of the feature gates:
// it reads them, and the real gates must not be read before upstream fixes
// them for the emulated minor.
func knownPlugins(configFile string, cfg *schedconfig.KubeSchedulerConfiguration, outOfTree []string) error {
	gates := utilfeature.DefaultFeatureGate
	utilfeature.DefaultFeatureGate = utilfeature.DefaultMutableFeatureGate.DeepCopy()
	registry := frameworkplugins.NewInTreeRegistry()
	utilfeature.DefaultFeatureGate = gates
	var unknown []string
	for _, p := range cfg.Profiles {
		names := p.Plugins.Names()
		for _, e := range p.Plugins.MultiPoint.Enabled {
			names = append(names, e.Name)
		}
		for _, name := range names {
			if _, ok := registry[name]; !ok && !slices.Contains(outOfTree, name) && !slices.Contains(unknown, name) {
				unknown = append(unknown, name)
			}
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	return fmt.Errorf("%s: plugin %q does not exist in devicefit-scheduler", configFile, unknown[0])
}
