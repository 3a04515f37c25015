package replay

import (
	"context"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/devicefit/devicefit/pkg/apis/config"
	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/plugins/devicefit"
)

// Cluster is a snapshot of a live cluster, as listed from its API server.
type Cluster struct {
	Nodes []*v1.Node
	// Pods are all pods; those bound and not terminated hold their nodes'
	// resources.
	Pods []*v1.Pod
	// Objects are what plugins read through informers besides nodes and
	// pods: namespaces, DRA objects (ResourceSlices, DeviceClasses,
	// ResourceClaims), volumes, CSINodes, ...
	Objects []runtime.Object
}

// NodeVerdict is what the profile's Filter plugins say of one node, and,
// for a feasible node, its scores.
type NodeVerdict struct {
	Node     string `json:"node"`
	Feasible bool   `json:"feasible"`
	// Plugin is the Filter plugin that rejected the node.
	Plugin  string   `json:"plugin,omitempty"`
	Reasons []string `json:"reasons,omitempty"`
	// Listed: the node is in the PreFilter plugins' node list (all nodes
	// when they named none).
	Listed bool `json:"listed"`
	// Scores are the weighted, normalised scores per plugin; Total their
	// sum (feasible nodes only).
	Scores []PluginScore `json:"scores,omitempty"`
	Total  int64         `json:"total,omitempty"`
}

// PluginScore is one plugin's weighted score of a node.
type PluginScore struct {
	Plugin string `json:"plugin"`
	Score  int64  `json:"score"`
}

// Explanation is one scheduling cycle of a pod under a profile, with every
// node judged.
type Explanation struct {
	Pod     string `json:"pod"`
	Profile string `json:"profile"`
	// Demand and Selector are the pod's device requests and devicefit.io
	// selector as DeviceFit parses them; DemandError or SelectorError when
	// they do not parse.
	Demand        []string `json:"demand"`
	DemandError   string   `json:"demandError,omitempty"`
	Selector      []string `json:"selector,omitempty"`
	SelectorError string   `json:"selectorError,omitempty"`
	// PreFilterPlugin and PreFilterReason are set when a PreFilter plugin
	// rejects the pod: then no node is judged.
	PreFilterPlugin string        `json:"preFilterPlugin,omitempty"`
	PreFilterReason string        `json:"preFilterReason,omitempty"`
	Nodes           []NodeVerdict `json:"nodes,omitempty"`
	// Chosen is the feasible node with the highest total score ("" when
	// none is feasible).
	Chosen string `json:"chosen,omitempty"`
	// Message is what the scheduler writes into the pod's PodScheduled
	// condition for this cycle, up to the part preemption adds; "" when
	// the pod fits.
	Message string `json:"message,omitempty"`
}

// clusterSim is the framework of a policy over a snapshot of a cluster.
type clusterSim struct {
	fw   framework.Framework
	snap *internalcache.Snapshot
	// nodes are the snapshot's, by name.
	nodes []fwk.NodeInfo
}

// newClusterSim builds the policy's framework over the cluster's nodes and
// the pods bound there and not terminated, but for except (a pod to place
// anew; nil for none). The fake API client holds the cluster's objects for
// the plugins' informers.
func newClusterSim(ctx context.Context, pol Policy, c Cluster, except *v1.Pod) (*clusterSim, error) {
	initMetrics()
	registry, err := Registry()
	if err != nil {
		return nil, err
	}
	var bound []*v1.Pod
	for _, p := range c.Pods {
		if p.Spec.NodeName == "" || except != nil && p.Namespace == except.Namespace && p.Name == except.Name ||
			p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			continue
		}
		bound = append(bound, p)
	}
	snap := internalcache.NewSnapshot(bound, c.Nodes)
	objects := append([]runtime.Object(nil), c.Objects...)
	for _, n := range c.Nodes {
		objects = append(objects, n)
	}
	for _, p := range bound {
		objects = append(objects, p)
	}
	fw, _, err := newFramework(ctx, pol, registry, fake.NewClientset(objects...), snap, 1, nil)
	if err != nil {
		return nil, err
	}
	nodes, err := snap.NodeInfos().List()
	if err != nil {
		return nil, err
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Node().Name < nodes[j].Node().Name })
	return &clusterSim{fw: fw, snap: snap, nodes: nodes}, nil
}

// Explain runs one scheduling cycle of pod under the policy over a snapshot
// of the cluster, as kube-scheduler does (PreFilter, Filter, PreScore,
// Score), but judges every node with the Filter plugins, also those the
// PreFilter plugins' node list leaves out, and scores every feasible node
// (the scheduler may sample percentageOfNodesToScore of them). A bound pod
// is explained as if it were pending: it is taken off its node.
func Explain(ctx context.Context, pol Policy, c Cluster, pod *v1.Pod) (*Explanation, error) {
	target := pod.DeepCopy()
	target.Spec.NodeName = ""
	sim, err := newClusterSim(ctx, pol, c, pod)
	if err != nil {
		return nil, err
	}
	fw, nodes := sim.fw, sim.nodes
	e := &Explanation{Pod: pod.Namespace + "/" + pod.Name, Profile: pol.Profile.SchedulerName}
	e.describeDemand(target, deviceResources(pol))
	state := framework.NewCycleState()
	preRes, status, narrowedBy := fw.RunPreFilterPlugins(ctx, state, target)
	if !status.IsSuccess() {
		if !status.IsRejected() {
			return nil, fmt.Errorf("PreFilter: %w", status.AsError())
		}
		e.PreFilterPlugin, e.PreFilterReason = status.Plugin(), status.Message()
		e.Message = fmt.Sprintf("0/%d nodes are available: %s.", len(nodes), status.Message())
		return e, nil
	}
	statuses := framework.NewDefaultNodeToStatus()
	var feasible []fwk.NodeInfo
	admit := devicefit.PodRules(klog.FromContext(ctx), target)
	for _, ni := range nodes {
		st := fw.RunFilterPlugins(ctx, state, target, ni)
		v := NodeVerdict{Node: ni.Node().Name, Feasible: st.IsSuccess(), Listed: preRes.AllNodes() || preRes.NodeNames.Has(ni.Node().Name)}
		switch {
		case st.IsSuccess():
			if v.Listed {
				feasible = append(feasible, ni)
			}
		case st.IsRejected():
			v.Plugin, v.Reasons = st.Plugin(), st.Reasons()
		default:
			return nil, fmt.Errorf("Filter on %s: %w", v.Node, st.AsError())
		}
		// The scheduler filters the listed nodes; DeviceFit's PostFilter
		// gives the others that the pod's own rules admit their verdict
		// (pkg/plugins/devicefit, PostFilter). The rest keep the
		// framework's "didn't satisfy plugin(s)".
		if !v.Feasible && (v.Listed || admit(ni.Node())) {
			statuses.Set(v.Node, st)
		}
		e.Nodes = append(e.Nodes, v)
	}
	if len(feasible) == 0 {
		if !preRes.AllNodes() {
			statuses.SetAbsentNodesStatus(devicefit.OwnAbsentStatus(state, fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
				fmt.Sprintf("node(s) didn't satisfy plugin(s) %v", sets.List(narrowedBy)))))
		}
		fitErr := &framework.FitError{Pod: target, NumAllNodes: len(nodes), Diagnosis: framework.Diagnosis{NodeToStatus: statuses}}
		e.Message = fitErr.Error()
		return e, nil
	}
	if err := e.score(ctx, fw, state, target, feasible); err != nil {
		return nil, err
	}
	return e, nil
}

// score runs PreScore and Score on the feasible nodes and picks the
// highest total, the first by name among equals.
func (e *Explanation) score(ctx context.Context, fw framework.Framework, state fwk.CycleState, pod *v1.Pod, feasible []fwk.NodeInfo) error {
	if !fw.HasScorePlugins() || len(feasible) == 1 {
		e.Chosen = feasible[0].Node().Name
		return nil
	}
	if st := fw.RunPreScorePlugins(ctx, state, pod, feasible); !st.IsSuccess() {
		return fmt.Errorf("PreScore: %w", st.AsError())
	}
	scores, st := fw.RunScorePlugins(ctx, state, pod, feasible)
	if !st.IsSuccess() {
		return fmt.Errorf("Score: %w", st.AsError())
	}
	byName := map[string]*NodeVerdict{}
	for i := range e.Nodes {
		byName[e.Nodes[i].Node] = &e.Nodes[i]
	}
	var best int64
	for _, s := range scores {
		v := byName[s.Name]
		v.Total = s.TotalScore
		for _, ps := range s.Scores {
			v.Scores = append(v.Scores, PluginScore{Plugin: ps.Name, Score: ps.Score})
		}
		if e.Chosen == "" || s.TotalScore > best || s.TotalScore == best && s.Name < e.Chosen {
			e.Chosen, best = s.Name, s.TotalScore
		}
	}
	return nil
}

// deviceResources are the device resource patterns of the profile's
// DeviceFit args, or DeviceFit's defaults.
func deviceResources(pol Policy) []string {
	for _, pc := range pol.Profile.PluginConfig {
		if args, ok := pc.Args.(*config.DeviceFitArgs); ok && pc.Name == devicefit.Name && len(args.DeviceResources) > 0 {
			return args.DeviceResources
		}
	}
	return devices.DefaultResourcePatterns()
}

// describeDemand records the pod's device requests and selector as
// DeviceFit reads them.
func (e *Explanation) describeDemand(pod *v1.Pod, patterns []string) {
	set, err := devices.NewResourceSet(patterns)
	if err != nil {
		e.DemandError = err.Error()
		return
	}
	demand, err := devices.PodDemand(pod, set)
	if err != nil {
		e.DemandError = err.Error()
	}
	for _, r := range demand {
		e.Demand = append(e.Demand, fmt.Sprintf("%d %s", r.Count, r.Name))
	}
	sel, err := devices.ParseSelector(pod.Annotations)
	if err != nil {
		e.SelectorError = err.Error()
		return
	}
	e.Selector = describeSelector(sel, pod.Annotations)
}

// describeSelector says what the pod's devicefit.io annotations select.
// Product patterns are echoed as the user wrote them, with the normalised
// form they are compared in when it differs (GFD's product label drops
// the vendor prefix: NVIDIA-H100-80GB-HBM3 is compared as H100-80GB-HBM3).
func describeSelector(s devices.Selector, annotations map[string]string) []string {
	var out []string
	patterns := func(key string, ps []devices.ProductPattern) string {
		names := make([]string, len(ps))
		for i, p := range ps {
			names[i] = p.String()
		}
		compared := strings.Join(names, ", ")
		written := strings.TrimSpace(annotations[key])
		if written == "" || written == compared {
			return compared
		}
		return written + " (compared as " + compared + ")"
	}
	if len(s.Products) > 0 {
		out = append(out, "products: "+patterns(devices.AnnotationProducts, s.Products))
	}
	if len(s.ExcludeProducts) > 0 {
		out = append(out, "excluded products: "+patterns(devices.AnnotationExcludeProducts, s.ExcludeProducts))
	}
	if s.MinMemoryMiB > 0 {
		out = append(out, fmt.Sprintf("device memory at least %d MiB", s.MinMemoryMiB))
	}
	if len(s.Families) > 0 {
		out = append(out, "families: "+strings.Join(s.Families, ", "))
	}
	if s.MinCompute != nil {
		out = append(out, fmt.Sprintf("compute capability at least %d.%d", s.MinCompute.Major, s.MinCompute.Minor))
	}
	if s.Sharing != "" && s.Sharing != devices.SharingAny {
		out = append(out, "sharing: "+string(s.Sharing))
	}
	return out
}
