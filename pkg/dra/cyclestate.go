package dra

import (
	"context"

	fwk "k8s.io/kube-scheduler/framework"
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
