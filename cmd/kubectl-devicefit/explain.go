package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/devicefit/devicefit/pkg/cli"
	"github.com/devicefit/devicefit/pkg/replay"
)

const explainExample = `  # Why is this pod pending? Every node's verdict under the deployed profile
  kubectl devicefit explain train-0 -n ml

  # All rejected node names and all feasible nodes, not the first few
  kubectl devicefit explain train-0 -n ml -o wide

  # Under another configuration, as JSON
  kubectl devicefit explain train-0 -n ml --config my-scheduler-config.yaml -o json`

// errUnschedulable makes explain exit 2: the explanation was printed, and
// the pod fits no node.
var errUnschedulable = errors.New("the pod fits no node")

type explainOptions struct {
	flags   *genericclioptions.ConfigFlags
	streams genericiooptions.IOStreams
	printer *cli.Printer
	profile profileOptions
	top     int
}

func newExplainCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &explainOptions{flags: flags, streams: streams, printer: cli.NewPrinter()}
	cmd := &cobra.Command{
		Use:   "explain POD",
		Short: "Why a pod fits where it does, or nowhere: every node's verdict under the profile",
		Long: `Runs one scheduling cycle of the pod under the deployed devicefit profile (read from
the scheduler Deployment's ConfigMap, or --config FILE) over a snapshot of the live
cluster, with the scheduler's own plugins: it prints the pod's device demand and
devicefit.io selector as DeviceFit parses them, the verdict with the message the
scheduler writes into PodScheduled, every rejected node grouped by plugin and
reason, and for the feasible nodes each plugin's score and the node the scheduler
would choose. Every node is judged, also those DeviceFit's candidate list leaves
out. A bound pod is explained as if it were pending.

Exit status: 0 when the pod fits a node, 2 when it fits none, 1 on an error.`,
		Example: explainExample,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.printer.Validate(); err != nil {
				return err
			}
			return o.run(cmd.Context(), args[0])
		},
	}
	addOutputFlags(cmd, o.printer)
	cmd.Flags().IntVar(&o.top, "top", 5, "feasible nodes to list without -o wide")
	o.profile.addFlags(cmd)
	return cmd
}

func (o *explainOptions) run(ctx context.Context, name string) error {
	cs, err := clientset(o.flags)
	if err != nil {
		return err
	}
	ns, _, err := o.flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return err
	}
	pod, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	profile, err := o.profile.load(ctx, cs)
	if err != nil {
		return err
	}
	if pod.Spec.SchedulerName != profile.Profile.SchedulerName {
		fmt.Fprintf(o.streams.ErrOut, "Warning: pod %s/%s has schedulerName %q; explaining it under profile %q anyway.\n",
			ns, name, pod.Spec.SchedulerName, profile.Profile.SchedulerName)
	}
	if pod.Spec.NodeName != "" {
		fmt.Fprintf(o.streams.ErrOut, "Pod %s/%s is bound to %s; explaining it as if it were pending.\n", ns, name, pod.Spec.NodeName)
	}
	cluster, warnings, err := cli.Snapshot(ctx, cs)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		fmt.Fprintln(o.streams.ErrOut, "Warning:", w)
	}
	pol := replay.Policy{Name: profile.Profile.SchedulerName, Source: profile.Source, Profile: profile.Profile}
	e, err := replay.Explain(ctx, pol, cluster, pod)
	if err != nil {
		return err
	}
	switch f := *o.printer.Flags.OutputFormat; f {
	case "", cli.OutputTable, cli.OutputWide:
		err = cli.PrintExplanation(o.streams.Out, e, profile.Source, f == cli.OutputWide, o.top)
	default:
		err = o.printer.Print(o.streams.Out, nil, "SchedulingExplanation", e)
	}
	if err != nil {
		return err
	}
	if err := o.extended(ctx, cs, pod); err != nil {
		return err
	}
	if e.Chosen == "" {
		return errUnschedulable
	}
	return nil
}

// extended writes which DeviceClass serves each extended resource the pod
// asks for (table output), and warns of those none serves.
func (o *explainOptions) extended(ctx context.Context, cs kubernetes.Interface, pod *v1.Pod) error {
	objects, err := cli.DRAObjects(ctx, cs)
	if err != nil {
		return err
	}
	rows := cli.Asked(cli.ExtendedResources(objects, []*v1.Pod{pod}), pod)
	if f := *o.printer.Flags.OutputFormat; f == "" || f == cli.OutputTable || f == cli.OutputWide {
		if err := cli.PrintExtendedResources(o.streams.Out, rows); err != nil {
			return err
		}
	}
	for _, w := range cli.ExtendedWarnings(rows) {
		fmt.Fprintln(o.streams.ErrOut, "Warning:", w)
	}
	return nil
}
