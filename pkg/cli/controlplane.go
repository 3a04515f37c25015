package cli

import (
	"fmt"

	"k8s.io/client-go/discovery"

	"github.com/devicefit/devicefit/pkg/support"
)

// ControlPlaneLines say which Kubernetes the cluster runs and, one line
// each, the device features its API server does not serve, as the
// scheduler logs them at startup: both come from pkg/support, with the
// feature gates the scheduler has there by default (a scheduler started
// with --feature-gates of its own may differ; its log says what it runs
// with). A server outside the supported range is one line saying so.
func ControlPlaneLines(dc discovery.DiscoveryInterface) ([]string, error) {
	c, err := support.Discover(dc)
	if err != nil {
		return nil, err
	}
	features, _, err := support.DefaultFeatures(c)
	if err != nil {
		return []string{"Control plane: " + err.Error()}, nil
	}
	lines := []string{fmt.Sprintf("Control plane: Kubernetes %s (devicefit supports %s).", c.GitVersion, support.RangeString())}
	for _, f := range features {
		if !f.On {
			lines = append(lines, f.Line(c)+".")
		}
	}
	return lines, nil
}
