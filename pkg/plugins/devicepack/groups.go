package devicepack

import (
	"math"
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"

	"github.com/devicefit/devicefit/pkg/devices"
)

// groupShapes is the distribution of the pod groups that arrive, by shape
// (resource, pods, devices per pod): each group DevicePack places is
// recorded once (by its key), weighted 2^(n/halfLife) for the n-th, as the
// node-level workload weighs pods, so that the mix follows the groups that
// come now. ScorePlacement counts the domains they could no longer use.
type groupShapes struct {
	mu       sync.Mutex
	halfLife float64
	weights  map[shapeKey]float64
	n, scale float64
	seen     seenSet
	// key is the topology key of the last group observed with one: the
	// domains single pods keep whole too (score.go).
	key string
	// version counts the changes of key and weights; listed is list() as
	// of listedAt (current).
	version, listedAt uint64
	listed            []devices.GroupShape
}

type shapeKey struct {
	resource     v1.ResourceName
	pods, perPod int64
}

func newGroupShapes(halfLife int64) *groupShapes {
	return &groupShapes{
		halfLife: float64(max(halfLife, 1)),
		weights:  map[shapeKey]float64{},
		scale:    1,
		seen:     newSeenSet(1 << 14),
	}
}

// observe records the shape of group key (with topology key topology,
// "" for none) once and returns the distribution (list).
func (g *groupShapes) observe(key, topology string, s devices.GroupShape) []devices.GroupShape {
	g.mu.Lock()
	defer g.mu.Unlock()
	if topology != "" && topology != g.key {
		g.key = topology
		g.version++
	}
	if s.Pods > 0 && s.PerPod > 0 && g.seen.insert(key) {
		g.version++
		g.weights[shapeKey{s.Resource, s.Pods, s.PerPod}] += g.scale
		g.n++
		g.scale = math.Exp2(g.n / g.halfLife)
		if g.scale > rescaleAt {
			for k := range g.weights {
				g.weights[k] /= g.scale
			}
			g.n, g.scale = 0, 1
		}
	}
	return g.list()
}

// current returns the topology key, the distribution and its version,
// observing nothing: what single pods are scored against. The list is
// shared until the next change: callers must not modify it.
func (g *groupShapes) current() (string, []devices.GroupShape, uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.key == "" || len(g.weights) == 0 {
		return "", nil, g.version
	}
	if g.listed == nil || g.listedAt != g.version {
		g.listed, g.listedAt = g.list(), g.version
	}
	return g.key, g.listed, g.version
}

// list is the distribution, heaviest first (ties by key: deterministic),
// at most maxShapes shapes. g.mu held.
func (g *groupShapes) list() []devices.GroupShape {
	out := make([]devices.GroupShape, 0, len(g.weights))
	for k, w := range g.weights {
		out = append(out, devices.GroupShape{Resource: k.resource, Pods: k.pods, PerPod: k.perPod, Weight: w})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		switch {
		case a.Weight != b.Weight:
			return a.Weight > b.Weight
		case a.Resource != b.Resource:
			return a.Resource < b.Resource
		case a.Pods != b.Pods:
			return a.Pods < b.Pods
		}
		return a.PerPod < b.PerPod
	})
	if len(out) > maxShapes {
		out = out[:maxShapes]
	}
	return out
}

// maxShapes bounds the pod-group shapes PlacementScore weighs per domain.
const maxShapes = 64
