//go:build !linux

package controller

import "time"

// threadCPU is not measured off Linux.
func threadCPU() time.Duration { return 0 }
