package localup

import (
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/discovery"

	"github.com/devicefit/devicefit/pkg/support"
)

// demoFeature is a device feature that some fixtures and pods of the demo
// need, named as support.Features names it (the start of the name). The run
// shows only what the control plane serves by default: on an older minor a
// fixture of a feature it does not serve is refused at create (a
// DeviceClass whose CEL reads device.allowMultipleAllocations on 1.35) or,
// worse, stored without the fields that make it what it is (the API server
// drops the fields of a disabled gate), and a pod that needs it could only
// stay pending. So each is left out with its pods, and the report says so.
type demoFeature string

const (
	featureDRA           demoFeature = "Dynamic Resource Allocation"
	featureExtended      demoFeature = "DRA-backed extended resources"
	featurePartitionable demoFeature = "Partitionable devices"
	featureConsumable    demoFeature = "Consumable capacity"
	featureRouting       demoFeature = "Routing policy"
)

// demoFeatures are the features the device mix uses, in support.Features'
// order. The Workload API is --workload's, which asks for it by flag.
var demoFeatures = []demoFeature{featureDRA, featureExtended, featurePartitionable, featureConsumable, featureRouting}

// served is which demo features the control plane serves. A fixture or
// class that needs none (needs == "") is served everywhere.
type served map[demoFeature]bool

func (s served) has(f demoFeature) bool { return f == "" || s[f] }

// allServed is a control plane of the binaries' own minor, which serves
// every demo feature.
func allServed() served {
	s := served{}
	for _, f := range demoFeatures {
		s[f] = true
	}
	return s
}

// servedOf reads support.Features: the demo features that are on, and those
// that are off as support has them (for their Line). A demo feature
// support no longer names is an error rather than off: a renamed row there
// would otherwise leave fixtures out on every minor without a word.
func servedOf(features []support.Feature) (served, []support.Feature, error) {
	s := served{}
	var off []support.Feature
	for _, want := range demoFeatures {
		found := false
		for _, f := range features {
			if !strings.HasPrefix(f.Name, string(want)) {
				continue
			}
			found = true
			s[want] = f.On
			if !f.On {
				off = append(off, f)
			}
		}
		if !found {
			return nil, nil, fmt.Errorf("support.Features names no feature %q", want)
		}
	}
	return s, off, nil
}

// controlPlaneFeatures reads the API server's version and resources, and
// the device features it serves with the feature gates devicefit-scheduler
// takes there (it emulates an older minor: support.Emulation). emulate is
// that minor, nil for the binaries' own.
func controlPlaneFeatures(dc discovery.DiscoveryInterface) (c *support.Cluster, emulate *version.Version, features []support.Feature, err error) {
	if c, err = support.Discover(dc); err != nil {
		return nil, nil, nil, err
	}
	if features, emulate, err = support.DefaultFeatures(c); err != nil {
		return nil, nil, nil, err
	}
	return c, emulate, features, nil
}

// printFeaturesOff writes one line per demo feature the control plane does
// not serve, as devicefit-scheduler logs it (Feature.Line).
func printFeaturesOff(out io.Writer, c *support.Cluster, off []support.Feature) {
	if len(off) == 0 {
		fmt.Fprintf(out, "Every device feature of the demo is served (%s).\n", c.Minor())
		return
	}
	fmt.Fprintf(out, "Left out of the fleet and the workload, with the pods that need them (%d device features off):\n", len(off))
	for _, f := range off {
		fmt.Fprintf(out, "  - %s\n", f.Line(c))
	}
}
