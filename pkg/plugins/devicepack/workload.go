package devicepack

import (
	"hash/maphash"
	"math"
	"math/bits"
	"sort"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"

	"github.com/devicefit/devicefit/pkg/apis/config"
	"github.com/devicefit/devicefit/pkg/devices"
)

// maxClasses bounds the distribution Score iterates per node: the heaviest
// classes are kept, the long tail is dropped (and the rest renormalised).
// The bound must not erase job types. Classes split a job type by its CPU
// and memory, so a rare type is many light classes: at 64, the default
// Alibaba trace's 125 classes lost all of its 2-GPU jobs and a fifth of its
// 8-GPU ones, and DevicePack stopped keeping room for them (gpuspec10, 311
// classes, kept 91% of its jobs). At 256 both keep 99% or more; fractional
// allocation, seeds 42-46: default trace 94.33 -> 94.67%, gpuspec10
// 94.46 -> 94.96% (above FGD's 94.67), for 7% more replay time
// (docs/placement.md).
const maxClasses = 256

// rescaleAt keeps the growing observation weights (2^(n/halfLife)) finite.
const rescaleAt = 1 << 50

// maxTracked bounds the classes an Observed workload remembers: a scheduler
// runs for months and sees ever new pod shapes, each a class. Past it,
// prune drops the classes that no longer count, then the lightest, down to
// keepTracked. Classes ranked below maxClasses are not in any snapshot, so
// dropping those ranked below keepTracked changes no placement.
const (
	maxTracked  = 4 * maxClasses
	keepTracked = 2 * maxClasses
)

// significantHalfLives: a class whose weight is below 2^-20 of the next
// observation's (last seen more than 20 half-lives ago, 40000 pods at the
// default half-life) weighs less than a millionth of one new pod.
const significantHalfLives = 20

// classKey identifies a class of device jobs. CPU and memory are rounded up
// to six significant bits (roundUp6, at most 1/32 over), so a trace with
// thousands of distinct requests still has few classes (the heaviest
// maxClasses are kept), and a rounded class never claims to fit where the
// real jobs would not. Three bits overshot by up to 25%: a job of 3152m
// became 3584m, 41560 MiB 49152 MiB, and a class of 12000m jobs asked
// 12288m, eight of which no 96-core node holds though eight of the jobs
// fit: the fragmentation counted GPUs stranded that the workload could use
// (default Alibaba trace, round-up, seeds 42-44: 0.03-0.08% unallocated
// against 0.24-1.05%; docs/placement.md).
type classKey struct {
	resource    v1.ResourceName
	devices     int64
	milliCPU    int64
	memoryBytes int64
	// selector is the class's devicefit.io annotations (selectorKey): jobs
	// that accept different devices are different classes.
	selector string
	// capacity is what the job's claim asks of a shared device
	// (devices.CapacityRequest.Key; "" for whole devices): a half GPU and a
	// quarter GPU strand different devices.
	capacity string
}

type classEntry struct {
	selector devices.Selector
	capacity devices.CapacityRequest
	weight   float64
}

// workload is the job distribution. Static: fixed. Observed: a histogram of
// the device pods seen, each weighted 2^(n/halfLife) for the n-th observation,
// which is the same as halving every older weight each halfLife pods, without
// touching them.
type workload struct {
	observed bool
	halfLife float64

	mu      sync.Mutex
	classes map[classKey]*classEntry
	n       float64 // observations so far
	scale   float64 // weight of the next observation
	seen    seenSet
	cached  *devices.Workload
	changed bool
}

func newWorkload(spec config.WorkloadSpec) (*workload, error) {
	w := &workload{
		observed: spec.Mode == config.WorkloadObserved,
		halfLife: float64(spec.HalfLifePods),
		classes:  map[classKey]*classEntry{},
		scale:    1,
		seen:     newSeenSet(1 << 16),
		changed:  true,
	}
	var total int64
	for _, c := range spec.Classes {
		total += c.Weight
	}
	for _, c := range spec.Classes {
		sel, err := devices.ParseSelector(productAnnotation(c.Products))
		if err != nil {
			return nil, err
		}
		weight := float64(c.Weight)
		if w.observed {
			// The prior is worth PriorPods observations in all.
			weight = float64(c.Weight) / float64(total) * float64(spec.PriorPods)
		}
		key := classKey{
			resource: v1.ResourceName(c.Resource), devices: c.Devices,
			milliCPU: roundUp6(c.MilliCPU), memoryBytes: roundUp6(c.MemoryMiB << 20), selector: selectorKey(productAnnotation(c.Products)),
		}
		w.add(key, sel, devices.CapacityRequest{}, weight)
	}
	if len(w.classes) == 0 && !w.observed {
		return nil, errEmptyStatic
	}
	return w, nil
}

// selectorKey is the canonical form of a pod's devicefit.io annotations. A
// class must key on all of them, not only on products: two 2-GPU jobs, one
// asking for 60Gi of device memory and one for the ampere family, accept
// different nodes, and merged into one class the first one seen would speak
// for both.
func selectorKey(annotations map[string]string) string {
	return strings.Join(devices.SelectorAnnotations(annotations), "\n")
}

func productAnnotation(products string) map[string]string {
	if products == "" {
		return nil
	}
	return map[string]string{devices.AnnotationProducts: products}
}

func (w *workload) add(key classKey, sel devices.Selector, capacity devices.CapacityRequest, weight float64) {
	e, ok := w.classes[key]
	if !ok {
		e = &classEntry{selector: sel, capacity: capacity}
		w.classes[key] = e
	}
	e.weight += weight
	w.changed = true
}

// observe records a device pod once (by UID: retries of an unschedulable pod
// must not make its class look more frequent than it is). shares is what
// the pod's claims ask of shared devices (draDemand), if anything.
func (w *workload) observe(uid string, demand devices.Demand, shares *claimShares, milliCPU, memoryBytes int64, selector string, sel devices.Selector) {
	if !w.observed || len(demand) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.seen.insert(uid) {
		return
	}
	key := classOf(demand, milliCPU, memoryBytes, selector)
	var capacity devices.CapacityRequest
	if shares != nil && shares.resource == key.resource {
		capacity = shares.capacity
		key.capacity = capacity.Key()
	}
	w.add(key, sel, capacity, w.scale)
	if len(w.classes) > maxTracked {
		w.prune()
	}
	w.n++
	w.scale = math.Exp2(w.n / w.halfLife)
	if w.scale > rescaleAt {
		for _, e := range w.classes {
			e.weight /= w.scale
		}
		w.n, w.scale = 0, 1
	}
}

// prune drops the classes below significance, then, if more than
// keepTracked are left, the lightest of them (ties by key, so the kept set
// is deterministic).
func (w *workload) prune() {
	floor := w.scale * math.Exp2(-significantHalfLives)
	for k, e := range w.classes {
		if e.weight < floor {
			delete(w.classes, k)
		}
	}
	if len(w.classes) <= keepTracked {
		return
	}
	keys := w.heaviest()
	for _, k := range keys[keepTracked:] {
		delete(w.classes, k)
	}
}

// heaviest returns the classes' keys, heaviest first; ties by key.
func (w *workload) heaviest() []classKey {
	keys := make([]classKey, 0, len(w.classes))
	for k := range w.classes {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := w.classes[keys[i]], w.classes[keys[j]]
		if a.weight != b.weight {
			return a.weight > b.weight
		}
		return lessKey(keys[i], keys[j])
	})
	return keys
}

// classOf is a device pod's class: its largest device request (a pod
// asking for two kinds of devices is rare, and its biggest ask is what
// strands capacity), its CPU and memory rounded up, its selector.
func classOf(demand devices.Demand, milliCPU, memoryBytes int64, selector string) classKey {
	r := demand[0]
	for _, d := range demand[1:] {
		if d.Count > r.Count {
			r = d
		}
	}
	return classKey{resource: r.Name, devices: r.Count, milliCPU: roundUp6(milliCPU), memoryBytes: roundUp6(memoryBytes), selector: selector}
}

// snapshot returns the current distribution; the result is immutable and
// shared until the next observation.
func (w *workload) snapshot() (*devices.Workload, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.changed {
		return w.cached, nil
	}
	keys := w.heaviest()
	if len(keys) > maxClasses {
		keys = keys[:maxClasses]
	}
	classes := make([]devices.Class, len(keys))
	for i, k := range keys {
		e := w.classes[k]
		classes[i] = devices.Class{Resource: k.resource, Devices: k.devices, MilliCPU: k.milliCPU,
			MemoryBytes: k.memoryBytes, Selector: e.selector, Capacity: e.capacity, Weight: e.weight}
	}
	if len(classes) == 0 {
		w.cached, w.changed = nil, false
		return nil, nil
	}
	wl, err := devices.NewWorkload(classes)
	if err != nil {
		return nil, err
	}
	w.cached, w.changed = wl, false
	return wl, nil
}

func lessKey(a, b classKey) bool {
	switch {
	case a.resource != b.resource:
		return a.resource < b.resource
	case a.devices != b.devices:
		return a.devices < b.devices
	case a.milliCPU != b.milliCPU:
		return a.milliCPU < b.milliCPU
	case a.memoryBytes != b.memoryBytes:
		return a.memoryBytes < b.memoryBytes
	case a.selector != b.selector:
		return a.selector < b.selector
	}
	return a.capacity < b.capacity
}

// roundUp6 rounds v up to its six most significant bits.
func roundUp6(v int64) int64 {
	if v <= 64 {
		return v
	}
	shift := bits.Len64(uint64(v)) - 6
	unit := int64(1) << shift
	return (v + unit - 1) / unit * unit
}

// seenSet remembers recent pod UIDs in two generations: when the current one
// is full it becomes the old one, so memory stays bounded and a pod retried
// within about max newer pods is not counted twice. It keeps a 64-bit hash
// of each UID, not the string: the observed workload's set holds up to
// 131072 of them for the life of the scheduler, 2 MiB so against 9 with the
// strings (the soak's live heap, docs/performance.md). Two UIDs with one
// hash (about one chance in 10^9 among that many) only leave a pod out of
// the workload's counts.
type seenSet struct {
	max      int
	seed     maphash.Seed
	cur, old map[uint64]struct{}
}

func newSeenSet(max int) seenSet {
	return seenSet{max: max, seed: maphash.MakeSeed(), cur: map[uint64]struct{}{}, old: map[uint64]struct{}{}}
}

// insert reports whether uid is new.
func (s *seenSet) insert(uid string) bool {
	h := maphash.String(s.seed, uid)
	if _, ok := s.cur[h]; ok {
		return false
	}
	if _, ok := s.old[h]; ok {
		return false
	}
	if len(s.cur) >= s.max {
		s.old, s.cur = s.cur, make(map[uint64]struct{}, s.max)
	}
	s.cur[h] = struct{}{}
	return true
}
