//go:build tools

// Package tools pins helm, built by the Makefile ($(BIN)/helm) from this
// module so that helm's dependency graph (its own k8s.io/* versions) never
// enters the main module's go.mod.
package tools

import _ "helm.sh/helm/v4/cmd/helm"
