package fleettest

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"time"
)

// SamplePeakHeap samples the bytes of live and not yet swept heap objects
// every 2 ms until the returned function is called, which returns the
// most it saw: the peak memory of a benchmark's operations, which B/op
// (every byte allocated) only bounds from above.
func SamplePeakHeap() (stop func() float64) {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var (
		mu   sync.Mutex
		peak uint64
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	read := func() {
		metrics.Read(sample)
		mu.Lock()
		peak = max(peak, sample[0].Value.Uint64())
		mu.Unlock()
	}
	wg.Go(func() {
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				read()
			}
		}
	})
	return func() float64 {
		read()
		close(done)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return float64(peak)
	}
}
