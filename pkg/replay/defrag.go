package replay

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/devicefit/devicefit/pkg/devices"
)

// Move is one pod a defragmentation plan evicts: its controller recreates
// it, and the profile places the new pod on To (simulated).
type Move struct {
	Pod  string `json:"pod"`
	From string `json:"from"`
	To   string `json:"to"`
	// Devices are the pod's device requests, e.g. "1 nvidia.com/gpu".
	Devices []string `json:"devices,omitempty"`
}

// DefragPlan is the fewest moves after which a pending pod fits.
type DefragPlan struct {
	Target string `json:"target"`
	// Fits: the pod fits on Node once the moves are done (none: it fits
	// now). When false, Reason says why no plan exists.
	Fits   bool   `json:"fits"`
	Node   string `json:"node,omitempty"`
	Moves  []Move `json:"moves"`
	Reason string `json:"reason,omitempty"`
}

// MoveRules say which pods a plan may move: only pods a controller
// recreates (a controller owner reference of a kind other than DaemonSet,
// whose pods would come back to the same node), not mirror pods, never of
// higher priority than the pod the plan is for, and never more of the pods
// a PodDisruptionBudget selects than its status allows disrupting.
type MoveRules struct {
	PDBs []*policyv1.PodDisruptionBudget
	// OptedIn, when set, must accept a pod for it to move: the
	// defragmenter's opted-in namespaces and workloads. Nil accepts all.
	OptedIn func(*v1.Pod) bool
}

// why returns "" when p may move for a pod of priority prio, else the
// reason it may not.
func (r MoveRules) why(p *v1.Pod, prio int32) string {
	if _, mirror := p.Annotations[v1.MirrorPodAnnotationKey]; mirror {
		return "a static pod"
	}
	owner := metav1.GetControllerOf(p)
	switch {
	case owner == nil:
		return "no controller recreates it"
	case owner.Kind == "DaemonSet":
		return "a DaemonSet pod comes back to its node"
	case corev1helpers.PodPriority(p) > prio:
		return "its priority is higher"
	case r.OptedIn != nil && !r.OptedIn(p):
		return "not opted in to moves"
	}
	return ""
}

// budget tracks the disruptions the PDBs still allow during a plan.
type budget struct {
	pdbs    []*policyv1.PodDisruptionBudget
	allowed []int32
}

func newBudget(pdbs []*policyv1.PodDisruptionBudget) *budget {
	b := &budget{pdbs: pdbs, allowed: make([]int32, len(pdbs))}
	for i, p := range pdbs {
		b.allowed[i] = p.Status.DisruptionsAllowed
	}
	return b
}

// covering returns the indices of the PDBs that select p.
func (b *budget) covering(p *v1.Pod) []int {
	var out []int
	for i, pdb := range b.pdbs {
		if pdb.Namespace != p.Namespace || pdb.Spec.Selector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		out = append(out, i)
	}
	return out
}

// take consumes one disruption of every PDB covering p, if each allows one.
func (b *budget) take(p *v1.Pod) bool {
	cover := b.covering(p)
	for _, i := range cover {
		if b.allowed[i] <= 0 {
			return false
		}
	}
	for _, i := range cover {
		b.allowed[i]--
	}
	return true
}

func (b *budget) clone() *budget {
	return &budget{pdbs: b.pdbs, allowed: append([]int32(nil), b.allowed...)}
}

// maxPlansTried bounds the candidate nodes whose moves are simulated to
// the end (the moved pods placed anew).
const maxPlansTried = 20

// PlanForPod finds the fewest pod moves after which target fits a node
// under the policy: for each node, the movable pods there, largest device
// requests first, are taken off (as preemption's dry run does, with the
// PreFilter extensions told) until the profile's Filter plugins pass the
// target there; the nodes needing fewest moves (then fewest devices moved)
// are tried in turn, and a plan holds only if the profile places every
// moved pod again elsewhere in the cluster with the target on its node.
func PlanForPod(ctx context.Context, pol Policy, c Cluster, target *v1.Pod, rules MoveRules) (*DefragPlan, error) {
	logger := klog.FromContext(ctx)
	pod := target.DeepCopy()
	pod.Spec.NodeName = ""
	plan := &DefragPlan{Target: target.Namespace + "/" + target.Name}
	sim, err := newClusterSim(ctx, pol, c, target)
	if err != nil {
		return nil, err
	}
	state := framework.NewCycleState()
	if _, status, _ := sim.fw.RunPreFilterPlugins(ctx, state, pod); !status.IsSuccess() {
		if !status.IsRejected() {
			return nil, fmt.Errorf("PreFilter: %w", status.AsError())
		}
		plan.Reason = fmt.Sprintf("%s rejects the pod before any node is judged: %s; moving pods cannot help", status.Plugin(), status.Message())
		return plan, nil
	}
	prio := corev1helpers.PodPriority(pod)
	b := newBudget(rules.PDBs)
	type candidate struct {
		node    string
		moves   []*v1.Pod
		devices int64
	}
	var candidates []candidate
	for _, ni := range sim.nodes {
		if st := sim.fw.RunFilterPlugins(ctx, state, pod, ni); st.IsSuccess() {
			plan.Fits, plan.Node = true, ni.Node().Name
			return plan, nil
		}
		var movable []*v1.Pod
		for _, pi := range ni.GetPods() {
			if rules.why(pi.GetPod(), prio) == "" {
				movable = append(movable, pi.GetPod())
			}
		}
		sort.SliceStable(movable, func(i, j int) bool {
			di, dj := deviceCount(movable[i]), deviceCount(movable[j])
			if di != dj {
				return di > dj
			}
			return movable[i].Namespace+"/"+movable[i].Name < movable[j].Namespace+"/"+movable[j].Name
		})
		clone := ni.Snapshot()
		cs := state.Clone()
		nb := b.clone()
		var taken []*v1.Pod
		var devices int64
		for _, p := range movable {
			if !nb.take(p) {
				continue
			}
			pi, err := framework.NewPodInfo(p)
			if err != nil {
				return nil, err
			}
			if err := clone.RemovePod(logger, p); err != nil {
				return nil, err
			}
			if st := sim.fw.RunPreFilterExtensionRemovePod(ctx, cs, pod, pi, clone); !st.IsSuccess() {
				return nil, fmt.Errorf("removing %s/%s from %s: %w", p.Namespace, p.Name, ni.Node().Name, st.AsError())
			}
			taken = append(taken, p)
			devices += deviceCount(p)
			if sim.fw.RunFilterPlugins(ctx, cs, pod, clone).IsSuccess() {
				candidates = append(candidates, candidate{node: ni.Node().Name, moves: taken, devices: devices})
				break
			}
		}
	}
	sort.SliceStable(candidates, func(i, j int) bool {
		a, b := candidates[i], candidates[j]
		if len(a.moves) != len(b.moves) {
			return len(a.moves) < len(b.moves)
		}
		if a.devices != b.devices {
			return a.devices < b.devices
		}
		return a.node < b.node
	})
	var failures []string
	for i, cand := range candidates {
		if i == maxPlansTried {
			break
		}
		moves, why, err := replace(ctx, pol, c, pod, cand.node, cand.moves)
		if err != nil {
			return nil, err
		}
		if why != "" {
			failures = append(failures, fmt.Sprintf("%s: %s", cand.node, why))
			continue
		}
		plan.Fits, plan.Node, plan.Moves = true, cand.node, moves
		return plan, nil
	}
	switch {
	case len(failures) > 0:
		plan.Reason = "no plan places every moved pod again: " + strings.Join(failures, "; ")
	default:
		plan.Reason = "no node takes the pod after moving the pods that may move (controller-owned, not above its priority, within their PodDisruptionBudgets)"
	}
	return plan, nil
}

// replace simulates the plan: target on node, the moved pods pending and
// placed again one after another by the profile. It returns the moves, or
// why a moved pod would stay pending.
func replace(ctx context.Context, pol Policy, c Cluster, target *v1.Pod, node string, moved []*v1.Pod) ([]Move, string, error) {
	placed := target.DeepCopy()
	placed.Spec.NodeName = node
	return placeAgain(ctx, pol, c, nil, placed, moved)
}

// placeAgain simulates moving pods: the reserved nodes tainted NoSchedule,
// extra (when not nil) bound where it says instead of its cluster's copy,
// the pods pending and placed again by the profile one after another. It
// returns the moves, or why a pod would fit nowhere.
func placeAgain(ctx context.Context, pol Policy, c Cluster, reserved []string, extra *v1.Pod, pods []*v1.Pod) ([]Move, string, error) {
	isReserved := map[string]bool{}
	for _, n := range reserved {
		isReserved[n] = true
	}
	after := Cluster{Objects: c.Objects}
	for _, n := range c.Nodes {
		if isReserved[n.Name] {
			n = n.DeepCopy()
			n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: "devicefit.io/defrag", Effect: v1.TaintEffectNoSchedule})
		}
		after.Nodes = append(after.Nodes, n)
	}
	skip := map[string]bool{}
	for _, p := range pods {
		skip[p.Namespace+"/"+p.Name] = true
	}
	if extra != nil {
		skip[extra.Namespace+"/"+extra.Name] = true
	}
	for _, p := range c.Pods {
		if !skip[p.Namespace+"/"+p.Name] {
			after.Pods = append(after.Pods, p)
		}
	}
	if extra != nil {
		after.Pods = append(after.Pods, extra)
	}
	sim, err := newClusterSim(ctx, pol, after, nil)
	if err != nil {
		return nil, "", err
	}
	var moves []Move
	for _, p := range pods {
		again := p.DeepCopy()
		again.Spec.NodeName = ""
		to, err := sim.place(ctx, again)
		if err != nil {
			return nil, "", err
		}
		if to == "" {
			return nil, fmt.Sprintf("%s/%s would fit nowhere", p.Namespace, p.Name), nil
		}
		moves = append(moves, Move{Pod: p.Namespace + "/" + p.Name, From: p.Spec.NodeName, To: to, Devices: demandText(p)})
	}
	return moves, "", nil
}

// place schedules pod as one cycle of the profile would (PreFilter, Filter,
// Score, the best total first by name) and assumes it on the chosen node;
// "" when no node fits.
func (s *clusterSim) place(ctx context.Context, pod *v1.Pod) (string, error) {
	state := framework.NewCycleState()
	preRes, status, _ := s.fw.RunPreFilterPlugins(ctx, state, pod)
	if !status.IsSuccess() {
		if !status.IsRejected() {
			return "", status.AsError()
		}
		return "", nil
	}
	var feasible []fwk.NodeInfo
	for _, ni := range s.nodes {
		if !preRes.AllNodes() && !preRes.NodeNames.Has(ni.Node().Name) {
			continue
		}
		if s.fw.RunFilterPlugins(ctx, state, pod, ni).IsSuccess() {
			feasible = append(feasible, ni)
		}
	}
	if len(feasible) == 0 {
		return "", nil
	}
	chosen := feasible[0].Node().Name
	if len(feasible) > 1 && s.fw.HasScorePlugins() {
		if st := s.fw.RunPreScorePlugins(ctx, state, pod, feasible); !st.IsSuccess() {
			return "", st.AsError()
		}
		scores, st := s.fw.RunScorePlugins(ctx, state, pod, feasible)
		if !st.IsSuccess() {
			return "", st.AsError()
		}
		var best int64
		chosen = ""
		for _, sc := range scores {
			if chosen == "" || sc.TotalScore > best || sc.TotalScore == best && sc.Name < chosen {
				chosen, best = sc.Name, sc.TotalScore
			}
		}
	}
	pod.Spec.NodeName = chosen
	pi, err := framework.NewPodInfo(pod)
	if err != nil {
		return "", err
	}
	if err := s.snap.AssumePod(pi); err != nil {
		return "", err
	}
	return chosen, nil
}

// deviceCount is the number of extended-resource devices the pod requests.
func deviceCount(p *v1.Pod) int64 {
	var n int64
	for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
		if strings.Contains(string(name), "/") {
			n += q.Value()
		}
	}
	return n
}

func demandText(p *v1.Pod) []string {
	var out []string
	for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
		if strings.Contains(string(name), "/") && !q.IsZero() {
			out = append(out, fmt.Sprintf("%d %s", q.Value(), name))
		}
	}
	sort.Strings(out)
	return out
}

// FreeNodesPlan is the fewest moves that leave Want device nodes whole-free
// (none of their devices of the resource allocated).
type FreeNodesPlan struct {
	Want int `json:"want"`
	// Done: the moves leave Want nodes whole-free (Free lists them, those
	// free already first). When false, Reason says why.
	Done   bool     `json:"done"`
	Free   []string `json:"free"`
	Moves  []Move   `json:"moves"`
	Reason string   `json:"reason,omitempty"`
}

// WholeFreeNodes are the nodes advertising resource (and, when product is
// set, whose devices of it are that product) with none of it allocated,
// sorted: what PlanFreeNodes counts as free already.
func WholeFreeNodes(c Cluster, resource v1.ResourceName, product string) ([]string, error) {
	free, _, err := wholeFreeNodes(c, resource, product)
	return free, err
}

// wholeFreeNodes returns the whole-free nodes, sorted, and for every other
// node advertising the resource (of the product) the pods holding it.
func wholeFreeNodes(c Cluster, resource v1.ResourceName, product string) ([]string, map[string][]*v1.Pod, error) {
	var pattern *devices.ProductPattern
	if product != "" {
		p, err := devices.ParseProductPattern(product)
		if err != nil {
			return nil, nil, fmt.Errorf("--product %q: %w", product, err)
		}
		pattern = &p
	}
	holding := map[string][]*v1.Pod{}
	for _, p := range c.Pods {
		if p.Spec.NodeName == "" || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			continue
		}
		if q := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})[resource]; !q.IsZero() {
			holding[p.Spec.NodeName] = append(holding[p.Spec.NodeName], p)
		}
	}
	labels := devices.NewDeviceLabels(resource)
	var free []string
	holders := map[string][]*v1.Pod{}
	for _, n := range c.Nodes {
		if q := n.Status.Allocatable[resource]; q.IsZero() {
			continue
		}
		if pattern != nil && !pattern.Matches(labels.Describe(n.Labels).Product) {
			continue
		}
		if len(holding[n.Name]) == 0 {
			free = append(free, n.Name)
			continue
		}
		holders[n.Name] = holding[n.Name]
	}
	sort.Strings(free)
	return free, holders, nil
}

// PlanFreeNodes finds moves that leave want nodes advertising resource (and,
// when product is set, whose devices of it are that product) with none of
// it allocated. Nodes free already count first; then nodes whose pods
// holding the resource may all move (MoveRules, any priority: there is no
// pod to compare with) are taken, fewest such pods first, each only if the
// profile places all pods moved so far again on nodes not being emptied.
func PlanFreeNodes(ctx context.Context, pol Policy, c Cluster, want int, resource v1.ResourceName, product string, rules MoveRules) (*FreeNodesPlan, error) {
	plan := &FreeNodesPlan{Want: want}
	free, holders, err := wholeFreeNodes(c, resource, product)
	if err != nil {
		return nil, err
	}
	plan.Free = free
	type candidate struct {
		node string
		pods []*v1.Pod
	}
	var candidates []candidate
	for _, n := range c.Nodes {
		pods, ok := holders[n.Name]
		if !ok || len(pods) == 0 {
			continue
		}
		movable := true
		for _, p := range pods {
			if rules.why(p, math.MaxInt32) != "" {
				movable = false
				break
			}
		}
		if movable {
			candidates = append(candidates, candidate{node: n.Name, pods: pods})
		}
	}
	if len(plan.Free) >= want {
		plan.Free, plan.Done = plan.Free[:want], true
		return plan, nil
	}
	sort.SliceStable(candidates, func(i, j int) bool {
		if len(candidates[i].pods) != len(candidates[j].pods) {
			return len(candidates[i].pods) < len(candidates[j].pods)
		}
		return candidates[i].node < candidates[j].node
	})
	b := newBudget(rules.PDBs)
	var emptied []string
	var moved []*v1.Pod
	for i, cand := range candidates {
		if len(plan.Free)+len(emptied) == want || i == maxPlansTried {
			break
		}
		nb := b.clone()
		ok := true
		for _, p := range cand.pods {
			if !nb.take(p) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		moves, why, err := placeAgain(ctx, pol, c, append(emptied, cand.node), nil, append(moved, cand.pods...))
		if err != nil {
			return nil, err
		}
		if why != "" {
			continue
		}
		b, emptied, moved, plan.Moves = nb, append(emptied, cand.node), append(moved, cand.pods...), moves
	}
	plan.Free = append(plan.Free, emptied...)
	if len(plan.Free) < want {
		plan.Reason = fmt.Sprintf("only %d node(s) can be left whole-free: the others hold pods that may not move, or whose pods would fit nowhere else", len(plan.Free))
		plan.Moves = nil
		return plan, nil
	}
	plan.Done = true
	return plan, nil
}
