//go:build !linux

package testbed

import "syscall"

// sysProcAttr puts the child in its own process group so stop can signal it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
