package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/devicefit/devicefit/pkg/routing"
)

const routingPolicyExample = `  # The policy for the deployed scheduler's configuration
  kubectl devicefit routing-policy | kubectl apply -f -

  # For a configuration file, with node ownership (device nodes tainted nvidia.com/gpu=present:NoSchedule)
  kubectl devicefit routing-policy --config scheduler-config.yaml --node-ownership nvidia.com/gpu=present:NoSchedule`

type routingPolicyOptions struct {
	flags     *genericclioptions.ConfigFlags
	streams   genericiooptions.IOStreams
	profile   profileOptions
	ownership string
}

func newRoutingPolicyCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &routingPolicyOptions{flags: flags, streams: streams}
	cmd := &cobra.Command{
		Use:   "routing-policy",
		Short: "Print the admission policy that routes device pods to devicefit",
		Long: `Prints a MutatingAdmissionPolicy and its binding (Kubernetes 1.36 or later) that
give every pod created for the default scheduler and asking for a device (the
profile's DeviceFit deviceResources, DRA-backed extended resources, resource
claims) the profile's schedulerName, so that one scheduler books the devices.
manifests/components/routing/routing-policy.yaml is this command's output for
manifests/scheduler-config.yaml.`,
		Example: routingPolicyExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context())
		},
	}
	o.profile.addFlags(cmd)
	cmd.Flags().StringVar(&o.ownership, "node-ownership", "",
		"KEY[=VALUE]:EFFECT of the taint device nodes carry; routed pods get its toleration (empty: no node ownership)")
	return cmd
}

func (o *routingPolicyOptions) run(ctx context.Context) error {
	var cs kubernetes.Interface
	if o.profile.file == "" {
		var err error
		if cs, err = clientset(o.flags); err != nil {
			return err
		}
	}
	p, err := o.profile.load(ctx, cs)
	if err != nil {
		return err
	}
	opts := routing.Options{SchedulerName: p.Profile.SchedulerName, Resources: p.Fit.DeviceResources}
	if o.ownership != "" {
		t, err := parseTaint(o.ownership)
		if err != nil {
			return err
		}
		opts.Toleration = t
	}
	data, err := routing.Manifest(opts)
	if err != nil {
		return err
	}
	_, err = o.streams.Out.Write(data)
	return err
}

// parseTaint reads KEY[=VALUE]:EFFECT, kubectl taint's notation, as the
// toleration that answers it.
func parseTaint(s string) (*v1.Toleration, error) {
	spec, effect, ok := strings.Cut(s, ":")
	if !ok || spec == "" {
		return nil, fmt.Errorf("--node-ownership %q: want KEY[=VALUE]:EFFECT, e.g. nvidia.com/gpu=present:NoSchedule", s)
	}
	switch e := v1.TaintEffect(effect); e {
	case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
	default:
		return nil, fmt.Errorf("--node-ownership %q: effect %q: want NoSchedule, PreferNoSchedule or NoExecute", s, effect)
	}
	t := &v1.Toleration{Effect: v1.TaintEffect(effect), Operator: v1.TolerationOpExists}
	if key, value, hasValue := strings.Cut(spec, "="); hasValue {
		t.Key, t.Value, t.Operator = key, value, v1.TolerationOpEqual
	} else {
		t.Key = spec
	}
	return t, nil
}
