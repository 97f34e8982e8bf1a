package fleettest

import (
	"syscall"
	"testing"
	"time"
)

// CPUTime reports, when the returned function is called at the end of a
// benchmark, the CPU seconds (user and system, every thread) the process
// spent per operation since CPUTime was called, as "cpu-s/op". On a shared
// machine the wall time of ns/op grows with everything else running; the
// CPU time is the work the benchmark itself did.
func CPUTime(b *testing.B) (report func()) {
	start := cpuNow()
	return func() {
		if b.N > 0 {
			b.ReportMetric((cpuNow()-start).Seconds()/float64(b.N), "cpu-s/op")
		}
	}
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
