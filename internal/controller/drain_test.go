package controller

import (
	"testing"
	"time"
)

// TestDrainReads checks the pacing of the direct reads of a draining
// node's pods: a read that found pods left is reused until DrainRetry has
// passed, one that found the node drained never is (a pass that failed to
// act on it must see it again at once), and a clock moved back reads
// again.
func TestDrainReads(t *testing.T) {
	var d drainReads
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	const every = 5 * time.Second
	if _, ok := d.recent("n1", t0, every); ok {
		t.Fatal("a node never read counts as read")
	}
	d.record("n1", 2, t0, every)
	if left, ok := d.recent("n1", t0.Add(4*time.Second), every); !ok || left != 2 {
		t.Fatalf("within DrainRetry: %d, %v; want 2, true", left, ok)
	}
	if _, ok := d.recent("n1", t0.Add(every), every); ok {
		t.Fatal("a read DrainRetry old is reused")
	}
	if _, ok := d.recent("n1", t0.Add(-time.Second), every); ok {
		t.Fatal("a read from the future is reused")
	}
	d.record("n1", 0, t0, every)
	if _, ok := d.recent("n1", t0.Add(time.Millisecond), every); ok {
		t.Fatal("a read that found the node drained is reused")
	}
	d.record("n2", 1, t0, every)
	d.record("n3", 1, t0.Add(11*every), every)
	if _, ok := d.last["n2"]; ok {
		t.Fatal("a read long past is kept")
	}
}
