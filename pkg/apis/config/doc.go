// Package config holds the internal (hub) types of the devicefit plugin args.
// They live in the kube-scheduler config group, kubescheduler.config.k8s.io, so
// that a KubeSchedulerConfiguration pluginConfig entry named after a plugin
// decodes into "<Plugin>Args" exactly as the in-tree plugin args do.
//
// +k8s:deepcopy-gen=package
package config
