package faults

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/devicefit/devicefit/internal/clustercheck"
	"github.com/devicefit/devicefit/internal/e2eutil"
	"github.com/devicefit/devicefit/pkg/devices"
)

// podWatch follows every pod of the cluster through an informer, from the
// start of a test to its end, and remembers the node each pod (by UID) was
// first seen bound to, and when. The informer relists after a broken watch
// (an apiserver restart), and a relist compares each pod with what it had:
// a changed spec.nodeName cannot go unseen.
type podWatch struct {
	mu      sync.Mutex
	first   map[types.UID]binding
	order   []binding // in the order seen
	rebound []string  // pods seen bound to one node, then another
}

// binding is a pod seen bound.
type binding struct {
	uid  types.UID
	pod  string // namespace/name
	node string
	seen time.Time
}

// watchPods starts a podWatch that stops when the test ends.
func watchPods(t *testing.T) *podWatch {
	t.Helper()
	w := &podWatch{first: map[types.UID]binding{}}
	factory := informers.NewSharedInformerFactory(env.CP.Client, 0)
	informer := factory.Core().V1().Pods().Informer()
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			if p, ok := obj.(*v1.Pod); ok {
				w.observe(nil, p)
			}
		},
		UpdateFunc: func(oldObj, newObj interface{}) {
			old, _ := oldObj.(*v1.Pod)
			if p, ok := newObj.(*v1.Pod); ok {
				w.observe(old, p)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	t.Cleanup(func() {
		close(stop)
		factory.Shutdown()
	})
	ctx := testContext(t, time.Minute)
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatal("the pod watch did not sync within a minute")
	}
	return w
}

func (w *podWatch) observe(old, p *v1.Pod) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	b, seen := w.first[p.UID]
	if seen && b.node != p.Spec.NodeName {
		w.rebound = append(w.rebound, fmt.Sprintf("pod %s (uid %s): seen bound to %s at %s, then with spec.nodeName %q at %s",
			b.pod, p.UID, b.node, b.seen.Format("15:04:05.000"), p.Spec.NodeName, now.Format("15:04:05.000")))
	}
	if seen || p.Spec.NodeName == "" {
		return
	}
	b = binding{uid: p.UID, pod: p.Namespace + "/" + p.Name, node: p.Spec.NodeName, seen: now}
	w.first[p.UID] = b
	w.order = append(w.order, b)
}

// bindings returns the bindings seen so far, in the order seen.
func (w *podWatch) bindings() []binding {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]binding(nil), w.order...)
}

// boundIn counts the pods of namespace seen bound.
func (w *podWatch) boundIn(namespace string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, b := range w.order {
		if strings.HasPrefix(b.pod, namespace+"/") {
			n++
		}
	}
	return n
}

// waitBoundIn waits until at least n pods of namespace were seen bound.
func (w *podWatch) waitBoundIn(t *testing.T, namespace string, n int, timeout time.Duration, alive ...*scheduler) {
	t.Helper()
	err := wait.PollUntilContextTimeout(testContext(t, timeout+time.Minute), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		for _, sc := range alive {
			if err := sc.Process.Exited(); err != nil {
				return false, err
			}
		}
		return w.boundIn(namespace) >= n, nil
	})
	if err != nil {
		t.Fatalf("waiting for %d pods of %s to be bound: %v (%d are)", n, namespace, err, w.boundIn(namespace))
	}
}

// grandfather returns the UIDs of every pod bound now (as the watch saw
// them), for expect.grandfathered: taken before a fault takes devices or
// matching labels away, it names the pods that were placed rightly under the
// old state and may now exceed or mismatch the new one.
func (w *podWatch) grandfather() map[types.UID]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[types.UID]bool, len(w.first))
	for uid := range w.first {
		out[uid] = true
	}
	return out
}

// expect is what checkInvariants holds a test to.
type expect struct {
	// namespace holds the test's pods: all of them must end bound, but
	// unbound of them, which the test's construction leaves without a
	// node (and then exactly that many).
	namespace string
	unbound   int
	// grandfathered pods were bound before the test took capacity or
	// matching labels away: a node may be over its allocatable, or lack the
	// labels a pod asks for, when only such pods hold it. Every other pod
	// must fit the node's state as it is now.
	grandfathered map[types.UID]bool
	// exactEvents: every bound pod of namespace has exactly one Scheduled
	// event. Only where no scheduler was killed and the apiserver stayed up:
	// otherwise an event can be lost on the way (never duplicated).
	exactEvents bool
	// wait bounds how long the pods may take to be bound; 3 minutes if 0.
	wait time.Duration
	// alive are the schedulers that must not exit while the checker waits.
	alive []*scheduler
}

// checked is what checkInvariants found, for a test's own assertions.
type checked struct {
	pods  []v1.Pod // every pod of the cluster
	nodes map[string]*v1.Node
}

// onNode returns the pods of namespace bound to node.
func (c *checked) onNode(namespace, node string) []v1.Pod {
	var out []v1.Pod
	for _, p := range c.pods {
		if p.Namespace == namespace && p.Spec.NodeName == node {
			out = append(out, p)
		}
	}
	return out
}

// checkInvariants is the invariant checker of every fault test. It waits
// (bounded) until the pods of e.namespace are bound, then checks the whole
// cluster as the API server has it:
//
//   - every node, for CPU, memory, pods and every device resource
//     (devices.DefaultResourcePatterns): the requests of the bound,
//     non-terminated pods add up to at most the node's allocatable, unless
//     only grandfathered pods hold that resource there; no pod that is not
//     grandfathered is bound to a node that does not exist;
//   - every pod that is not grandfathered sits on a node whose labels its
//     nodeSelector and devicefit.io annotations accept (pkg/devices);
//   - no pod was bound twice: the watch never saw a pod's spec.nodeName
//     change once set, saw every binding, and no pod has more than one
//     Scheduled event from the scheduler, nor one naming another node;
//   - every pod of e.namespace is bound but exactly e.unbound.
//
// Each violation is an error naming the node or pod and the numbers.
func checkInvariants(t *testing.T, w *podWatch, e expect) *checked {
	t.Helper()
	c, violations, summary := findViolations(t, w, e)
	for _, v := range first(violations, 40) {
		t.Errorf("invariant violated: %s", v)
	}
	if len(violations) > 40 {
		t.Errorf("... and %d more violations", len(violations)-40)
	}
	t.Logf("invariants: %d violations; %s", len(violations), summary)
	return c
}

// findViolations is checkInvariants without the reporting: what it found,
// the violations and a summary. It fails t only when it cannot look.
func findViolations(t *testing.T, w *podWatch, e expect) (*checked, []string, string) {
	t.Helper()
	if e.wait == 0 {
		e.wait = 3 * time.Minute
	}
	ctx := testContext(t, e.wait+3*time.Minute)
	cs := env.CP.Client
	set, err := devices.NewResourceSet(devices.DefaultResourcePatterns())
	if err != nil {
		t.Fatal(err)
	}

	var violations []string

	// Every schedulable pod ends bound.
	var pods []v1.Pod
	unbound := func() []string {
		var out []string
		for i := range pods {
			if pods[i].Spec.NodeName == "" {
				out = append(out, pods[i].Name+" "+scheduledMessage(&pods[i]))
			}
		}
		return out
	}
	err = wait.PollUntilContextTimeout(ctx, time.Second, e.wait, true, func(ctx context.Context) (bool, error) {
		for _, sc := range e.alive {
			if err := sc.Process.Exited(); err != nil {
				return false, err
			}
		}
		list, err := cs.CoreV1().Pods(e.namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil // an apiserver coming back
		}
		pods = list.Items
		return len(unbound()) <= e.unbound, nil
	})
	if err != nil {
		u := unbound()
		msg := fmt.Sprintf("%d of the %d pods of %s bound (%v), want all but %d; %d not bound:\n  %s",
			len(pods)-len(u), len(pods), e.namespace, err, e.unbound, len(u), strings.Join(first(u, 20), "\n  "))
		for _, sc := range e.alive {
			msg += "\n" + e2eutil.WithLog(sc.Process, fmt.Errorf("scheduler %s", sc.Name)).Error()
		}
		violations = append(violations, msg)
	} else if u := unbound(); len(u) != e.unbound {
		violations = append(violations, fmt.Sprintf("%d pods of %s not bound, want exactly %d (more were placed than the test's nodes can take?):\n  %s",
			len(u), e.namespace, e.unbound, strings.Join(first(u, 20), "\n  ")))
	}

	// The cluster as it is, once the watch has seen every binding.
	var all []v1.Pod
	var missed []string
	err = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		all, missed = list.Items, nil
		w.mu.Lock()
		for _, p := range all {
			if p.Spec.NodeName == "" {
				continue
			}
			if _, ok := w.first[p.UID]; !ok {
				missed = append(missed, fmt.Sprintf("%s/%s on %s", p.Namespace, p.Name, p.Spec.NodeName))
			}
		}
		w.mu.Unlock()
		return len(missed) == 0, nil
	})
	if err != nil {
		violations = append(violations, fmt.Sprintf("the pod watch never saw %d bindings (%v), so it cannot vouch that they happened once: %s",
			len(missed), err, strings.Join(first(missed, 20), ", ")))
	}
	nodeList, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing nodes: %v", err)
	}
	nodes := map[string]*v1.Node{}
	for i := range nodeList.Items {
		nodes[nodeList.Items[i].Name] = &nodeList.Items[i]
	}
	dra, err := clustercheck.ReadDRA(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}

	// Capacity, per node and resource.
	type holder struct {
		pod           string
		q             resource.Quantity
		grandfathered bool
	}
	type key struct {
		node string
		r    v1.ResourceName
	}
	holders := map[key][]holder{}
	bound, grandfathered := 0, 0
	for i := range all {
		p := &all[i]
		if p.Spec.NodeName == "" || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			continue
		}
		bound++
		old := e.grandfathered[p.UID]
		if old {
			grandfathered++
		}
		n := nodes[p.Spec.NodeName]
		if n == nil {
			if !old {
				violations = append(violations, fmt.Sprintf("pod %s/%s is bound to node %s, which does not exist", p.Namespace, p.Name, p.Spec.NodeName))
			}
			continue
		}
		requests := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
		requests[v1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
		for r, q := range requests {
			if set.Contains(r) && dra.FromSlices(n, r) {
				// Served from slices: the claims' invariant below.
				continue
			}
			if r == v1.ResourceCPU || r == v1.ResourceMemory || r == v1.ResourcePods || set.Contains(r) {
				if !q.IsZero() {
					k := key{p.Spec.NodeName, r}
					holders[k] = append(holders[k], holder{p.Namespace + "/" + p.Name, q, old})
				}
			}
		}
		if !old {
			if why := misplaced(p, n, set, dra); why != "" {
				violations = append(violations, fmt.Sprintf("pod %s/%s on node %s: %s", p.Namespace, p.Name, n.Name, why))
			}
		}
	}
	keys := make([]key, 0, len(holders))
	for k := range holders {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].node < keys[j].node || keys[i].node == keys[j].node && keys[i].r < keys[j].r
	})
	for _, k := range keys {
		hs := holders[k]
		var total resource.Quantity
		allOld := true
		for _, h := range hs {
			total.Add(h.q)
			allOld = allOld && h.grandfathered
		}
		alloc := nodes[k.node].Status.Allocatable[k.r]
		if total.Cmp(alloc) <= 0 || allOld {
			continue
		}
		var newer, older []string
		for _, h := range hs {
			if h.grandfathered {
				older = append(older, fmt.Sprintf("%s(%s)", h.pod, h.q.String()))
			} else {
				newer = append(newer, fmt.Sprintf("%s(%s)", h.pod, h.q.String()))
			}
		}
		v := fmt.Sprintf("node %s: %s requested %s by %d pods > allocatable %s; placed under the current state: %s",
			k.node, k.r, total.String(), len(hs), alloc.String(), strings.Join(first(newer, 12), " "))
		if len(older) > 0 {
			v += fmt.Sprintf("; grandfathered: %s", strings.Join(first(older, 12), " "))
		}
		violations = append(violations, v)
	}

	// Bound once.
	w.mu.Lock()
	violations = append(violations, w.rebound...)
	for _, p := range all {
		if b, ok := w.first[p.UID]; ok && p.Spec.NodeName != b.node {
			violations = append(violations, fmt.Sprintf("pod %s/%s is on %q, but was seen bound to %s", p.Namespace, p.Name, p.Spec.NodeName, b.node))
		}
	}
	w.mu.Unlock()
	events, eventViolations := scheduledEvents(t, ctx, e, all)
	violations = append(violations, eventViolations...)

	// DRA: no device in two claims, no counter over its value, and no
	// claim reserved for a pod that is gone once kube-controller-manager
	// had a moment (the pods of earlier tests are deleted when they end).
	draProblems, draHeld := dra.Problems()
	violations = append(violations, draProblems...)
	alive := map[types.UID]bool{}
	for _, p := range all {
		alive[p.UID] = true
	}
	var stale []string
	err = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		d, err := clustercheck.ReadDRA(ctx, cs)
		if err != nil {
			return false, nil
		}
		stale = d.ReservedForGone(alive)
		return len(stale) == 0, nil
	})
	if err != nil {
		violations = append(violations, stale...)
	}
	summary := fmt.Sprintf("%d nodes, %d bound pods (%d grandfathered), %d (node, resource) pairs, %d DRA devices in claims; %s",
		len(nodes), bound, grandfathered, len(keys), draHeld, events)
	return &checked{pods: all, nodes: nodes}, violations, summary
}

// scheduledEvents checks the Scheduled events of the pods of e.namespace:
// at most one per pod (per UID; a series counts its repeats), naming the
// node the pod is on, and with e.exactEvents one for every bound pod. It
// returns a summary and the violations.
func scheduledEvents(t *testing.T, ctx context.Context, e expect, all []v1.Pod) (string, []string) {
	t.Helper()
	pods := map[types.UID]*v1.Pod{}
	for i := range all {
		if all[i].Namespace == e.namespace && all[i].Spec.NodeName != "" {
			pods[all[i].UID] = &all[i]
		}
	}
	var count map[types.UID]int
	var to map[types.UID][]string
	var refused int
	collect := func(ctx context.Context) error {
		list, err := env.CP.Client.EventsV1().Events(e.namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		count, to, refused = map[types.UID]int{}, map[types.UID][]string{}, 0
		for i := range list.Items {
			ev := &list.Items[i]
			if ev.Regarding.Kind != "Pod" {
				continue
			}
			switch ev.Reason {
			case "Scheduled":
				count[ev.Regarding.UID] += repeats(ev)
				to[ev.Regarding.UID] = append(to[ev.Regarding.UID], assignedNode(ev.Note))
			case "FailedScheduling":
				if strings.Contains(ev.Note, "already assigned") || strings.Contains(ev.Note, "already bound") {
					refused += repeats(ev)
				}
			}
		}
		return nil
	}
	complete := func() bool {
		for uid := range pods {
			if count[uid] == 0 {
				return false
			}
		}
		return true
	}
	// Events are written asynchronously: wait for them when all must come,
	// else give the last ones a moment.
	timeout := 5 * time.Second
	if e.exactEvents {
		timeout = time.Minute
	}
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		if err := collect(ctx); err != nil {
			return false, nil
		}
		return complete(), nil
	})
	if err != nil && count == nil {
		return "", []string{fmt.Sprintf("listing the events of %s: %v", e.namespace, err)}
	}
	var violations []string
	uids := make([]types.UID, 0, len(count))
	for uid := range count {
		uids = append(uids, uid)
	}
	sort.Slice(uids, func(i, j int) bool { return uids[i] < uids[j] })
	for _, uid := range uids {
		p := pods[uid]
		name := string(uid)
		if p != nil {
			name = p.Namespace + "/" + p.Name
		}
		if count[uid] > 1 {
			violations = append(violations, fmt.Sprintf("pod %s: %d Scheduled events, to %s", name, count[uid], strings.Join(to[uid], ", ")))
		}
		if p == nil {
			continue // deleted since, or not bound now: nothing to compare with
		}
		for _, n := range to[uid] {
			if n != p.Spec.NodeName {
				violations = append(violations, fmt.Sprintf("pod %s is on %s, but a Scheduled event says %s", name, p.Spec.NodeName, n))
			}
		}
	}
	var missing []string
	for uid, p := range pods {
		if count[uid] == 0 {
			missing = append(missing, p.Name)
		}
	}
	sort.Strings(missing)
	if e.exactEvents && len(missing) > 0 {
		violations = append(violations, fmt.Sprintf("%d bound pods of %s have no Scheduled event: %s",
			len(missing), e.namespace, strings.Join(first(missing, 20), ", ")))
	}
	return fmt.Sprintf("Scheduled events: %d bound pods of %s, %d with none, %d bindings refused as already assigned",
		len(pods), e.namespace, len(missing), refused), violations
}

// repeats is how many occurrences an event stands for.
func repeats(ev *eventsv1.Event) int {
	if ev.Series != nil && ev.Series.Count > 1 {
		return int(ev.Series.Count)
	}
	return 1
}

// assignedNode reads the node from kube-scheduler's Scheduled note,
// "Successfully assigned <ns>/<pod> to <node>".
func assignedNode(note string) string {
	if i := strings.LastIndex(note, " to "); i >= 0 {
		return note[i+len(" to "):]
	}
	return "(unparsed: " + note + ")"
}

// misplaced says why node n should not hold pod p, or "": its nodeSelector,
// and the devicefit.io selector (and MIG setup) for each device it requests,
// judged with pkg/devices against the node's labels now.
//
// Devices the node serves from ResourceSlices are judged by the devices the
// pod's claims hold there.
func misplaced(p *v1.Pod, n *v1.Node, set devices.ResourceSet, dra *clustercheck.DRA) string {
	for k, v := range p.Spec.NodeSelector {
		if n.Labels[k] != v {
			return fmt.Sprintf("nodeSelector %s=%s, node label %q", k, v, n.Labels[k])
		}
	}
	if p.Spec.SchedulerName != e2eutil.SchedulerName {
		return ""
	}
	if len(p.Spec.ResourceClaims) > 0 && len(dra.PodDevices(p)) == 0 {
		return "bound, but its claims hold no device"
	}
	demand, err := devices.PodDemand(p, set)
	if err != nil {
		return fmt.Sprintf("bound although its device request is invalid: %v", err)
	}
	if len(demand) == 0 {
		return ""
	}
	sel, err := devices.ParseSelector(p.Annotations)
	if err != nil {
		return fmt.Sprintf("bound although its annotations are invalid: %v", err)
	}
	for _, r := range demand {
		if dra.FromSlices(n, r.Name) {
			if where, m := dra.SelectorMismatch(p, r.Name); m != devices.Match || where != "" {
				return fmt.Sprintf("%d %s from slices with annotations %v: %s %s",
					r.Count, r.Name, devices.SelectorAnnotations(p.Annotations), mismatchNames[m], where)
			}
			continue
		}
		labels := devices.NewDeviceLabels(r.Name)
		d := labels.Describe(n.Labels)
		if m := sel.Match(&labels, d); m != devices.Match {
			return fmt.Sprintf("%d %s with annotations %v on devices the node's labels describe as %+v: %s",
				r.Count, r.Name, devices.SelectorAnnotations(p.Annotations), d, mismatchNames[m])
		}
	}
	return ""
}

var mismatchNames = map[devices.Mismatch]string{
	devices.MismatchProduct:         "product not in devicefit.io/products",
	devices.MismatchExcludedProduct: "product in devicefit.io/exclude-products",
	devices.MismatchMemory:          "less memory than devicefit.io/min-memory",
	devices.MismatchFamily:          "family not in devicefit.io/families",
	devices.MismatchCompute:         "compute capability below devicefit.io/min-compute",
	devices.MismatchShared:          "shared devices for devicefit.io/sharing exclusive",
	devices.MismatchMIGStrategy:     "a MIG strategy that cannot serve the MIG resource",
	devices.MismatchMIGInvalid:      "an invalid MIG setup (-MIG-INVALID)",
}

// scheduledMessage is the pod's PodScheduled condition, for messages.
func scheduledMessage(p *v1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled {
			return fmt.Sprintf("(%s: %s)", c.Reason, c.Message)
		}
	}
	return "(not tried yet)"
}

// first returns at most n of list.
func first(list []string, n int) []string {
	if len(list) > n {
		return list[:n]
	}
	return list
}
