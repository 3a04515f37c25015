package replay

import (
	"errors"
	"fmt"
	"math"
	mathrand "math/rand"
	"math/rand/v2"
	"slices"
	"strings"
)

// Fractional says what happens to a pod asking for a share of one device
// (gpu_milli < 1000 with num_gpu 1): an exclusive-device cluster has no
// fractions.
type Fractional string

const (
	// FractionalRoundUp gives such a pod one whole device.
	FractionalRoundUp Fractional = "round-up"
	// FractionalSkip drops such pods from the trace (and from the workload
	// distribution).
	FractionalSkip Fractional = "skip"
	// FractionalDRAShares keeps the fraction: the GPUs are shared DRA
	// devices (consumable capacity, KEP-5075) publishing shares: 1000, and
	// such a pod brings a ResourceClaim for one GPU asking for gpu_milli
	// shares of it. Allocation is counted in milli-GPU, as FGD counts it.
	// Needs --devices dra.
	FractionalDRAShares Fractional = "dra-shares"
)

// ParseFractional reads the --fractional flag.
func ParseFractional(s string) (Fractional, error) {
	switch f := Fractional(s); f {
	case FractionalRoundUp, FractionalSkip, FractionalDRAShares:
		return f, nil
	}
	return "", fmt.Errorf("--fractional: %q is not %q, %q or %q", s, FractionalRoundUp, FractionalSkip, FractionalDRAShares)
}

// ApplyFractional returns the pods with fractional requests handled, and
// how many were changed (round-up), dropped (skip) or kept as shares
// (dra-shares). The input is not modified.
func ApplyFractional(pods []PodSpec, mode Fractional) ([]PodSpec, int, error) {
	out := make([]PodSpec, 0, len(pods))
	n := 0
	for _, p := range pods {
		if p.Fractional() {
			n++
			switch mode {
			case FractionalRoundUp:
				p.GPUMilli = 1000
			case FractionalSkip:
				continue
			case FractionalDRAShares:
			default:
				return nil, 0, fmt.Errorf("unknown fractional mode %q", mode)
			}
		}
		out = append(out, p)
	}
	return out, n, nil
}

// Order is the arrival order of the trace's own pods.
type Order string

const (
	// OrderTrace keeps the file order.
	OrderTrace Order = "trace"
	// OrderShuffle sorts the pods by name and shuffles them with the seed,
	// as FGD's simulator does with --shuffle-pod.
	OrderShuffle Order = "shuffle"
	// OrderFGD is the sequence FGD's simulator itself builds for the seed
	// (--shuffle-pod with -tuneseed, commit 8f3d641): the same steps as
	// OrderShuffle and tuning, drawn from Go's math/rand (v1) seeded with
	// the seed after one draw its start-up log takes, and tuning's stopping
	// check as it makes it (below). A seed then names the same arrivals
	// here as in FGD's published figures, so the two compare seed by seed.
	OrderFGD Order = "fgd"
)

// ParseOrder reads the --order flag.
func ParseOrder(s string) (Order, error) {
	switch o := Order(s); o {
	case OrderTrace, OrderShuffle, OrderFGD:
		return o, nil
	}
	return "", fmt.Errorf("--order: %q is not %q, %q or %q", s, OrderTrace, OrderShuffle, OrderFGD)
}

// ArrivalOptions shape the pod sequence.
type ArrivalOptions struct {
	// Tune is FGD's workload tuning ratio: the sequence is resized until the
	// devices it requests are about Tune × the fleet's capacity. 0 replays
	// the pods exactly as given.
	Tune  float64
	Order Order
	Seed  int64
}

// Arrival is one pod of the sequence.
type Arrival struct {
	// Pod is the trace pod this arrival is (a copy of).
	Pod *PodSpec
	// Name is unique in the sequence: the trace name, or
	// "<name>-tuned-<k>" for the k-th added copy.
	Name string
}

// Arrivals builds the pod sequence with FGD's method
// (TunePodsByNodeTotalResource in hkust-adsl/kubernetes-scheduler-simulator),
// counting devices in milli-GPU as FGD does (a whole device is 1000, a
// share its gpu_milli; with fractions rounded up or skipped, whole devices):
//
//  1. Order: the file order, or sorted by name and shuffled with the seed.
//  2. Tune (if > 0), with target = Tune × capacity devices:
//     - below the target, copies of pods drawn uniformly with replacement
//     from the pods sorted by name are appended, until the next draw would
//     overshoot the target (the first overshooting draw ends tuning);
//     - above it, pods drawn uniformly from the sequence are removed until
//     the total is at most the target (the rest keep their order).
//
// One generator, seeded once, makes the shuffle and then the draws, so a
// seed gives the same sequence on every platform and Go version: PCG for
// trace and shuffle; for OrderFGD math/rand's seeded source, whose stream
// Go keeps fixed for a given seed. FGD's tuning checks the copy's share of
// one device against the target but adds its whole request (so the last
// multi-GPU copy may overshoot); OrderFGD checks as it does, the others
// the whole request.
func Arrivals(pods []PodSpec, capacity int64, o ArrivalOptions) ([]Arrival, error) {
	if len(pods) == 0 {
		return nil, errors.New("no pods")
	}
	if o.Tune < 0 || math.IsNaN(o.Tune) || math.IsInf(o.Tune, 0) {
		return nil, fmt.Errorf("--tune: %v must be a finite number >= 0", o.Tune)
	}
	var r draws = newRNG(o.Seed)
	check := (*PodSpec).MilliGPUs
	if o.Order == OrderFGD {
		g := mathrand.New(mathrand.NewSource(o.Seed))
		g.Int() // the draw FGD's "Random Seed" debug line takes, logged or not
		r, check = goRand{g}, perDeviceMilli
	}
	seq := make([]Arrival, len(pods))
	for i := range pods {
		seq[i] = Arrival{Pod: &pods[i], Name: pods[i].Name}
	}
	switch o.Order {
	case OrderTrace:
	case OrderShuffle, OrderFGD:
		slices.SortStableFunc(seq, func(a, b Arrival) int { return strings.Compare(a.Name, b.Name) })
		r.shuffle(len(seq), func(i, j int) { seq[i], seq[j] = seq[j], seq[i] })
	default:
		return nil, fmt.Errorf("unknown order %q", o.Order)
	}
	if o.Tune == 0 {
		return seq, nil
	}
	if capacity <= 0 {
		return nil, errors.New("--tune needs a fleet with devices")
	}
	// total is in milli-GPU; over reports whether a total passes the
	// target of Tune × capacity devices. The division is exact for whole
	// devices, so integer traces tune exactly as they did in device units.
	var total int64
	for _, a := range seq {
		total += a.Pod.MilliGPUs()
	}
	if total == 0 {
		return nil, errors.New("--tune needs pods that request devices")
	}
	target := o.Tune * float64(capacity)
	over := func(milli int64) bool { return float64(milli)/1000 > target }
	if o.Order == OrderFGD {
		// FGD's arithmetic: milli-GPU against the ratio times milli-GPU.
		t := o.Tune * float64(capacity*1000)
		over = func(milli int64) bool { return float64(milli) > t }
	}
	switch {
	case float64(total)/1000 < target:
		pool := make([]*PodSpec, len(pods))
		for i := range pods {
			pool[i] = &pods[i]
		}
		slices.SortStableFunc(pool, func(a, b *PodSpec) int { return strings.Compare(a.Name, b.Name) })
		for k := 0; ; k++ {
			p := pool[r.intn(len(pool))]
			if over(total + check(p)) {
				break
			}
			total += p.MilliGPUs()
			seq = append(seq, Arrival{Pod: p, Name: fmt.Sprintf("%s-tuned-%d", p.Name, k)})
		}
	case over(total):
		for over(total) {
			i := r.intn(len(seq))
			total -= seq[i].Pod.MilliGPUs()
			seq = slices.Delete(seq, i, i+1)
		}
	}
	return seq, nil
}

// draws are the sequence's random choices.
type draws interface {
	intn(n int) int
	shuffle(n int, swap func(i, j int))
}

// goRand draws as FGD's simulator does, from math/rand's Rand.
type goRand struct{ r *mathrand.Rand }

func (g goRand) intn(n int) int                     { return g.r.Intn(n) }
func (g goRand) shuffle(n int, swap func(i, j int)) { g.r.Shuffle(n, swap) }

// perDeviceMilli is the demand FGD's tuning checks a copy by: the share of
// one device (gpu_milli), whatever the number of devices.
func perDeviceMilli(p *PodSpec) int64 {
	if p.GPUs == 0 {
		return 0
	}
	return p.GPUMilli
}

// rng draws from PCG, whose output math/rand/v2 specifies; the bounded
// draws and the shuffle are ours so that they cannot change underneath.
type rng struct{ src *rand.PCG }

func newRNG(seed int64) *rng {
	return &rng{src: rand.NewPCG(uint64(seed), 0xda3e39cb94b95bdb)}
}

// intn returns a uniform int in [0, n), n > 0, by rejection.
func (r *rng) intn(n int) int {
	bound := uint64(n)
	threshold := -bound % bound // 2^64 mod bound
	for {
		if v := r.src.Uint64(); v >= threshold {
			return int(v % bound)
		}
	}
}

// shuffle is Fisher-Yates.
func (r *rng) shuffle(n int, swap func(i, j int)) {
	for i := n - 1; i > 0; i-- {
		swap(i, r.intn(i+1))
	}
}
