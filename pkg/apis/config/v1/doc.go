// Package v1 holds the versioned (JSON/YAML) devicefit plugin args in
// kubescheduler.config.k8s.io/v1, with their defaults and conversions to the
// internal types in pkg/apis/config.
//
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/devicefit/devicefit/pkg/apis/config
// +k8s:defaulter-gen=TypeMeta
// +groupName=kubescheduler.config.k8s.io
package v1
