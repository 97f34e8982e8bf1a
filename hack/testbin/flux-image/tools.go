//go:build tools

// Package tools pins the Flux image automation and notification controllers
// so that the wrapper module's go.mod and go.sum list everything their builds
// need.
package tools

import (
	_ "github.com/fluxcd/image-automation-controller"
	_ "github.com/fluxcd/image-reflector-controller"
	_ "github.com/fluxcd/notification-controller"
)
