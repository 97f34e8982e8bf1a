package testbed

import "syscall"

// sysProcAttr puts the child in its own process group (so stop can signal
// the group) and asks the kernel to kill it if the test binary dies without
// running its cleanups, so no controller outlives a crashed test.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
