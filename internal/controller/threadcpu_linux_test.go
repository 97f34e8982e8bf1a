package controller

import (
	"syscall"
	"time"
)

// threadCPU is the CPU time the calling OS thread has used (lock the
// goroutine to its thread around the work measured). On a machine shared
// with other work a pass's wall time says more about the neighbours than
// about the pass; its CPU time does not.
func threadCPU() time.Duration {
	const rusageThread = 1 // RUSAGE_THREAD
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
