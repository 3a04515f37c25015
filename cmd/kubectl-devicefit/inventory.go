package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/devicefit/devicefit/pkg/apis/config"
	"github.com/devicefit/devicefit/pkg/cli"
	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/plugins/devicepack"
)

const inventoryExample = `  # Devices per resource and product, with totals
  kubectl devicefit inventory

  # Per node, with MIG strategy, time-slicing replicas and physical devices
  kubectl devicefit inventory --by node -o wide

  # DRA resource pools (ResourceSlices) and the devices claims hold
  kubectl devicefit inventory --by pool

  # As JSON, counting stranded devices with the profile of a file
  kubectl devicefit inventory -o json --config scheduler-config.yaml`

// profileOptions are the flags that say which devicefit profile to judge
// with: the deployed one by default.
type profileOptions struct {
	file, scheduler, profile string
}

func (o *profileOptions) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.file, "config", "", "KubeSchedulerConfiguration file to use instead of the deployed scheduler's")
	cmd.Flags().StringVar(&o.scheduler, "scheduler", cli.DefaultScheduler,
		"NAMESPACE/DEPLOYMENT of the devicefit scheduler, whose configuration ConfigMap is read")
	cmd.Flags().StringVar(&o.profile, "profile", "devicefit", "schedulerName of the profile")
}

func (o *profileOptions) load(ctx context.Context, cs kubernetes.Interface) (*cli.Profile, error) {
	return cli.LoadProfile(ctx, cs, o.file, o.scheduler, o.profile)
}

type inventoryOptions struct {
	flags   *genericclioptions.ConfigFlags
	streams genericiooptions.IOStreams
	printer *cli.Printer
	profile profileOptions
	by      string
}

func newInventoryCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &inventoryOptions{flags: flags, streams: streams, printer: cli.NewPrinter()}
	cmd := &cobra.Command{
		Use:   "inventory [--by product|node|pool]",
		Short: "Allocatable, allocated, free and stranded devices per resource and product",
		Long: `Lists the device resources of the cluster's nodes per product (GFD's product label):
nodes, allocatable, allocated by the bound pods, free, and stranded: the expected
number of the free devices that a job of the workload could not use where they are
(too few free on the node, its CPU or memory used up, or a product the jobs do not
accept), the measure of the scheduler's devicefit_devices gauges, against the same workload: the
devicefit profile's (DevicePack's args), a Static one as configured, an Observed
one from its prior and the device pods bound and pending now, each counted once.
--by pool lists DRA resource pools instead. Below the table: the control plane's
Kubernetes version and, one line each, the device features it does not serve (as
the scheduler logs them at startup). Reads the API server only.`,
		Example: inventoryExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&o.by, "by", cli.ByProduct, "rows per product, node or pool (DRA resource pools)")
	addOutputFlags(cmd, o.printer)
	o.profile.addFlags(cmd)
	return cmd
}

func (o *inventoryOptions) validate() error {
	if !slices.Contains([]string{cli.ByProduct, cli.ByNode, cli.ByPool}, o.by) {
		return fmt.Errorf("--by %q: want product, node or pool", o.by)
	}
	return o.printer.Validate()
}

func (o *inventoryOptions) run(ctx context.Context) error {
	cs, err := clientset(o.flags)
	if err != nil {
		return err
	}
	if o.by == cli.ByPool {
		return o.pools(ctx, cs)
	}
	profile, err := o.profile.load(ctx, cs)
	if err != nil {
		return err
	}
	set, err := devices.NewResourceSet(profile.Fit.DeviceResources)
	if err != nil {
		return err
	}
	nodes, pods, err := cli.NodesAndPods(ctx, cs)
	if err != nil {
		return err
	}
	w, about, err := workload(profile, pods)
	if err != nil {
		return err
	}
	objects, err := cli.DRAObjects(ctx, cs)
	if err != nil {
		return err
	}
	draEntries, err := cli.DRAEntries(objects)
	if err != nil {
		return err
	}
	inv := cli.BuildInventory(nodes, pods, set, w, draEntries, o.by)
	inv.Workload = about
	inv.ExtendedResources = cli.ExtendedResources(objects, pods)
	inv.OtherSchedulers = cli.OtherSchedulers(pods, set, profile.Profiles)
	if err := o.printer.Print(o.streams.Out, cli.InventoryTable(inv), "DeviceInventory", inv); err != nil {
		return err
	}
	if o.table() {
		if err := cli.PrintExtendedResources(o.streams.Out, inv.ExtendedResources); err != nil {
			return err
		}
		fmt.Fprintf(o.streams.ErrOut, "\nStranded against: %s.\n", about)
		lines, err := cli.ControlPlaneLines(cs.Discovery())
		if err != nil {
			return err
		}
		for _, l := range lines {
			fmt.Fprintln(o.streams.ErrOut, l)
		}
	}
	for _, w := range append(cli.ExtendedWarnings(inv.ExtendedResources), cli.OtherSchedulerWarnings(inv.OtherSchedulers)...) {
		fmt.Fprintln(o.streams.ErrOut, "Warning:", w)
	}
	return nil
}

func (o *inventoryOptions) table() bool {
	f := o.printer.Flags.OutputFormat
	return f == nil || *f == "" || *f == cli.OutputTable || *f == cli.OutputWide
}

// workload is what stranded is counted against, and its description.
func workload(p *cli.Profile, pods []*v1.Pod) (*devices.Workload, string, error) {
	if p.Pack == nil {
		return nil, fmt.Sprintf("nothing (profile %q of %s has no DevicePack): no device is known stranded", p.Profile.SchedulerName, p.Source), nil
	}
	w, err := devicepack.EstimateWorkload(p.Pack, pods)
	if err != nil {
		return nil, "", err
	}
	if p.Pack.Workload.Mode == config.WorkloadStatic {
		return w, fmt.Sprintf("the static workload of %s", p.Source), nil
	}
	n := 0
	set, _ := devices.NewResourceSet(p.Pack.DeviceResources)
	for _, pod := range pods {
		if d, err := devices.PodDemand(pod, set); err == nil && len(d) > 0 && pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed {
			n++
		}
	}
	return w, fmt.Sprintf("the observed workload of %s: its prior and the %d device pods bound and pending", p.Source, n), nil
}

func (o *inventoryOptions) pools(ctx context.Context, cs kubernetes.Interface) error {
	sliceList, err := cs.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("the API server does not serve resource.k8s.io/v1 (DRA): no pools")
	}
	if err != nil {
		return fmt.Errorf("listing ResourceSlices: %w", err)
	}
	claims, err := cs.ResourceV1().ResourceClaims(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing ResourceClaims: %w", err)
	}
	inv := cli.Inventory{By: cli.ByPool, Pools: cli.BuildPools(cli.Pointers(sliceList.Items), cli.Pointers(claims.Items))}
	if len(inv.Pools) == 0 && o.table() {
		fmt.Fprintln(o.streams.ErrOut, "No ResourceSlices: no DRA driver publishes devices.")
		return nil
	}
	return o.printer.Print(o.streams.Out, cli.PoolTable(inv.Pools), "DeviceInventory", inv)
}
