package devices

import v1 "k8s.io/api/core/v1"

// GroupShape is a kind of pod group that arrives: Pods pods of PerPod
// devices of Resource each, all in one topology domain (a PodGroup's
// schedulingConstraints.topology key, e.g. nvidia.com/gpu.clique, the GFD
// label of a multi-node NVLink domain). Weight is its share of the arriving
// groups (any scale: GroupLoss divides by the sum).
type GroupShape struct {
	Resource     v1.ResourceName
	Pods, PerPod int64
	Weight       float64
}

// Domain is one topology domain's devices of one resource: the free devices
// on each of its nodes, and their allocatable over all its nodes.
type Domain struct {
	Free  []int64
	Total int64
}

// FreeDevices is the domain's free devices over its nodes.
func (d Domain) FreeDevices() int64 {
	var f int64
	for _, n := range d.Free {
		f += n
	}
	return f
}

// Whole reports whether none of the domain's devices are taken.
func (d Domain) Whole() bool {
	return d.Total > 0 && d.FreeDevices() >= d.Total
}

// Holds reports whether the domain can take a group of shape s: its nodes
// hold s.Pods pods of s.PerPod devices (several pods of a group may share
// a node).
func (d Domain) Holds(s GroupShape) bool {
	if s.PerPod <= 0 {
		return true
	}
	var pods int64
	for _, n := range d.Free {
		if pods += n / s.PerPod; pods >= s.Pods {
			return true
		}
	}
	return pods >= s.Pods
}

// Stranded is the domain's free devices that a group of shape s could not
// use: all of them when the domain cannot hold the group, else those left
// on each node below a whole pod (free mod PerPod).
func (d Domain) Stranded(s GroupShape) int64 {
	if s.PerPod <= 0 {
		return 0
	}
	if !d.Holds(s) {
		return d.FreeDevices()
	}
	var left int64
	for _, n := range d.Free {
		left += n % s.PerPod
	}
	return left
}

// GroupLoss is the domain-level fragmentation of turning domains[i] into
// after, for groups of the given shapes of resource r (other resources'
// shapes are skipped): over the shapes, weighted by their share,
//
//   - whole: when domains[i] was whole and held the shape, 1 / (the whole
//     domains that held it): the share of the whole domains the shape
//     could use that this placement takes away;
//   - stranded: the growth of the devices the shape cannot use in the
//     domain (Stranded), as a share of the free devices of all domains.
//
// Both are in [0, 1] per shape (stranded can be negative: a placement may
// use up pieces no shape could use). Zero when no shape is of r.
func GroupLoss(shapes []GroupShape, r v1.ResourceName, domains []Domain, i int, after Domain) (whole, stranded float64) {
	whole, devices := GroupLossDevices(shapes, r, domains, i, after)
	var free int64
	for _, d := range domains {
		free += d.FreeDevices()
	}
	if free > 0 {
		stranded = devices / float64(free)
	}
	return whole, stranded
}

// GroupLossDevices is GroupLoss with the stranded term in devices (the
// expected growth of the devices the shapes cannot use in the domain), not
// as a share of the free ones.
func GroupLossDevices(shapes []GroupShape, r v1.ResourceName, domains []Domain, i int, after Domain) (whole, stranded float64) {
	var total float64
	for _, s := range shapes {
		if s.Resource == r && s.Weight > 0 {
			total += s.Weight
		}
	}
	if total == 0 {
		return 0, 0
	}
	before := domains[i]
	wasWhole := before.Whole()
	for _, s := range shapes {
		if s.Resource != r || s.Weight <= 0 {
			continue
		}
		share := s.Weight / total
		if wasWhole && before.Holds(s) && !after.Whole() {
			var n int
			for _, d := range domains {
				if d.Whole() && d.Holds(s) {
					n++
				}
			}
			whole += share / float64(n)
		}
		stranded += share * float64(after.Stranded(s)-before.Stranded(s))
	}
	return whole, stranded
}
