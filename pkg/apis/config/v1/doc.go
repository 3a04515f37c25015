// Package v1 holds the versioned (JSON/YAML) devicefit plugin args in
// kubescheduler.config.k8s.io/v1, with their defaults and conversions to the
// internal types in pkg/apis/config.
package v1
