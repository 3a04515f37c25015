package devicepack

import (
	"context"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/helper"

	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/plugins/shared"
	"github.com/devicefit/devicefit/pkg/plugins/snapshot"
	"github.com/devicefit/devicefit/pkg/plugins/upstream"
)

// The shortlist: with every node scored (percentageOfNodesToScore 100, as
// FGD scores them), filtering and scoring thousands of nodes per pod made
// devicefit a third slower than the default profile, which filters a tenth
// of them (docs/performance.md). Yet when nothing but DevicePack tells the
// nodes apart, the framework's choice is DevicePack's best node: the other
// plugins give every node the same score. So PreFilter finds the nodes the
// pod fits, exactly as the profile's Filter plugins would, scores them, and
// names in its PreFilterResult only those that can still win: the best and
// its ties, and, when ImageLocality may add up to its weight on some node,
// those within that much of the best. The framework filters and scores a
// handful of nodes and picks the same node it would have picked among all.
//
// The list is exact or absent. PreFilter gives no list, and the cycle runs
// as before, whenever it cannot reproduce the framework's verdicts and
// scores: a profile with Filter or Score plugins it does not know, or in a
// different order; pods with claims (DynamicResources allocates in
// Filter) or DRA-served extended resources it cannot count exactly
// (shortlistdra.go), host ports, volumes other than
// those no plugin filters on, inter-pod (anti-)affinity, topology spread
// (their own, or the system default for pods of services and controllers),
// preferred node affinity, a nominated node; clusters with pods whose
// (anti-)affinity terms select this pod; pods that need node features
// (NodeDeclaredFeatures); untolerated PreferNoSchedule
// taints on a feasible node; a nominated pod on a listed node; and when no
// node fits (every plugin then says why on every node). Its assumptions
// are the default arguments of NodeResourcesFit (no ignoredResources) and
// NodeAffinity (no addedAffinity), which a plugin cannot read of another.
// A list whose nodes all fail the filters anyway heals in one more cycle
// (heal.go).

// shortlistPlugins: the Filter and Score plugins whose verdicts and scores
// the shortlist reproduces, and the conditions it checks for each (above).
var (
	shortlistFilters = sets.New(
		"NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts",
		"NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding",
		"VolumeZone", "PodTopologySpread", "InterPodAffinity", "DynamicResources",
		"DeferredPodScheduling", "NodeDeclaredFeatures", "DeviceFit",
	)
	shortlistScores = sets.New(
		"TaintToleration", "NodeAffinity", "PodTopologySpread", "InterPodAffinity",
		"ImageLocality", "VolumeBinding", "DynamicResources", Name,
	)
)

// profileShortlist is what the profile allows, found once (the plugin
// lists are fixed when the framework is built).
type profileShortlist struct {
	ok bool
	// why: the reason it is not ok, logged once.
	why string
	// weight is DevicePack's Score weight; imageWeight ImageLocality's (0:
	// not scoring).
	weight, imageWeight int64
	// draWhy, when not empty, is why the profile lets the shortlist judge
	// no DRA-served request (shortlistdra.go).
	draWhy string
}

// profileNames are the plugins of the profile at the extension points the
// shortlist reproduces, in order, with the Score plugins' weights.
type profileNames struct {
	preFilter, filter, postFilter []string
	score                         map[string]int64
}

// profilePlugins lists the profile's plugins (upstream.Plugins); nil when
// the handle cannot list them.
func profilePlugins(h fwk.Handle) *profileNames {
	list := upstream.Plugins(h)
	if list == nil {
		return nil
	}
	n := &profileNames{score: map[string]int64{}}
	for _, p := range list.PreFilter.Enabled {
		n.preFilter = append(n.preFilter, p.Name)
	}
	for _, p := range list.Filter.Enabled {
		n.filter = append(n.filter, p.Name)
	}
	for _, p := range list.PostFilter.Enabled {
		n.postFilter = append(n.postFilter, p.Name)
	}
	for _, p := range list.Score.Enabled {
		n.score[p.Name] = int64(p.Weight)
	}
	return n
}

// readProfile reads the profile's plugins from the handle.
func (pl *DevicePack) readProfile() profileShortlist {
	names := profilePlugins(pl.handle)
	if names == nil {
		return profileShortlist{why: "the framework does not list its plugins"}
	}
	p := profileShortlist{ok: true}
	for _, f := range names.filter {
		if !shortlistFilters.Has(f) {
			return profileShortlist{why: "Filter plugin " + f + " is not one the shortlist reproduces"}
		}
	}
	for s, w := range names.score {
		if !shortlistScores.Has(s) {
			return profileShortlist{why: "Score plugin " + s + " is not one the shortlist reproduces"}
		}
		switch s {
		case Name:
			p.weight = w
		case "ImageLocality":
			p.imageWeight = w
		}
	}
	if p.weight <= 0 {
		return profileShortlist{why: "DevicePack does not score"}
	}
	// PreFilter reads NodeResourcesFit's and DeviceFit's states: both must
	// run before DevicePack's.
	seen := map[string]bool{}
	for _, n := range names.preFilter {
		if n == Name {
			break
		}
		seen[n] = true
	}
	if !seen["NodeResourcesFit"] {
		return profileShortlist{why: "NodeResourcesFit's PreFilter does not run before DevicePack's"}
	}
	if slices.Contains(names.filter, "DeviceFit") && !seen["DeviceFit"] {
		return profileShortlist{why: "DeviceFit's PreFilter does not run before DevicePack's"}
	}
	if slices.Contains(names.preFilter, "NodeDeclaredFeatures") && !seen["NodeDeclaredFeatures"] {
		// Its state says whether the pod needs node features.
		return profileShortlist{why: "NodeDeclaredFeatures' PreFilter does not run before DevicePack's"}
	}
	if why := postFilterOrder(names.postFilter); why != "" {
		return profileShortlist{why: why}
	}
	p.draWhy = draOrder(names)
	return p
}

// postFilterOrder says why the profile's PostFilter plugins keep a
// shortlist miss from healing (heal.go), "" when they do not: DevicePack's
// PostFilter must run, and before any other but DeviceFit's (which only
// explains), or DefaultPreemption searches the listed nodes alone first.
// multiPoint appends DevicePack after DefaultPreemption; naming it under
// postFilter too puts it first (manifests/scheduler-config.yaml).
func postFilterOrder(postFilter []string) string {
	for _, n := range postFilter {
		switch n {
		case Name:
			return ""
		case "DeviceFit":
		default:
			return "PostFilter plugin " + n + " runs before DevicePack's, which must heal a shortlist miss first: enable DevicePack under postFilter as well as multiPoint"
		}
	}
	return "DevicePack's PostFilter does not run: it heals a shortlist miss"
}

// draOrder says why the profile lets the shortlist judge no DRA-served
// request, "" when it does: DynamicResources, which allocates the devices,
// and DeviceFit, whose PreFilter gathers the DRA view, must both filter.
// Their order does not matter (shortlistdra.go).
func draOrder(names *profileNames) string {
	if !slices.Contains(names.filter, "DynamicResources") || !slices.Contains(names.filter, "DeviceFit") {
		return "DynamicResources or DeviceFit does not filter"
	}
	if !slices.Contains(names.preFilter, "DeviceFit") {
		return "DeviceFit has no PreFilter"
	}
	return ""
}

// shortlist returns the PreFilterResult naming the nodes that can win, and
// writes the shortlistState, with the pod's preScoreState computed over
// every feasible node, for PreScore, Score and NormalizeScore to use; nil
// (and no state) when the cycle must run on every node.
func (pl *DevicePack) shortlist(ctx context.Context, cycleState fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) *fwk.PreFilterResult {
	fit, ok := pl.shortlistFit(ctx, cycleState, pod, nodes)
	if !ok {
		return nil
	}
	logger := klog.FromContext(ctx)
	rj := pl.newRowJudge(logger, cycleState, pod, nodes, fit)
	if res, done := pl.shortlistKept(ctx, cycleState, pod, rj); done {
		return res
	}
	f, ok := pl.feasibleRows(rj)
	if !ok || len(f.nodes) == 0 {
		// No node fits, every plugin then says why on every node; or
		// TaintToleration's Score tells nodes apart.
		return nil
	}
	known := pl.knownScratch[:0]
	for _, r := range f.rows {
		known = append(known, r.Devices)
	}
	pl.knownScratch = known[:0]
	s, status := pl.prepare(ctx, cycleState, pod, f.nodes, func(s *preScoreState) bool { return pl.noteCandidates(s, known) })
	if !status.IsSuccess() {
		// Nothing to pack for: the other plugins choose.
		return nil
	}
	raw := pl.scoreShapes(s, f.rows, f.shapes, pl.rawScratch[:0])
	pl.rawScratch = raw[:0]
	sl := &shortlistState{state: s, lo: raw[0], hi: raw[0]}
	for _, v := range raw[1:] {
		sl.lo, sl.hi = min(sl.lo, v), max(sl.hi, v)
	}
	for i, ni := range f.nodes {
		// The name only of the best: reading it is a cache miss per node.
		if raw[i] != sl.hi {
			continue
		}
		if name := ni.Node().Name; sl.first == "" || name < sl.first {
			sl.first = name
		}
	}
	names, ok := pl.winners(sl, f, raw)
	if !ok || names.Len()*10 > len(nodes)*9 {
		// A pod nominated to a winner (Filter would count it), or nearly
		// every node listed (the list saves nothing).
		return nil
	}
	sl.listed = names.Len()
	logger.V(5).Info("Shortlist", "pod", klog.KObj(pod), "listed", sl.listed, "feasible", len(f.nodes))
	cycleState.Write(shortlistStateKey, sl)
	return &fwk.PreFilterResult{NodeNames: names}
}

// shortlistFit returns NodeResourcesFit's Filter for the pod, false when
// the cycle names no shortlist: the profile, the pod or the cluster is one
// whose verdicts and scores it does not reproduce (above), or the pod's
// last shortlist missed.
func (pl *DevicePack) shortlistFit(ctx context.Context, cycleState fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (fitCheck, bool) {
	if !pl.shortlistOn || pl.handle == nil || len(nodes) < 2 || cycleState.IsPodGroupSchedulingCycle() {
		return fitCheck{}, false
	}
	logger := klog.FromContext(ctx)
	pl.profileOnce.Do(func() {
		pl.profile = pl.readProfile()
		if !pl.profile.ok {
			logger.Info("DevicePack names no shortlist in this profile: every feasible node is filtered and scored", "reason", pl.profile.why)
		}
	})
	if pl.retries.take(pod.UID) {
		logger.V(4).Info("Retrying the pod on every node: its last shortlist missed", "pod", klog.KObj(pod))
		return fitCheck{}, false
	}
	if !pl.profile.ok || pl.shortlistBroken.Load() || !pl.podShortlistable(pod) || upstream.NeedsNodeFeatures(cycleState) {
		return fitCheck{}, false
	}
	req, ok := upstream.FitRequest(cycleState)
	if !ok || pl.affinitySelects(pod) {
		return fitCheck{}, false
	}
	draFit, ok := pl.draShortlist(ctx, cycleState, pod, req)
	if !ok {
		return fitCheck{}, false
	}
	return newFitCheck(req, draFit, pl.resources), true
}

// feasible are the nodes the pod fits, as the profile's Filter plugins
// would find them, with their rows in the node table: scratch slices,
// valid within the cycle's PreFilter. imagesSeen: one of them holds one of
// the pod's images (ImageLocality may score it).
type feasible struct {
	nodes      []fwk.NodeInfo
	rows       []*snapshot.Row
	shapes     int
	imagesSeen bool
}

// feasibleRows walks the node table for the nodes the pod fits; false when
// one of them has a PreferNoSchedule taint the pod does not tolerate
// (TaintToleration's Score would tell it apart).
func (pl *DevicePack) feasibleRows(rj *rowJudge) (feasible, bool) {
	f := feasible{nodes: pl.feasibleScratch[:0], rows: pl.rowScratch[:0], shapes: rj.cycle.Shapes}
	defer func() { pl.feasibleScratch, pl.rowScratch = f.nodes[:0], f.rows[:0] }()
	for j, ni := range rj.nodes {
		v := rj.judge(j)
		if !v.feasible {
			continue
		}
		if v.avoided {
			return feasible{}, false
		}
		f.imagesSeen = f.imagesSeen || v.images
		f.nodes = append(f.nodes, ni)
		f.rows = append(f.rows, &rj.cycle.Rows[j])
	}
	return f, true
}

// rowJudge judges the cycle's rows (nodes) for one pod: whether the profile's
// Filter plugins pass the node (feasible), whether TaintToleration's Score
// would tell it apart (avoided), and whether ImageLocality, scoring, would
// find one of the pod's images there.
type rowJudge struct {
	nodes   []fwk.NodeInfo
	cycle   *snapshot.Cycle
	verdict *shared.Verdict
	rules   shared.NodeRules
	fit     fitCheck
	images  []string
	// listed is DeviceFit's list, aligned with nodes (nil: all).
	listed []bool
}

func (pl *DevicePack) newRowJudge(logger klog.Logger, cycleState fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo, fit fitCheck) *rowJudge {
	rj := &rowJudge{
		nodes:   nodes,
		verdict: shared.ReadVerdict(cycleState),
		rules:   shared.NewNodeRules(logger, pod, pl.taintComparisonOperators),
		fit:     fit,
		images:  pl.podImagesIfScored(pod),
		cycle:   pl.table.RefreshFor(cycleState, pod, nodes),
	}
	if rj.verdict != nil && len(rj.verdict.Listed) == len(nodes) {
		rj.listed = rj.verdict.Listed
	}
	return rj
}

// judge is the verdict on row j.
func (rj *rowJudge) judge(j int) rowVerdict {
	r := &rj.cycle.Rows[j]
	if rj.listed != nil && !rj.listed[j] {
		// Outside DeviceFit's candidate list: never filtered.
		return rowVerdict{}
	}
	if r.Devices == nil || !rj.fit.fits(r) {
		return rowVerdict{}
	}
	admit, avoided := rj.cycle.Judge(&rj.rules, j)
	ni := rj.nodes[j]
	if !admit || rj.verdict != nil && !rj.verdict.Admits(ni, verdictEntry(rj.verdict, rj.cycle, j)) {
		return rowVerdict{}
	}
	return rowVerdict{feasible: true, avoided: avoided, images: len(rj.images) > 0 && r.Images && hasImage(ni, rj.images)}
}

// winners are the feasible nodes that can still win, of raw scores raw
// (aligned with f.nodes); false when Filter would count a pod nominated
// on one of them. A node can win when DevicePack's weighted shortfall
// from the best is at most what ImageLocality can add (up to MaxNodeScore
// times its weight, on a node holding the pod's images): every other
// plugin scores all of them alike.
func (pl *DevicePack) winners(sl *shortlistState, f feasible, raw []int64) (sets.Set[string], bool) {
	if !f.imagesSeen {
		// No slack: only MaxNodeScore wins, the first name's alone.
		if len(pl.handle.NominatedPodsForNode(sl.first)) > 0 {
			return nil, false
		}
		return sets.New(sl.first), true
	}
	slack := pl.profile.imageWeight * fwk.MaxNodeScore
	names := sets.New[string]()
	for i, ni := range f.nodes {
		// normalized without the name is an upper bound of it: most nodes
		// fail without their name being read.
		if pl.profile.weight*(fwk.MaxNodeScore-normalized(raw[i], sl.lo, sl.hi)) > slack {
			continue
		}
		name := ni.Node().Name
		if pl.profile.weight*(fwk.MaxNodeScore-sl.normalized(raw[i], name)) > slack {
			continue
		}
		if len(pl.handle.NominatedPodsForNode(name)) > 0 {
			return nil, false
		}
		names.Insert(name)
	}
	return names, true
}

// verdictEntry is the node j's entry for DeviceFit's verdict: the row's,
// when DeviceFit reads the same node table, else nil (it looks it up).
func verdictEntry(v *shared.Verdict, c *snapshot.Cycle, j int) *devices.NodeDevices {
	if e := c.Rows[j].Devices; e != nil && v.Cache == c.Cache() {
		return e
	}
	return nil
}

const shortlistStateKey fwk.StateKey = "PreFilter" + Name

// shortlistState is what PreFilter's shortlist leaves for the cycle: the
// pod's preScoreState, prepared over every feasible node, which PreScore
// writes for Score; the number of nodes named; and the lowest and highest
// raw scores over every feasible node, which NormalizeScore scales by
// instead of the listed nodes' (normalized).
type shortlistState struct {
	state  *preScoreState
	listed int
	lo, hi int64
	// first is the lowest-named feasible node with the best raw score
	// (firstByName).
	first string
}

// Clone implements fwk.StateData; the state is never modified.
func (s *shortlistState) Clone() fwk.StateData { return s }

// readShortlist returns the state PreFilter wrote with a shortlist, nil
// when it named none.
func readShortlist(cycleState fwk.CycleState) *shortlistState {
	s := shared.ReadAs[*shortlistState](cycleState, shortlistStateKey)
	if s == nil || s.listed == 0 {
		return nil
	}
	return s
}

// podShortlistable reports whether the pod is one whose verdicts and scores
// the shortlist reproduces (the pod's conditions above).
func (pl *DevicePack) podShortlistable(pod *v1.Pod) bool {
	spec := &pod.Spec
	if spec.NodeName != "" || pod.Status.NominatedNodeName != "" || len(spec.ResourceClaims) > 0 ||
		len(spec.TopologySpreadConstraints) > 0 {
		return false
	}
	if a := spec.Affinity; a != nil {
		if a.PodAffinity != nil || a.PodAntiAffinity != nil ||
			a.NodeAffinity != nil && len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
			return false
		}
	}
	for i := range spec.Volumes {
		if !unfilteredVolume(&spec.Volumes[i]) {
			return false
		}
	}
	if hostPorts(spec.InitContainers) || hostPorts(spec.Containers) {
		return false
	}
	// PodTopologySpread's system default constraints apply to the pods a
	// service, replication controller, replica set or stateful set selects.
	if pl.spreadListers != nil && !pl.spreadListers.selector(pod).Empty() {
		return false
	}
	return true
}

// unfilteredVolume: no upstream Filter plugin looks at volumes of these
// kinds (VolumeRestrictions, NodeVolumeLimits, VolumeBinding and VolumeZone
// judge persistent, ephemeral, CSI and in-tree disk volumes).
func unfilteredVolume(v *v1.Volume) bool {
	s := &v.VolumeSource
	return s.ConfigMap != nil || s.Secret != nil || s.Projected != nil || s.EmptyDir != nil ||
		s.DownwardAPI != nil || s.HostPath != nil
}

func hostPorts(containers []v1.Container) bool {
	for i := range containers {
		for _, p := range containers[i].Ports {
			if p.HostPort > 0 {
				return true
			}
		}
	}
	return false
}

// affinitySelects reports whether a pod already placed has an inter-pod
// (anti-)affinity term that may select this pod: InterPodAffinity's Filter
// (required anti-affinity) and Score (the others) then tell nodes apart.
// A term with a namespace selector is taken to select every namespace.
func (pl *DevicePack) affinitySelects(pod *v1.Pod) bool {
	withAffinity, err := pl.handle.SnapshotSharedLister().NodeInfos().HavePodsWithAffinityList()
	if err != nil {
		return true
	}
	for _, ni := range withAffinity {
		for _, p := range ni.GetPodsWithAffinity() {
			if selectsAny(pod, p.GetRequiredAffinityTerms()) || selectsAny(pod, p.GetRequiredAntiAffinityTerms()) ||
				selectsAnyWeighted(pod, p.GetPreferredAffinityTerms()) || selectsAnyWeighted(pod, p.GetPreferredAntiAffinityTerms()) {
				return true
			}
		}
	}
	return false
}

func selectsAny(pod *v1.Pod, terms []fwk.AffinityTerm) bool {
	for i := range terms {
		if selects(pod, &terms[i]) {
			return true
		}
	}
	return false
}

func selectsAnyWeighted(pod *v1.Pod, terms []fwk.WeightedAffinityTerm) bool {
	for i := range terms {
		if selects(pod, &terms[i].AffinityTerm) {
			return true
		}
	}
	return false
}

func selects(pod *v1.Pod, t *fwk.AffinityTerm) bool {
	inNamespace := t.Namespaces.Has(pod.Namespace) || t.NamespaceSelector != labels.Nothing()
	return inNamespace && t.Selector.Matches(labels.Set(pod.Labels))
}

// fitCheck is NodeResourcesFit's Filter for a pod not yet on any node: the
// pod count, then each resource the pod requests against the node's
// allocatable minus requested. The scalar requests are listed once per
// cycle, not iterated from the map on every node. A DRA-served resource is
// judged as DynamicResources' Filter would on the nodes that do not
// advertise it (dra, shortlistdra.go).
type fitCheck struct {
	cpu, mem, storage int64
	scalars           []scalarRequest
	dra               *draFit
}

// scalarRequest is one scalar resource the pod requests; device: one of
// the device resources the node table reads.
type scalarRequest struct {
	name   v1.ResourceName
	n      int64
	device bool
}

func newFitCheck(req upstream.PodRequest, dra *draFit, set devices.ResourceSet) fitCheck {
	c := fitCheck{cpu: req.GetMilliCPU(), mem: req.GetMemory(), storage: req.GetEphemeralStorage(), dra: dra}
	for name, n := range req.GetScalarResources() {
		if n > 0 {
			c.scalars = append(c.scalars, scalarRequest{name, n, set.Contains(name)})
		}
	}
	return c
}

// fits judges the node of row r, whose figures are the node info's
// (snapshot.Row): a device resource's allocatable and request come from the
// row, any other scalar from the node info.
func (c *fitCheck) fits(r *snapshot.Row) bool {
	if r.Pods < 1 {
		return false
	}
	if c.cpu > 0 && c.cpu > r.MilliCPU {
		return false
	}
	if c.mem > 0 && c.mem > r.Memory {
		return false
	}
	if c.storage > 0 && c.storage > r.Storage {
		return false
	}
	for _, s := range c.scalars {
		var a, used int64
		switch x := r.Devices.Index(s.name); {
		case x >= 0:
			a, used = r.Devices.Devices[x].Allocatable, r.Used[x]
		case !s.device:
			a = r.Info.GetAllocatable().GetScalarResources()[s.name]
			used = r.Info.GetRequested().GetScalarResources()[s.name]
		}
		// A device resource the entry lacks is in neither the node's
		// allocatable nor its capacity: a is 0, and no request fits.
		if c.dra != nil && s.name == c.dra.resource && a <= 0 {
			// NodeResourcesFit delegates it (shouldDelegateResourceToDRA).
			if !c.dra.fits(r.Info.Node()) {
				return false
			}
			continue
		}
		if s.n > a-used {
			return false
		}
	}
	return true
}

// podImages are the names under which ImageLocality looks the pod's images
// up: as written and, without a tag or digest, with ":latest" (its
// normalisation).
func podImages(pod *v1.Pod) []string {
	var names []string
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			name := list[i].Image
			names = append(names, name)
			if strings.LastIndex(name, ":") <= strings.LastIndex(name, "/") {
				names = append(names, name+":latest")
			}
		}
	}
	return names
}

func hasImage(ni fwk.NodeInfo, images []string) bool {
	states := ni.GetImageStates()
	if len(states) == 0 {
		return false
	}
	for _, name := range images {
		if _, ok := states[name]; ok {
			return true
		}
	}
	return false
}

// normalized is NormalizeScore's value for node name's raw score after a
// shortlist: rescaled over every feasible node, the best raw score's
// MaxNodeScore kept by the first name only (firstByName).
func (s *shortlistState) normalized(raw int64, name string) int64 {
	v := normalized(raw, s.lo, s.hi)
	if v == fwk.MaxNodeScore && name != s.first {
		v--
	}
	return v
}

// normalized is NormalizeScore's value for raw among scores from lo to hi
// (rescale).
func normalized(raw, lo, hi int64) int64 {
	if hi == lo {
		return fwk.MaxNodeScore
	}
	// Rounded up: see rescale.
	d := (hi - raw) * (fwk.MaxNodeScore - fwk.MinNodeScore)
	return fwk.MaxNodeScore - (d+hi-lo-1)/(hi-lo)
}

// spreadListers are what PodTopologySpread's system default constraints
// are built from (helper.DefaultSelector).
type spreadListers struct {
	services     corelisters.ServiceLister
	controllers  corelisters.ReplicationControllerLister
	replicaSets  appslisters.ReplicaSetLister
	statefulSets appslisters.StatefulSetLister
}

func newSpreadListers(f informers.SharedInformerFactory) *spreadListers {
	return &spreadListers{
		services:     f.Core().V1().Services().Lister(),
		controllers:  f.Core().V1().ReplicationControllers().Lister(),
		replicaSets:  f.Apps().V1().ReplicaSets().Lister(),
		statefulSets: f.Apps().V1().StatefulSets().Lister(),
	}
}

func (l *spreadListers) selector(pod *v1.Pod) labels.Selector {
	return helper.DefaultSelector(pod, l.services, l.controllers, l.replicaSets, l.statefulSets)
}
