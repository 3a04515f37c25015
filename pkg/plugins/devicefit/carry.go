package devicefit

import (
	"strings"

	fwk "k8s.io/kube-scheduler/framework"

	"github.com/devicefit/devicefit/pkg/plugins/shared"
	"github.com/devicefit/devicefit/pkg/plugins/upstream"
)

// handOver gives the candidate list to shared.ListCarrier when it runs
// PreFilter after DeviceFit in the profile (shared/carry.go says why): the
// Verdict carries the list and DeviceFit returns none. Lists of a pod
// with a DRA-served request stay: their queueing hints read slices and
// claims, which the carrier does not register.
func (pl *DeviceFit) handOver(s *preFilterState, res *fwk.PreFilterResult) (returned, handed *fwk.PreFilterResult) {
	if res == nil || s.dra != nil || len(s.demand) == 0 || !pl.carrierFollows() {
		return res, nil
	}
	s.handed = true
	return nil, res
}

// carrierFollows reports whether shared.ListCarrier runs PreFilter after
// DeviceFit in the profile, found once: the plugin lists are fixed when
// the framework is built, but not yet when its plugins are.
func (pl *DeviceFit) carrierFollows() bool {
	pl.carrierOnce.Do(func() {
		list := upstream.Plugins(pl.handle)
		if list == nil {
			return
		}
		self := false
		for _, p := range list.PreFilter.Enabled {
			switch p.Name {
			case Name:
				self = true
			case shared.ListCarrier:
				pl.carrier = self
			}
		}
	})
	return pl.carrier
}

// OwnAbsentStatus is st, the framework's status for the nodes no PreFilter
// list named ("didn't satisfy plugin(s) [...]"), with DeviceFit named in
// place of the carrier when DeviceFit's list changed hands in the cycle:
// the carrier returned it, the verdicts that left those nodes out are
// DeviceFit's.
func OwnAbsentStatus(cs fwk.CycleState, st *fwk.Status) *fwk.Status {
	s, err := getPreFilterState(cs)
	if err != nil || !s.handed || st == nil || !strings.Contains(st.Message(), shared.ListCarrier) {
		return st
	}
	return fwk.NewStatus(st.Code(), strings.Replace(st.Message(), shared.ListCarrier, Name, 1))
}
