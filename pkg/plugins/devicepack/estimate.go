package devicepack

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/devicefit/devicefit/pkg/apis/config"
	"github.com/devicefit/devicefit/pkg/devices"
)

// EstimateWorkload is the job distribution devicefit_devices counts
// stranded devices against, made of pods (the jobs bound and pending now):
// the scheduler computes it from its cache at scrape time, and tools that
// read the API server only (kubectl devicefit inventory) from a list, so
// both say the same. A Static workload is the args' classes. An Observed
// one is its prior plus each device pod of pods once, classed as
// DevicePack's PreFilter classes it, all with the same weight. (What
// DevicePack scores with is its own histogram, which weighs the n-th pod it
// saw 2^(n/halfLifePods) and remembers pods that are gone: a model of the
// arrivals, not a count of what is there.) nil when no class is known (an
// Observed workload with no prior and no device pod): no device is known
// to be stranded.
func EstimateWorkload(args *config.DevicePackArgs, pods []*v1.Pod) (*devices.Workload, error) {
	set, err := devices.NewResourceSet(args.DeviceResources)
	if err != nil {
		return nil, err
	}
	w, err := newWorkload(args.Workload)
	if err != nil {
		return nil, err
	}
	if w.observed {
		// Each pod once, with the same weight: count the pods per class,
		// then add the counts, so that the weights are exact whatever the
		// order of pods. A selector is parsed once per distinct text.
		counts := map[classKey]float64{}
		selectors := map[string]*devices.Selector{}
		for _, p := range pods {
			if p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
				continue
			}
			if !asksForDevices(p, set) {
				// Most pods of a cluster: no need to compute their requests.
				continue
			}
			demand, err := devices.PodDemand(p, set)
			if err != nil || len(demand) == 0 {
				continue
			}
			key := selectorKey(p.Annotations)
			sel, seen := selectors[key]
			if !seen {
				if parsed, err := devices.ParseSelector(p.Annotations); err == nil {
					sel = &parsed
				}
				// nil: the scheduler rejects such a pod before observing it.
				selectors[key] = sel
			}
			if sel == nil {
				continue
			}
			cpu, mem := cpuAndMemory(p)
			counts[classOf(demand, cpu, mem, key)]++
		}
		for k, n := range counts {
			w.add(k, *selectors[k.selector], devices.CapacityRequest{}, n)
		}
	}
	var total float64
	for _, c := range w.classes {
		total += c.weight
	}
	if total == 0 {
		return nil, nil
	}
	wl, err := w.snapshot()
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	return wl, nil
}

// asksForDevices reports whether some container of the pod names a device
// resource in its requests or limits: PodDemand has something to say.
func asksForDevices(p *v1.Pod, set devices.ResourceSet) bool {
	check := func(cs []v1.Container) bool {
		for i := range cs {
			for name := range cs[i].Resources.Requests {
				if set.Contains(name) {
					return true
				}
			}
			for name := range cs[i].Resources.Limits {
				if set.Contains(name) {
					return true
				}
			}
		}
		return false
	}
	return check(p.Spec.Containers) || check(p.Spec.InitContainers)
}

// cpuAndMemory is requests(p), summing the app containers in place when
// that is all PodRequests would do (no init containers, overhead or
// pod-level resources), which saves its maps.
func cpuAndMemory(p *v1.Pod) (milliCPU, memoryBytes int64) {
	if len(p.Spec.InitContainers) > 0 || p.Spec.Overhead != nil || p.Spec.Resources != nil {
		return requests(p)
	}
	for i := range p.Spec.Containers {
		r := p.Spec.Containers[i].Resources.Requests
		cpu, mem := r[v1.ResourceCPU], r[v1.ResourceMemory]
		milliCPU += cpu.MilliValue()
		memoryBytes += mem.Value()
	}
	return milliCPU, memoryBytes
}
