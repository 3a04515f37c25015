package devicefit

import (
	"fmt"

	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/devices"
)

const preFilterStateKey fwk.StateKey = "PreFilter" + Name

// preFilterState is computed once per pod and read by Filter for every node.
// It is never modified after PreFilter, so Clone can share it.
type preFilterState struct {
	demand devices.Demand
	// labels[i] holds the label keys describing demand[i].Name's devices.
	labels   []devices.DeviceLabels
	selector devices.Selector
	// deviceFree marks a pod without devices under deviceNodePolicy Require.
	deviceFree bool
}

// Clone implements fwk.StateData.
func (s *preFilterState) Clone() fwk.StateData { return s }

func getPreFilterState(cycleState fwk.CycleState) (*preFilterState, error) {
	c, err := cycleState.Read(preFilterStateKey)
	if err != nil {
		return nil, fmt.Errorf("reading %q from cycleState: %w", preFilterStateKey, err)
	}
	s, ok := c.(*preFilterState)
	if !ok {
		return nil, fmt.Errorf("%+v convert to devicefit.preFilterState error", c)
	}
	return s, nil
}
