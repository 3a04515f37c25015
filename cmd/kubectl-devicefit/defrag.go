package main

import (
	"context"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/devicefit/devicefit/pkg/cli"
	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/plugins/devicepack"
	"github.com/devicefit/devicefit/pkg/replay"
)

const defragExample = `  # Which pods would have to move for this pending pod to fit? (dry run)
  kubectl devicefit defrag --for train-8gpu -n ml

  # Move them: evict one at a time, each waiting for its replacement to be scheduled
  kubectl devicefit defrag --for train-8gpu -n ml --apply`

type defragOptions struct {
	flags   *genericclioptions.ConfigFlags
	streams genericiooptions.IOStreams
	printer *cli.Printer
	profile profileOptions
	target  string
	apply   bool
	timeout time.Duration
	grace   int64
}

func newDefragCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &defragOptions{flags: flags, streams: streams, printer: cli.NewPrinter()}
	cmd := &cobra.Command{
		Use:   "defrag --for POD [--apply]",
		Short: "Plan (and make) the fewest pod moves after which a pending pod fits",
		Long: `Simulates the deployed devicefit profile over a snapshot of the cluster to find the
fewest pod moves after which the pending pod fits a node. Only pods a controller
recreates may move (owned by a ReplicaSet, Job, StatefulSet, ...; not DaemonSet
pods, not bare or static pods), never pods of higher priority than the target, and
never more of a PodDisruptionBudget's pods than it allows. Each moved pod must fit
again elsewhere. Prints the moves and the free and stranded devices and whole-free
device nodes before and after.

Dry run by default. --apply reserves the chosen node for the pod while it works:
it adds the toleration devicefit.io/defrag=<pod UID>:NoSchedule to the pod (an
addition, which Kubernetes allows on an existing pod) and that taint to the node,
so that the recreated pods go elsewhere. Then it evicts the pods through the
Eviction API (policy/v1, so PodDisruptionBudgets hold), one at a time, waiting
for each to be gone and its controller to have a replacement scheduled; Ctrl-C
stops between moves. It removes the taint once the pod is bound, on an error, or
when stopped; the toleration stays on the pod.

Exit status: 0 when a plan exists (and, with --apply, the pod is bound), 2 when
none does, 1 on an error.`,
		Example: defragExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.target == "" {
				return fmt.Errorf("--for POD is required")
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
	cmd.Flags().BoolVar(&o.apply, "apply", false, "evict the planned pods instead of only printing the plan")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 5*time.Minute, "how long --apply waits for each moved pod to be gone and its replacement scheduled")
	cmd.Flags().Int64Var(&o.grace, "grace-period", -1, "seconds each evicted pod has to terminate, as kubectl drain's; -1: the pod's own terminationGracePeriodSeconds")
	o.printer.Flags.AddFlags(cmd)
	cmd.Flags().Lookup("output").Usage = "Output format: table, json, yaml, jsonpath=..., go-template=..."
	o.profile.addFlags(cmd)
	return cmd
}

func (o *defragOptions) run(ctx context.Context) error {
	cfg, err := o.flags.ToRESTConfig()
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ns, _, err := o.flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return err
	}
	target, err := cs.CoreV1().Pods(ns).Get(ctx, o.target, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if target.Spec.NodeName != "" {
		return fmt.Errorf("pod %s/%s is bound to %s already", ns, o.target, target.Spec.NodeName)
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
	plan, err := replay.PlanForPod(ctx, pol, cluster, target, replay.MoveRules{PDBs: cli.Pointers(pdbs.Items)})
	if err != nil {
		return err
	}
	report, err := o.report(profile, cluster, plan)
	if err != nil {
		return err
	}
	switch f := *o.printer.Flags.OutputFormat; f {
	case "", cli.OutputTable, cli.OutputWide:
		err = cli.PrintDefrag(o.streams.Out, report)
	default:
		err = o.printer.Print(o.streams.Out, nil, "DefragPlan", report)
	}
	if err != nil || !plan.Fits || len(plan.Moves) == 0 || !o.apply {
		if err == nil && !plan.Fits {
			return errUnschedulable
		}
		return err
	}
	return o.applyPlan(ctx, cs, target, plan, cluster)
}

// reserveKey is the taint (and toleration) that keeps a node for the pod a
// plan makes room for while the moved pods are recreated elsewhere.
const reserveKey = "devicefit.io/defrag"

// applyPlan reserves the plan's node for the target, makes the moves and
// waits for the target to be bound there; the taint goes in every case.
func (o *defragOptions) applyPlan(ctx context.Context, cs kubernetes.Interface, target *v1.Pod, plan *replay.DefragPlan, c replay.Cluster) error {
	taint := v1.Taint{Key: reserveKey, Value: string(target.UID), Effect: v1.TaintEffectNoSchedule}
	toleration := v1.Toleration{Key: taint.Key, Operator: v1.TolerationOpEqual, Value: taint.Value, Effect: taint.Effect}
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := cs.CoreV1().Pods(target.Namespace).Get(ctx, target.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Spec.Tolerations = append(p.Spec.Tolerations, toleration)
		_, err = cs.CoreV1().Pods(p.Namespace).Update(ctx, p, metav1.UpdateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("adding the toleration %s to %s: %w", reserveKey, plan.Target, err)
	}
	if err := editTaints(ctx, cs, plan.Node, func(ts []v1.Taint) []v1.Taint { return append(ts, taint) }); err != nil {
		return fmt.Errorf("reserving node %s: %w", plan.Node, err)
	}
	fmt.Fprintf(o.streams.ErrOut, "Reserved node %s for %s (taint %s=%s:NoSchedule).\n", plan.Node, plan.Target, taint.Key, taint.Value)
	defer func() {
		// Not the caller's ctx: it may be cancelled (Ctrl-C).
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := editTaints(cctx, cs, plan.Node, func(ts []v1.Taint) []v1.Taint {
			out := ts[:0]
			for _, t := range ts {
				if t.Key != taint.Key || t.Value != taint.Value {
					out = append(out, t)
				}
			}
			return out
		}); err != nil {
			fmt.Fprintf(o.streams.ErrOut, "Warning: removing the taint %s from node %s: %v; remove it with kubectl taint nodes %s %s-\n",
				reserveKey, plan.Node, err, plan.Node, reserveKey)
			return
		}
		fmt.Fprintf(o.streams.ErrOut, "Released node %s.\n", plan.Node)
	}()
	if err := o.evict(ctx, cs, plan, c); err != nil {
		return err
	}
	var node string
	wctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	err := wait.PollUntilContextCancel(wctx, time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(target.Namespace).Get(ctx, target.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		node = p.Spec.NodeName
		return node != "", nil
	})
	if err != nil {
		return fmt.Errorf("%s was not bound within %s after the moves", plan.Target, o.timeout)
	}
	fmt.Fprintf(o.streams.ErrOut, "%s is bound to %s.\n", plan.Target, node)
	return nil
}

// editTaints replaces the node's taints with edit's result.
func editTaints(ctx context.Context, cs kubernetes.Interface, name string, edit func([]v1.Taint) []v1.Taint) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Spec.Taints = edit(n.Spec.Taints)
		_, err = cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

// report adds the figures before and after the plan.
func (o *defragOptions) report(profile *cli.Profile, c replay.Cluster, plan *replay.DefragPlan) (*cli.DefragReport, error) {
	set, err := devices.NewResourceSet(profile.Fit.DeviceResources)
	if err != nil {
		return nil, err
	}
	var w *devices.Workload
	if profile.Pack != nil {
		if w, err = devicepack.EstimateWorkload(profile.Pack, c.Pods); err != nil {
			return nil, err
		}
	}
	return &cli.DefragReport{
		Plan:   plan,
		Before: cli.FiguresOf(c.Nodes, c.Pods, set, w),
		After:  cli.FiguresOf(c.Nodes, cli.AfterPlan(c.Pods, plan), set, w),
	}, nil
}

// evict makes the moves one at a time: an eviction (the API server refuses
// it with 429 when a PodDisruptionBudget no longer allows it), then a wait
// until the pod is gone (its devices are free only then) and its
// controller has as many scheduled pods as before.
func (o *defragOptions) evict(ctx context.Context, cs kubernetes.Interface, plan *replay.DefragPlan, c replay.Cluster) error {
	byName := map[string]*v1.Pod{}
	for _, p := range c.Pods {
		byName[p.Namespace+"/"+p.Name] = p
	}
	for i, m := range plan.Moves {
		if ctx.Err() != nil {
			return fmt.Errorf("stopped before move %d of %d: %w", i+1, len(plan.Moves), ctx.Err())
		}
		p := byName[m.Pod]
		owner := metav1.GetControllerOf(p)
		before, err := scheduledOf(ctx, cs, p.Namespace, owner.UID)
		if err != nil {
			return err
		}
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}}
		if o.grace >= 0 {
			ev.DeleteOptions = &metav1.DeleteOptions{GracePeriodSeconds: &o.grace}
		}
		if err := cs.PolicyV1().Evictions(p.Namespace).Evict(ctx, ev); err != nil {
			if apierrors.IsTooManyRequests(err) {
				return fmt.Errorf("evicting %s: refused, a PodDisruptionBudget allows no more disruptions now: %w", m.Pod, err)
			}
			return fmt.Errorf("evicting %s: %w", m.Pod, err)
		}
		fmt.Fprintf(o.streams.ErrOut, "Evicted %s (%d/%d); waiting for %s %s to have a replacement scheduled...\n",
			m.Pod, i+1, len(plan.Moves), owner.Kind, owner.Name)
		// Not the caller's ctx: a Ctrl-C stops between moves, not while one
		// is under way.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.timeout)
		err = wait.PollUntilContextCancel(wctx, time.Second, true, func(ctx context.Context) (bool, error) {
			if _, err := cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{}); err == nil {
				return false, nil
			} else if !apierrors.IsNotFound(err) {
				return false, nil
			}
			n, err := scheduledOf(ctx, cs, p.Namespace, owner.UID)
			return err == nil && n >= before, nil
		})
		cancel()
		if err != nil {
			return fmt.Errorf("move %d (%s): its replacement was not scheduled within %s", i+1, m.Pod, o.timeout)
		}
	}
	fmt.Fprintf(o.streams.ErrOut, "Done: %d pod(s) moved; waiting for %s to be bound.\n", len(plan.Moves), plan.Target)
	return nil
}

// scheduledOf counts the bound, not terminating pods a controller owns.
func scheduledOf(ctx context.Context, cs kubernetes.Interface, ns string, owner types.UID) (int, error) {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range pods.Items {
		p := &pods.Items[i]
		if c := metav1.GetControllerOf(p); c != nil && c.UID == owner && p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n, nil
}
