package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/devicefit/devicefit/pkg/cli"
	"github.com/devicefit/devicefit/pkg/replay"
)

const snapshotExample = `  # The cluster as a replay scenario, then every policy replayed on it in creation order
  kubectl devicefit snapshot -o fleet.yaml
  replay --nodes fleet.yaml --pods fleet.yaml --tune 0 --order trace`

type snapshotOptions struct {
	flags   *genericclioptions.ConfigFlags
	streams genericiooptions.IOStreams
	output  string
}

func newSnapshotCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &snapshotOptions{flags: flags, streams: streams}
	cmd := &cobra.Command{
		Use:   "snapshot -o FILE",
		Short: "Write the cluster's nodes and pods in the replay's YAML format",
		Long: `Writes the cluster's nodes (allocatable cpu, memory and nvidia.com/gpu, GFD's product,
the other labels) and its pods that are bound or pending (cpu, memory, nvidia.com/gpu,
devicefit.io/products), in creation order, in the YAML format of the replay tool
(cmd/replay), so that replay compares scheduling profiles on this fleet and job mix.
The format knows one device resource and one selector: what it cannot carry is
listed on stderr.`,
		Example: snapshotExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.output == "" {
				return fmt.Errorf("-o FILE is required (- for standard output)")
			}
			return o.run(cmd.Context())
		},
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "file to write (- for standard output)")
	return cmd
}

func (o *snapshotOptions) run(ctx context.Context) error {
	cs, err := clientset(o.flags)
	if err != nil {
		return err
	}
	nodes, pods, err := cli.NodesAndPods(ctx, cs)
	if err != nil {
		return err
	}
	var w io.Writer = o.streams.Out
	var f *os.File
	if o.output != "-" {
		if f, err = os.Create(o.output); err != nil {
			return err
		}
		w = f
	}
	warnings, err := replay.WriteClusterYAML(w, nodes, pods)
	if f != nil {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	for _, warning := range warnings {
		fmt.Fprintln(o.streams.ErrOut, "Warning:", warning)
	}
	if err != nil {
		return err
	}
	if f != nil {
		fmt.Fprintf(o.streams.ErrOut, "Wrote %d nodes and their pods to %s.\n", len(nodes), o.output)
	}
	return nil
}
