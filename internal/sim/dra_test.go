package sim_test

import (
	"strings"
	"testing"
	"time"

	pt "github.com/gpufleet/gpufleet/internal/planner/plannertest"
	"github.com/gpufleet/gpufleet/internal/sim"
)

// firstStart is the node the rollout started first, from the transcript.
func firstStart(t *testing.T, res *sim.Result) string {
	t.Helper()
	for _, l := range res.Transcript {
		if strings.HasPrefix(l.Text, "Pending → Draining") {
			return l.Who
		}
	}
	t.Fatalf("no node started: %v", res.Transcript)
	return ""
}

// TestDRAJobsAreGPUPods: a job holding its GPUs through a claim of
// NVIDIA's DRA driver is a GPU pod to the controller: its node costs what
// it runs (the idle node goes first) and its drain evicts it, counted. A
// job whose claim is of a driver the rollout does not take for a GPU is
// not: its node looks idle and goes first, by name, and the job runs on
// through the drain until the driver is swapped under it.
func TestDRAJobsAreGPUPods(t *testing.T) {
	job := func(claim string) sim.HandJob {
		return sim.HandJob{Nodes: []string{"gpu-00"}, GPUs: 4, Ran: 2 * time.Hour, Left: 10 * time.Hour, Checkpoint: time.Hour, Claim: claim}
	}
	cfg := sim.Config{Rollout: pt.Rollout("r").Build(), Nodes: pt.Nodes("gpu", 2), Start: monday, Profile: steady(), Record: true}
	for _, tt := range []struct {
		claim, first string
	}{
		{"", "gpu-01"},
		{"gpu.nvidia.com", "gpu-01"},
		{"gpu.example.com", "gpu-00"},
	} {
		res := withJobs(t, cfg, job(tt.claim))
		if got := firstStart(t, res); got != tt.first {
			t.Errorf("claim %q: %s started first, want %s", tt.claim, got, tt.first)
		}
		if w := res.Workload; w.JobsInterrupted != 1 {
			t.Errorf("claim %q: %+v, want the job interrupted once (by its drain, or by the swap under it)", tt.claim, *w)
		}
	}
	// Named among the GPU drivers, the vendor's claim is a GPU pod too.
	work := quiet()
	work.DRADrivers = []string{"gpu.example.com"}
	cfg.Workload = work
	if got := firstStart(t, withJobs(t, cfg, job("gpu.example.com"))); got != "gpu-01" {
		t.Errorf("a claim of a driver the workload names as a GPU driver: %s started first, want gpu-01", got)
	}
}
