package sim_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	pt "github.com/gpufleet/gpufleet/internal/planner/plannertest"
	"github.com/gpufleet/gpufleet/internal/sim"
	"github.com/gpufleet/gpufleet/internal/sim/simcheck"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts in testdata/")

// monday is 2026-06-01 10:00 UTC, a Monday.
var monday = time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC)

// steady has fixed durations so transcripts read like a story: a node takes
// 5m to drain, 10m to install, 1m to report, 30m to soak (the default).
func steady() sim.Profile {
	return sim.Profile{
		Drain: sim.Fixed(5 * time.Minute), Install: sim.Fixed(10 * time.Minute),
		Report: sim.Fixed(time.Minute), Rollback: sim.Fixed(10 * time.Minute),
	}
}

func set(fn func(*v1alpha1.DriverRolloutSpec)) func(*sim.World) {
	return func(w *sim.World) { fn(&w.Rollout().Spec) }
}

func TestGoldenTranscripts(t *testing.T) {
	failing := steady()
	failing.InstallFailRate = 1
	hopeless := failing
	hopeless.RollbackFailRate = 1

	tests := []struct {
		name    string
		rollout *v1alpha1.DriverRollout
		nodes   []planner.Node
		profile sim.Profile
		script  []sim.Event
		// jobs run on the nodes from the start (a workload of no job
		// of its own: quiet), so that the transcript shows what the
		// planner makes of them.
		jobs []sim.HandJob
		want v1alpha1.RolloutPhase
	}{
		{
			name:    "happy-path",
			rollout: pt.Rollout("r1").Canary(1).Approved().Parallel(2).MaxUnavailable(2).Build(),
			nodes:   pt.Nodes("gpu", 4),
			want:    v1alpha1.PhaseCompleted,
		},
		{
			// OFED and the GPU driver in one maintenance per node: held,
			// drained once, OFED replaced by the Network Operator (the
			// node left cordoned), then the GPU driver flipped.
			name:    "ofed-and-driver-one-maintenance",
			rollout: pt.Rollout("r1").OFED(true).Canary(1).Approved().Parallel(2).MaxUnavailable(2).Build(),
			nodes:   ofedNodes(3, pt.Previous),
			want:    v1alpha1.PhaseCompleted,
		},
		{
			name: "window-closed-nothing-starts",
			// Starts on a Monday morning; the window is Saturday night in
			// Paris (UTC+2 in June), so the first node starts Sat 20:00 UTC.
			rollout: pt.Rollout("r1").Approved().Window("22:00", "06:00", "Europe/Paris", v1alpha1.Saturday).Build(),
			nodes:   pt.Nodes("gpu", 2),
			want:    v1alpha1.PhaseCompleted,
		},
		{
			name: "freeze-holds-then-releases",
			rollout: pt.Rollout("r1").Window("08:00", "18:00", "UTC").
				Freeze(monday.Add(-time.Hour), monday.Add(3*time.Hour), "launch day").Build(),
			nodes: pt.Nodes("gpu", 2),
			want:  v1alpha1.PhaseCompleted,
		},
		{
			name: "window-closes-mid-rollout",
			// One hour a night: one node fits, the one in flight at 23:00
			// finishes, the rest waits for the next night.
			rollout: pt.Rollout("r1").Window("22:00", "23:00", "UTC").Build(),
			nodes:   pt.Nodes("gpu", 3),
			want:    v1alpha1.PhaseCompleted,
		},
		{
			name:    "bad-driver-stopped-at-canary",
			rollout: pt.Rollout("r1").Canary(1).Approved().Budget(2).Build(),
			nodes:   pt.Nodes("gpu", 3),
			profile: failing,
			want:    v1alpha1.PhaseStalled,
		},
		{
			name:    "approval-wrong-name-then-right",
			rollout: pt.Rollout("r2026-06-h100").Canary(1).Build(),
			nodes:   pt.Nodes("gpu", 3),
			script: []sim.Event{
				{At: 2 * time.Hour, What: `approval set to "r2026-06-a100"`, Do: set(func(s *v1alpha1.DriverRolloutSpec) { s.Approval = "r2026-06-a100" })},
				{At: 3 * time.Hour, What: `approval set to "r2026-06-h100"`, Do: set(func(s *v1alpha1.DriverRolloutSpec) { s.Approval = "r2026-06-h100" })},
			},
			want: v1alpha1.PhaseCompleted,
		},
		{
			name:    "xid-during-soak-rolls-back",
			rollout: pt.Rollout("r1").Budget(1).Build(),
			nodes:   pt.Nodes("gpu", 3),
			script: []sim.Event{{At: 70 * time.Minute, Do: func(w *sim.World) {
				w.Signal("gpu-01", "event", "XidError", "Xid 48: double bit ECC error")
			}}},
			want: v1alpha1.PhaseCompletedWithFailures,
		},
		{
			name:    "rollback-fails-quarantine",
			rollout: pt.Rollout("r1").Budget(0).Build(),
			nodes:   pt.Nodes("gpu", 2),
			profile: hopeless,
			want:    v1alpha1.PhaseStalled,
		},
		{
			name:    "budget-exhausted-stops",
			rollout: pt.Rollout("r1").Budget(1).Build(),
			nodes:   pt.Nodes("gpu", 4),
			profile: failing,
			want:    v1alpha1.PhaseStalled,
		},
		{
			name:    "pause-and-resume",
			rollout: pt.Rollout("r1").Build(),
			nodes:   pt.Nodes("gpu", 3),
			script: []sim.Event{
				{At: 30 * time.Minute, What: "spec.paused set", Do: set(func(s *v1alpha1.DriverRolloutSpec) { s.Paused = true })},
				{At: 3 * time.Hour, What: "spec.paused cleared", Do: set(func(s *v1alpha1.DriverRolloutSpec) { s.Paused = false })},
			},
			want: v1alpha1.PhaseCompleted,
		},
		{
			name:    "abort-rolls-back-upgraded-nodes",
			rollout: pt.Rollout("r1").Build(),
			nodes:   pt.Nodes("gpu", 4),
			script: []sim.Event{
				{At: 80 * time.Minute, What: "spec.abort set", Do: set(func(s *v1alpha1.DriverRolloutSpec) { s.Abort = true })},
			},
			want: v1alpha1.PhaseAborted,
		},
		{
			name: "cordoned-and-notready-eat-max-unavailable",
			// gpu-01 was cordoned by an admin, gpu-03 is NotReady for three
			// hours and gpu-05 is under remediation: three out with
			// maxUnavailable 2, so nothing starts. When gpu-03 is back the
			// cordoned node goes first (it costs nothing) and stays
			// cordoned after; the rest go one at a time once gpu-05 is out
			// of remediation, as gpu-01 still counts.
			rollout: pt.Rollout("r1").Parallel(2).MaxUnavailable(2).OutOfService("gpufleet.io/remediation", "true").Build(),
			nodes: []planner.Node{
				pt.Node("gpu-00").Build(),
				pt.Node("gpu-01").Cordoned().Build(),
				pt.Node("gpu-02").Build(),
				pt.Node("gpu-03").NotReady().Build(),
				pt.Node("gpu-04").Build(),
				pt.Node("gpu-05").Labels(v1alpha1.LabelPool, pt.Pool, v1alpha1.LabelDriver, pt.Previous, "gpufleet.io/remediation", "true").Build(),
			},
			script: []sim.Event{
				{At: 3 * time.Hour, Do: func(w *sim.World) { w.SetReady("gpu-03", true) }},
				{At: 5 * time.Hour, Do: func(w *sim.World) { w.SetLabel("gpu-05", "gpufleet.io/remediation", "") }},
			},
			want: v1alpha1.PhaseCompleted,
		},
		{
			// The idle nodes go first, then the one with the least GPU
			// work in flight: 1 GPU for 10 minutes before 8 for 5 hours.
			name:    "cheapest-nodes-first",
			rollout: pt.Rollout("r1").Parallel(1).MaxUnavailable(1).Build(),
			nodes:   pt.Nodes("gpu", 4),
			jobs: []sim.HandJob{
				{Nodes: []string{"gpu-00"}, GPUs: 8, Ran: 5 * time.Hour, Left: 20 * time.Hour, Checkpoint: time.Hour},
				{Nodes: []string{"gpu-01"}, GPUs: 1, Ran: 10 * time.Minute, Left: 20 * time.Hour},
			},
			want: v1alpha1.PhaseCompleted,
		},
		{
			// gpu-00's batch job has 40 minutes left: its drain waits for
			// it (cordoned, counted against maxUnavailable), then drains;
			// gpu-01's job of 5 hours outlasts the 1h wait and is evicted.
			name:    "drain-waits-for-jobs",
			rollout: pt.Rollout("r1").Parallel(2).MaxUnavailable(2).WaitForJobs("kind", "batch", time.Hour).Build(),
			nodes:   pt.Nodes("gpu", 2),
			jobs: []sim.HandJob{
				{Nodes: []string{"gpu-00"}, GPUs: 4, Ran: 20 * time.Minute, Left: 40 * time.Minute, Labels: map[string]string{"kind": "batch"}},
				{Nodes: []string{"gpu-01"}, GPUs: 4, Ran: 20 * time.Minute, Left: 5 * time.Hour, Labels: map[string]string{"kind": "batch"}},
			},
			want: v1alpha1.PhaseCompleted,
		},
		{
			// Two NVLink domains of four: the canary is the whole first
			// domain, each domain starts, and returns, as one.
			name:    "maintenance-domains-move-as-one",
			rollout: pt.Rollout("r1").Canary(1).Approved().Parallel(4).MaxUnavailable(4).Domains(pt.CliqueLabel, 4).Build(),
			nodes:   domainNodes(8, 4),
			jobs: []sim.HandJob{
				{Nodes: []string{"gpu-00", "gpu-01", "gpu-02", "gpu-03"}, GPUs: 8, Ran: 90 * time.Minute, Left: 20 * time.Hour, Checkpoint: time.Hour, Domain: true},
			},
			want: v1alpha1.PhaseCompleted,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prof := tt.profile
			if prof == (sim.Profile{}) {
				prof = steady()
			}
			check := simcheck.NewChecker()
			cfg := sim.Config{
				Rollout: tt.rollout, Nodes: tt.nodes, Start: monday, Profile: prof,
				Script: tt.script, Record: true,
			}
			if tt.jobs != nil {
				cfg.Workload = quiet()
				cfg.Workload.DomainLabel = pt.CliqueLabel
				for _, hj := range tt.jobs {
					cfg.Script = append(cfg.Script, sim.Event{At: 0, Do: func(w *sim.World) { sim.StartJob(w, hj) }})
				}
			}
			res, err := sim.RunHooked(sim.Hooked{Config: cfg, Hooks: sim.Hooks{Observe: check.Step}})
			if err != nil {
				t.Fatal(err)
			}
			check.Final(tt.rollout, res.Nodes)
			if v := check.Violations(); len(v) > 0 {
				t.Errorf("invariants broken:\n%s", v)
			}
			if res.Phase != tt.want {
				t.Errorf("phase = %s, want %s", res.Phase, tt.want)
			}
			golden(t, filepath.Join("testdata", tt.name+".golden"), res.TranscriptText())
		})
	}
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

// TestOperatorCanaryUpgradedBeforeItsHold: nodes that carry no skip label
// when the new driver arrives (no rollout held them) are taken by the
// operator at once, the canary among them; the canary is then up to date
// and never marked upgrade-required again. The rollout must not wait for
// that for ever: the canary soaks where it is, and the rollout completes.
func TestOperatorCanaryUpgradedBeforeItsHold(t *testing.T) {
	nodes := sim.Nodes(50, "gpu", map[string]string{v1alpha1.LabelPool: pt.Pool}, pt.Previous)
	ro := pt.Rollout("r").Canary(1).Parallel(10).MaxUnavailablePercent("20%").Budget(5).Build()
	ro.Spec.Actuator = v1alpha1.ActuatorGPUOperator
	res, err := sim.Run(sim.Config{Rollout: ro, Nodes: nodes, Start: monday, Seed: 1, Profile: sim.DefaultProfile(), Tick: time.Minute, ApproveWhenAsked: true, Record: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Phase != v1alpha1.PhaseCompleted {
		t.Fatalf("phase %s (%s), want Completed", res.Phase, res.Status.Progress)
	}
	soaked := false
	for _, l := range res.Transcript {
		if l.Who == res.Status.Canary.Nodes[0] && strings.Contains(l.Text, "Pending → Soaking") {
			soaked = true
		}
	}
	if !soaked {
		t.Errorf("canary %v never soaked in place", res.Status.Canary.Nodes)
	}
}
