//go:build tools

// Package tools pins the Flux controllers so that the wrapper module's go.mod
// and go.sum list everything their builds need.
package tools

import (
	_ "github.com/fluxcd/image-automation-controller"
	_ "github.com/fluxcd/image-reflector-controller"
	_ "github.com/fluxcd/kustomize-controller"
	_ "github.com/fluxcd/notification-controller"
	_ "github.com/fluxcd/source-controller"
)
