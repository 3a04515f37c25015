package main

import (
	"context"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/devicefit/devicefit/pkg/cli"
	"github.com/devicefit/devicefit/pkg/defrag"
	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/plugins/devicepack"
	"github.com/devicefit/devicefit/pkg/replay"
)

const defragExample = `  # Which pods would have to move for this pending pod to fit? (dry run)
  kubectl devicefit defrag --for train-8gpu -n ml

  # Move them: evict one at a time, each waiting for its replacement to be scheduled
  kubectl devicefit defrag --for train-8gpu -n ml --apply

  # Which moves would leave two H100 nodes whole-free?
  kubectl devicefit defrag --free-nodes 2 --product NVIDIA-H100-80GB-HBM3`

type defragOptions struct {
	flags   *genericclioptions.ConfigFlags
	streams genericiooptions.IOStreams
	printer *cli.Printer
	profile profileOptions
	target  string
	// freeNodes, resource, product: the --free-nodes mode.
	freeNodes         int
	resource, product string
	apply             bool
	timeout           time.Duration
	grace             int64
}

func newDefragCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &defragOptions{flags: flags, streams: streams, printer: cli.NewPrinter()}
	cmd := &cobra.Command{
		Use:   "defrag (--for POD | --free-nodes N [--resource R] [--product P]) [--apply]",
		Short: "Plan (and make) the fewest pod moves after which a pending pod fits, or N device nodes are free",
		Long: `Simulates the deployed devicefit profile over a snapshot of the cluster to find the
fewest pod moves after which the pending pod fits a node. Only pods a controller
recreates may move (owned by a ReplicaSet, Job, StatefulSet, ...; not DaemonSet
pods, not bare or static pods), never pods of higher priority than the target, and
never more of a PodDisruptionBudget's pods than it allows. Each moved pod must fit
again elsewhere. Prints the moves and the free and stranded devices and whole-free
device nodes before and after. --free-nodes N instead leaves N device nodes
(of --resource, and --product) with none of the resource allocated: nodes free
already count first, then those whose pods may all move, fewest pods first.

Dry run by default. --apply reserves the chosen node for the pod while it works:
it adds the toleration devicefit.io/defrag=<pod UID>:NoSchedule to the pod (an
addition, which Kubernetes allows on an existing pod) and that taint to the node,
so that the recreated pods go elsewhere. Then it evicts the pods through the
Eviction API (policy/v1, so PodDisruptionBudgets hold), one at a time, waiting
for each to be gone and its controller to have a replacement scheduled; Ctrl-C
stops between moves. It removes the taint once the pod is bound, on an error, or
when stopped; the toleration stays on the pod.

Exit status: 0 when a plan exists (and, with --apply, it is carried out), 2
when none does, 1 on an error.`,
		Example: defragExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (o.target == "") == (o.freeNodes <= 0) {
				return fmt.Errorf("want either --for POD or --free-nodes N (N > 0)")
			}
			if err := o.printer.Validate(); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return o.run(ctx)
		},
	}
	cmd.Flags().StringVar(&o.target, "for", "", "the pending pod to make room for (in -n's namespace)")
	cmd.Flags().IntVar(&o.freeNodes, "free-nodes", 0, "instead of --for: leave this many device nodes with none of --resource allocated")
	cmd.Flags().StringVar(&o.resource, "resource", "nvidia.com/gpu", "with --free-nodes: the device resource")
	cmd.Flags().StringVar(&o.product, "product", "", "with --free-nodes: only nodes of this product (as devicefit.io/products)")
	cmd.Flags().BoolVar(&o.apply, "apply", false, "evict the planned pods instead of only printing the plan")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 5*time.Minute, "how long --apply waits for each moved pod to be gone and its replacement scheduled")
	cmd.Flags().Int64Var(&o.grace, "grace-period", -1, "seconds each evicted pod has to terminate, as kubectl drain's; -1: the pod's own terminationGracePeriodSeconds")
	addOutputFlags(cmd, o.printer)
	o.profile.addFlags(cmd)
	return cmd
}

func (o *defragOptions) run(ctx context.Context) error {
	cs, err := clientset(o.flags)
	if err != nil {
		return err
	}
	var target *v1.Pod
	if o.target != "" {
		ns, _, err := o.flags.ToRawKubeConfigLoader().Namespace()
		if err != nil {
			return err
		}
		if target, err = cs.CoreV1().Pods(ns).Get(ctx, o.target, metav1.GetOptions{}); err != nil {
			return err
		}
		if target.Spec.NodeName != "" {
			return fmt.Errorf("pod %s/%s is bound to %s already", ns, o.target, target.Spec.NodeName)
		}
	}
	profile, err := o.profile.load(ctx, cs)
	if err != nil {
		return err
	}
	cluster, warnings, err := cli.Snapshot(ctx, cs)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		fmt.Fprintln(o.streams.ErrOut, "Warning:", w)
	}
	pdbs, err := cs.PolicyV1().PodDisruptionBudgets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing PodDisruptionBudgets: %w", err)
	}
	pol := replay.Policy{Name: profile.Profile.SchedulerName, Source: profile.Source, Profile: profile.Profile}
	rules := replay.MoveRules{PDBs: cli.Pointers(pdbs.Items)}
	report := &cli.DefragReport{}
	var moves []replay.Move
	var reserved []string
	var found bool
	after := func([]*v1.Pod) []*v1.Pod { return nil }
	if target != nil {
		plan, err := replay.PlanForPod(ctx, pol, cluster, target, rules)
		if err != nil {
			return err
		}
		report.Plan, moves, reserved, found = plan, plan.Moves, []string{plan.Node}, plan.Fits
		after = func(pods []*v1.Pod) []*v1.Pod { return cli.AfterMoves(pods, plan.Moves, plan.Target, plan.Node) }
	} else {
		plan, err := replay.PlanFreeNodes(ctx, pol, cluster, o.freeNodes, v1.ResourceName(o.resource), o.product, rules)
		if err != nil {
			return err
		}
		report.FreeNodes, moves, reserved, found = plan, plan.Moves, plan.Free, plan.Done
		after = func(pods []*v1.Pod) []*v1.Pod { return cli.AfterMoves(pods, plan.Moves, "", "") }
	}
	if err := o.figures(report, profile, cluster, after); err != nil {
		return err
	}
	switch f := *o.printer.Flags.OutputFormat; f {
	case "", cli.OutputTable, cli.OutputWide:
		err = cli.PrintDefrag(o.streams.Out, report)
	default:
		err = o.printer.Print(o.streams.Out, nil, "DefragPlan", report)
	}
	switch {
	case err != nil:
		return err
	case !found:
		return errUnschedulable
	case len(moves) == 0 || !o.apply:
		return nil
	}
	return o.applyPlan(ctx, cs, target, reserved, moves, cluster)
}

// figures adds the figures before and after the plan to the report.
func (o *defragOptions) figures(r *cli.DefragReport, profile *cli.Profile, c replay.Cluster, after func([]*v1.Pod) []*v1.Pod) error {
	set, err := devices.NewResourceSet(profile.Fit.DeviceResources)
	if err != nil {
		return err
	}
	var w *devices.Workload
	if profile.Pack != nil {
		if w, err = devicepack.EstimateWorkload(profile.Pack, c.Pods); err != nil {
			return err
		}
	}
	r.Before = cli.FiguresOf(c.Nodes, c.Pods, set, w)
	r.After = cli.FiguresOf(c.Nodes, after(c.Pods), set, w)
	return nil
}

// applyPlan makes the plan's moves one at a time, printing each step.
func (o *defragOptions) applyPlan(ctx context.Context, cs kubernetes.Interface, target *v1.Pod, reserved []string, moves []replay.Move, c replay.Cluster) error {
	a := defrag.Apply{Client: cs, Timeout: o.timeout, Batch: 1, Report: o.progress}
	if o.grace >= 0 {
		a.Grace = &o.grace
	}
	return a.Run(ctx, target, reserved, moves, c.Pods)
}

// progress prints a step of the plan's application.
func (o *defragOptions) progress(p defrag.Progress) {
	w := o.streams.ErrOut
	switch p.Kind {
	case defrag.Reserved:
		fmt.Fprintf(w, "Reserved node %s (taint %s=%s:NoSchedule).\n", p.Node, p.Taint.Key, p.Taint.Value)
	case defrag.Evicted:
		owner := metav1.GetControllerOf(p.Pod)
		fmt.Fprintf(w, "Evicted %s (%d/%d); waiting for %s %s to have a replacement scheduled...\n",
			p.Move.Pod, p.Index, p.Total, owner.Kind, owner.Name)
	case defrag.Replaced:
		if p.Index == p.Total {
			fmt.Fprintf(w, "Done: %d pod(s) moved.\n", p.Total)
		}
	case defrag.Released:
		fmt.Fprintf(w, "Released node %s.\n", p.Node)
	case defrag.ReleaseFailed:
		fmt.Fprintf(w, "Warning: removing the taint %s from node %s: %v; remove it with kubectl taint nodes %s %s-\n",
			defrag.ReserveKey, p.Node, p.Err, p.Node, defrag.ReserveKey)
	case defrag.Bound:
		fmt.Fprintf(w, "%s/%s is bound to %s.\n", p.Pod.Namespace, p.Pod.Name, p.Node)
	}
}
