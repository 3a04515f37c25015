// Package scheme registers the devicefit plugin args into the kube-scheduler
// config scheme. Import it for its side effect wherever a
// KubeSchedulerConfiguration that names a devicefit plugin is decoded: the
// scheduler binary (through the plugin packages), tests and the replay tool.
package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	schedscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	schedconfigv1 "k8s.io/kubernetes/pkg/scheduler/apis/config/v1"

	"github.com/devicefit/devicefit/pkg/apis/config"
	configv1 "github.com/devicefit/devicefit/pkg/apis/config/v1"
)

var (
	// Scheme is the upstream kube-scheduler config scheme, with our args added.
	Scheme = schedscheme.Scheme
	// Codecs decodes KubeSchedulerConfiguration files, strictly, as upstream does.
	Codecs = schedscheme.Codecs
)

func init() {
	AddToScheme(Scheme)
	// The in-tree v1 conversion of KubeSchedulerConfiguration converts each
	// typed pluginConfig args through a second, private scheme
	// (GetPluginArgConversionScheme); our args must be known there too or the
	// conversion fails with "no kind is registered".
	AddToScheme(schedconfigv1.GetPluginArgConversionScheme())
}

// AddToScheme adds the internal and v1 devicefit args to scheme.
func AddToScheme(scheme *runtime.Scheme) {
	utilruntime.Must(config.AddToScheme(scheme))
	utilruntime.Must(configv1.AddToScheme(scheme))
}
