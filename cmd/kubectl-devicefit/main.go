// Command kubectl-devicefit is the kubectl plugin of devicefit (`kubectl
// devicefit`): what a cluster's devices are, which are free and which
// stranded, why a pod fits where it does or nowhere, the fewest pod moves
// that make it fit, and the cluster as a replay scenario. It reads the API
// server only, with the caller's kubeconfig
// (cli-runtime's flags: --kubeconfig, --context, -n, ...).
//
// Exit codes: 0 done, 1 an error (a bad flag, the API server refused or
// failed), 2 from explain when the pod fits no node (the explanation is
// printed) and from defrag when no plan makes it fit.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-base/version"

	"github.com/devicefit/devicefit/pkg/cli"
)

func main() {
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	os.Exit(run(streams, os.Args[1:]))
}

// run executes the command line and returns the exit code.
func run(streams genericiooptions.IOStreams, args []string) int {
	cmd := newRootCommand(streams)
	cmd.SetArgs(args)
	err := cmd.Execute()
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUnschedulable):
		return 2
	}
	fmt.Fprintln(streams.ErrOut, "error:", err)
	return 1
}

// newRootCommand is `kubectl devicefit` with its subcommands.
func newRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	cmd := &cobra.Command{
		Use:   "devicefit",
		Short: "Devices of the cluster as the devicefit scheduler sees them",
		Long: `kubectl devicefit reports on the discrete devices (GPUs, MIG slices, shared GPUs,
DRA devices) of a cluster as the devicefit scheduler counts them. It reads the
API server only; the scheduler need not run.`,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl devicefit"},
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Get().GitVersion,
	}
	// Cobra's own output (--version, --help) goes to the streams too, as
	// kubectl's commands do, rather than to the process's stdout.
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	flags.AddFlags(cmd.PersistentFlags())
	cmd.AddCommand(newInventoryCommand(flags, streams), newExplainCommand(flags, streams), newSnapshotCommand(flags, streams), newDefragCommand(flags, streams), newRoutingPolicyCommand(flags, streams))
	return cmd
}

// addOutputFlags adds cli-runtime's -o flags, which the printer also takes
// table and wide for.
func addOutputFlags(cmd *cobra.Command, p *cli.Printer) {
	p.Flags.AddFlags(cmd)
	cmd.Flags().Lookup("output").Usage = "Output format: table, wide, json, yaml, jsonpath=..., go-template=..."
}

// clientset is a client for the kubeconfig the flags name.
func clientset(flags *genericclioptions.ConfigFlags) (kubernetes.Interface, error) {
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}
