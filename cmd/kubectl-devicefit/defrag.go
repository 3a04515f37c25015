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

// reserveKey is the taint (and toleration) that keeps a node for the pod a
// plan makes room for while the moved pods are recreated elsewhere.
const reserveKey = "devicefit.io/defrag"

// applyPlan reserves the plan's nodes (for the target, when there is one:
// it tolerates the taint), makes the moves and waits for the target to be
// bound; the taints go in every case.
func (o *defragOptions) applyPlan(ctx context.Context, cs kubernetes.Interface, target *v1.Pod, reserved []string, moves []replay.Move, c replay.Cluster) error {
	value := "free-nodes"
	if target != nil {
		value = string(target.UID)
	}
	taint := v1.Taint{Key: reserveKey, Value: value, Effect: v1.TaintEffectNoSchedule}
	if target != nil {
		if err := tolerate(ctx, cs, target, taint); err != nil {
			return err
		}
	}
	var tainted []string
	defer func() {
		// Not the caller's ctx: it may be cancelled (Ctrl-C).
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		for _, node := range tainted {
			if err := editTaints(cctx, cs, node, func(ts []v1.Taint) []v1.Taint {
				out := ts[:0]
				for _, t := range ts {
					if t.Key != taint.Key || t.Value != taint.Value {
						out = append(out, t)
					}
				}
				return out
			}); err != nil {
				fmt.Fprintf(o.streams.ErrOut, "Warning: removing the taint %s from node %s: %v; remove it with kubectl taint nodes %s %s-\n",
					reserveKey, node, err, node, reserveKey)
				continue
			}
			fmt.Fprintf(o.streams.ErrOut, "Released node %s.\n", node)
		}
	}()
	for _, node := range reserved {
		if err := editTaints(ctx, cs, node, func(ts []v1.Taint) []v1.Taint { return append(ts, taint) }); err != nil {
			return fmt.Errorf("reserving node %s: %w", node, err)
		}
		tainted = append(tainted, node)
		fmt.Fprintf(o.streams.ErrOut, "Reserved node %s (taint %s=%s:NoSchedule).\n", node, taint.Key, taint.Value)
	}
	if err := o.evict(ctx, cs, moves, c); err != nil {
		return err
	}
	if target == nil {
		return nil
	}
	return o.waitBound(ctx, cs, target)
}

// tolerate adds the toleration of taint to the pod: an addition, which
// Kubernetes allows on an existing pod.
func tolerate(ctx context.Context, cs kubernetes.Interface, target *v1.Pod, taint v1.Taint) error {
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
		return fmt.Errorf("adding the toleration %s to %s/%s: %w", reserveKey, target.Namespace, target.Name, err)
	}
	return nil
}

// waitBound waits for the target to be bound once the moves are done.
func (o *defragOptions) waitBound(ctx context.Context, cs kubernetes.Interface, target *v1.Pod) error {
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
		return fmt.Errorf("%s/%s was not bound within %s after the moves", target.Namespace, target.Name, o.timeout)
	}
	fmt.Fprintf(o.streams.ErrOut, "%s/%s is bound to %s.\n", target.Namespace, target.Name, node)
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

// evict makes the moves one at a time: an eviction (the API server refuses
// it with 429 when a PodDisruptionBudget no longer allows it), then a wait
// until the pod is gone (its devices are free only then) and its
// controller has as many scheduled pods as before.
func (o *defragOptions) evict(ctx context.Context, cs kubernetes.Interface, moves []replay.Move, c replay.Cluster) error {
	byName := map[string]*v1.Pod{}
	for _, p := range c.Pods {
		byName[p.Namespace+"/"+p.Name] = p
	}
	for i, m := range moves {
		if ctx.Err() != nil {
			return fmt.Errorf("stopped before move %d of %d: %w", i+1, len(moves), ctx.Err())
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
			m.Pod, i+1, len(moves), owner.Kind, owner.Name)
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
	fmt.Fprintf(o.streams.ErrOut, "Done: %d pod(s) moved.\n", len(moves))
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
