package validation

import (
	"fmt"
	"os"

	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/devicefit/devicefit/pkg/apis/config/scheme"
)

// ValidateConfigFile decodes a KubeSchedulerConfiguration file and validates
// its devicefit args with full field paths. An empty path (no --config) is
// fine. A file that does not decode is left to the scheduler, which reports
// it in its own words.
func ValidateConfigFile(path string) error {
	if path == "" {
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	obj, _, err := scheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil
	}
	cfg, ok := obj.(*schedconfig.KubeSchedulerConfiguration)
	if !ok {
		return nil
	}
	if err := ValidateConfiguration(cfg); err != nil {
		return fmt.Errorf("invalid devicefit plugin args in %s: %w", path, err)
	}
	return nil
}
