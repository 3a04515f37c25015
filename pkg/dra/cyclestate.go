package dra

import (
	"context"
	"slices"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/devices"
)

// stateKey holds the cycle's View, so that DeviceFit (PreFilter) and
// DevicePack (PreScore) walk the slices once per pod between them.
const stateKey fwk.StateKey = "devicefit.io/dra-view"

type viewState struct{ view *View }

// Clone implements fwk.StateData. The view is shared: only the serial
// phases use it.
func (s *viewState) Clone() fwk.StateData { return s }

// ForCycle returns the cycle's view: the one an earlier plugin of the cycle
// wrote, or a new one from t, written for the plugins after. nil (and no
// error) when the cluster has no ResourceSlice.
func ForCycle(ctx context.Context, cs fwk.CycleState, t *Tracker, m fwk.SharedDRAManager) (*View, error) {
	if cs != nil {
		if s, err := cs.Read(stateKey); err == nil {
			if vs, ok := s.(*viewState); ok {
				return vs.view, nil
			}
		}
	}
	v, err := t.View(ctx, m)
	if err != nil {
		return nil, err
	}
	if cs != nil {
		cs.Write(stateKey, &viewState{view: v})
	}
	return v, nil
}

// requestsKey holds the pod's DRA requests for the cycle (PodRequestsFor).
const requestsKey fwk.StateKey = "devicefit.io/dra-requests"

type requestsState struct {
	view   *View
	pod    *v1.Pod
	demand devices.Demand
	reqs   []Request
	err    error
}

// Clone implements fwk.StateData; the state is never modified once written.
func (s *requestsState) Clone() fwk.StateData { return s }

// PodRequestsFor is v.PodRequests(pod, demand) once per cycle: DevicePack's
// PreFilter (the observed workload) and PreScore both read the pod's claims
// through it, and a claim is looked up once. It is computed again for
// another view, pod object or demand.
func PodRequestsFor(cs fwk.CycleState, v *View, pod *v1.Pod, demand devices.Demand) ([]Request, error) {
	if cs != nil {
		if d, err := cs.Read(requestsKey); err == nil {
			if s, ok := d.(*requestsState); ok && s.view == v && s.pod == pod && slices.Equal(s.demand, demand) {
				return s.reqs, s.err
			}
		}
	}
	reqs, err := v.PodRequests(pod, demand)
	if cs != nil {
		cs.Write(requestsKey, &requestsState{view: v, pod: pod, demand: demand, reqs: reqs, err: err})
	}
	return reqs, err
}
