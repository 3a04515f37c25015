// Package v1alpha1 holds DefragmenterConfiguration, the configuration file
// of devicefit-defragmenter (cmd/devicefit-defragmenter), in devicefit.io/v1alpha1.
// It has one version and no internal hub: the controller reads the
// versioned type directly, defaulted (SetObjectDefaults) and validated
// (pkg/apis/defragmenter/validation) with field paths.
//
// +k8s:deepcopy-gen=package
// +k8s:defaulter-gen=TypeMeta
// +groupName=devicefit.io
package v1alpha1
