package verify

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/promote"
)

// gateCall is one call of a test's gate.
type gateCall struct {
	clusters []string
	// rollout is where the fleet the gate judged stood.
	rollout string
}

// fakeGate answers every call with status for each cluster, and records
// the calls.
func fakeGate(status gate.Status, calls *[]gateCall) GateFunc {
	return func(_ context.Context, f *fleet.Fleet, clusters []string, revision string) *gate.Report {
		*calls = append(*calls, gateCall{clusters: clusters, rollout: stateKey(f.Promotion)})
		rep := &gate.Report{Revision: revision, Clusters: clusters}
		for _, c := range clusters {
			rep.Checks = append(rep.Checks, gate.Check{Cluster: c, Name: gate.PoolDriverCheck("h100"), Status: status, Expected: "driver 570.172.08", Observed: "node h100-1 on 580.95.05", Message: "1 node not on the release's driver"})
		}
		return rep
	}
}

// findingsOf lists the findings of kind, as "step | message".
func findingsOf(r *Report, kind string) []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Kind == kind {
			out = append(out, f)
		}
	}
	return out
}

func status(r *Report) map[string]string {
	out := map[string]string{}
	for _, c := range r.Checks {
		out[c.Name] = c.Status
	}
	return out
}

// lineOf is the 1-based line of the fleet file that contains text.
func lineOf(t *testing.T, file, text string) int {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(l, text) {
			return i + 1
		}
	}
	t.Fatalf("%s has no line with %q", file, text)
	return 0
}

// TestVerifyBranches runs verify on a fleet repository with a branch per
// case, each compared with main, where r2026-10 has started at staging.
func TestVerifyBranches(t *testing.T) {
	r := newFleetRepo(t)
	r.apply(start("r2026-10"), "")

	t.Run("made by the commands", func(t *testing.T) {
		r.branch("by-commands")
		r.apply(approve("r2026-10/prod-h100"), "")
		r.apply(promote.Promote, "")
		var calls []gateCall
		rep := r.verify(Options{Gate: fakeGate(gate.Pass, &calls)})
		if rep.ExitCode() != ExitOK {
			t.Fatalf("exit %d: %+v", rep.ExitCode(), rep)
		}
		var got []string
		for _, s := range rep.Steps {
			got = append(got, s.Summary+" gate="+strings.Join(s.Gate, ",")+" "+s.GateStatus+" commit="+short(s.Commit))
		}
		head := r.git("rev-parse", "HEAD")
		want := []string{
			"approve r2026-10/prod-h100 gate=  commit=" + short(r.git("rev-parse", "HEAD~1")),
			"promote r2026-10 to wave prod-h100, canary cluster prod-h100-a gate=stg-h100 passed commit=" + short(head),
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("steps (-want +got):\n%s", diff)
		}
		// The gate judges the state the promote started from: after the
		// approval, before the promote.
		if len(calls) != 1 || !strings.Contains(calls[0].rollout, "rollout=r2026-10@staging/all") || !strings.Contains(calls[0].rollout, "approved=r2026-10/prod-h100") {
			t.Errorf("gate calls: %+v", calls)
		}
		if diff := cmp.Diff(map[string]string{CheckRendered: StatusPassed, CheckValidate: StatusSkipped, CheckLint: StatusPassed, CheckPromotion: StatusPassed, CheckClusters: StatusPassed, CheckGate: StatusPassed}, status(rep)); diff != "" {
			t.Errorf("checks (-want +got):\n%s", diff)
		}
	})

	t.Run("gate failing now", func(t *testing.T) {
		r.branch("by-commands-gate-fails")
		r.apply(approve("r2026-10/prod-h100"), "")
		r.apply(promote.Promote, "")
		var calls []gateCall
		rep := r.verify(Options{Gate: fakeGate(gate.Fail, &calls)})
		if rep.ExitCode() != ExitFailed {
			t.Fatalf("exit %d, want 1", rep.ExitCode())
		}
		g := findingsOf(rep, CheckGate)
		if len(g) != 1 || !strings.Contains(g[0].Message, "cluster stg-h100, check nodes") || g[0].Step != "promote r2026-10 to wave prod-h100, canary cluster prod-h100-a" {
			t.Errorf("gate findings: %+v", g)
		}
		rep = r.verify(Options{Gate: fakeGate(gate.Unknown, &calls)})
		if rep.ExitCode() != ExitUnknown || status(rep)[CheckGate] != StatusUnknown {
			t.Errorf("a cluster that could not be read: exit %d, checks %v; want 3", rep.ExitCode(), status(rep))
		}
		rep = r.verify(Options{})
		if rep.ExitCode() != ExitOK || status(rep)[CheckGate] != StatusSkipped || !strings.Contains(rep.Check(CheckGate).Summary, "--no-gate") {
			t.Errorf("--no-gate: exit %d, %+v", rep.ExitCode(), rep.Check(CheckGate))
		}
	})

	t.Run("gate skipped by its commit", func(t *testing.T) {
		r.branch("skip-gate")
		r.apply(approve("r2026-10/prod-h100"), "")
		r.apply(promote.Promote, "INC-1234: staging API down")
		var calls []gateCall
		rep := r.verify(Options{Gate: fakeGate(gate.Fail, &calls)})
		if rep.ExitCode() != ExitOK || len(calls) != 0 {
			t.Fatalf("exit %d, gate calls %v: a skipped gate warns and is not run again", rep.ExitCode(), calls)
		}
		w := findingsOf(rep, KindGateSkipped)
		if len(w) != 1 || w[0].Severity != SeverityWarning || !strings.Contains(w[0].Message, "GATE SKIPPED") || !strings.Contains(w[0].Message, "Reason: INC-1234: staging API down") {
			t.Errorf("skip findings: %+v", w)
		}
		rep = r.verify(Options{Gate: fakeGate(gate.Pass, &calls), RefuseSkipGate: true})
		w = findingsOf(rep, KindGateSkipped)
		if rep.ExitCode() != ExitFailed || len(w) != 1 || w[0].Severity != SeverityError || !strings.Contains(w[0].Message, "--refuse-skip-gate") {
			t.Errorf("--refuse-skip-gate: exit %d, %+v", rep.ExitCode(), w)
		}
	})

	t.Run("a wave skipped by hand", func(t *testing.T) {
		r.branch("skip-wave")
		r.handEdit(func(p *fleet.Promotion) { p.Rollout.Wave, p.Rollout.Stage = "prod-ampere", fleet.StageAll })
		rep := r.verify(Options{})
		wantRefusal(t, rep, Finding{
			Kind: CheckPromotion, Step: "promote r2026-10 to all of wave prod-h100", File: "fleet.toml", Line: lineOf(t, r.file, "rollout = "), Severity: SeverityError,
			Message: "rollout moved from wave staging to wave prod-ampere: wave prod-h100 was skipped",
		})
	})

	t.Run("approved what does not wait", func(t *testing.T) {
		r.branch("approve-not-waiting")
		r.handEdit(func(p *fleet.Promotion) { p.Approved = append(p.Approved, "r2026-10/prod-h100-b") })
		rep := r.verify(Options{})
		wantRefusal(t, rep, Finding{
			Kind: CheckPromotion, Step: "approve r2026-10/prod-h100-b", File: "fleet.toml", Line: lineOf(t, r.file, "approved = "), Severity: SeverityError,
			Message: "approved r2026-10/prod-h100-b, which nothing waits for (what waits: r2026-10/prod-h100)",
		})
	})

	t.Run("an abort removed by hand", func(t *testing.T) {
		// Aborted once the canary cluster of prod-h100 had it: putting the
		// rollout back there takes more than ending the abort and starting
		// again, which would be two commands (the gate deciding the first).
		r.branch("aborted")
		r.apply(approve("r2026-10/prod-h100"), "")
		r.apply(promote.Promote, "")
		r.apply(promote.Abort, "")
		r.git("checkout", "-q", "-B", "abort-removed", "aborted")
		r.handEdit(func(p *fleet.Promotion) { p.Rollout.Aborted = false })
		rep := r.verify(Options{Base: "aborted"})
		wantRefusal(t, rep, Finding{
			Kind: CheckPromotion, Step: "remove the abort of r2026-10", File: "fleet.toml", Line: lineOf(t, r.file, "rollout = "), Severity: SeverityError,
			Message: "the abort of r2026-10 was removed before the gate saw every cluster back on the stable release r2026-06",
		})
		// Ending the abort is a step of its own, gated on every cluster
		// the rollout reached: promote does it.
		r.git("checkout", "-q", "-B", "abort-ended", "aborted")
		r.apply(promote.Promote, "")
		var calls []gateCall
		rep = r.verify(Options{Base: "aborted", Gate: fakeGate(gate.Pass, &calls)})
		if rep.ExitCode() != ExitOK || len(calls) != 1 || !slices.Equal(calls[0].clusters, []string{"stg-h100", "prod-h100-a"}) {
			t.Errorf("ending the abort: exit %d, gate calls %+v, findings %+v", rep.ExitCode(), calls, rep.Findings)
		}
	})

	t.Run("a stale rendered tree", func(t *testing.T) {
		r.branch("stale")
		src, _ := os.ReadFile(r.file)
		src = []byte(strings.Replace(string(src), `soak = "30m"`, `soak = "45m"`, 1))
		if err := os.WriteFile(r.file, src, 0o644); err != nil {
			t.Fatal(err)
		}
		r.git("commit", "-q", "-am", "a longer soak, not rendered")
		rep := r.verify(Options{})
		if rep.ExitCode() != ExitFailed || status(rep)[CheckRendered] != StatusFailed || status(rep)[CheckPromotion] != StatusPassed {
			t.Fatalf("exit %d, checks %v", rep.ExitCode(), status(rep))
		}
		var files []string
		for _, f := range findingsOf(rep, CheckRendered) {
			files = append(files, f.File)
			if !strings.HasPrefix(f.Message, "stale: not what fleet.toml renders") {
				t.Errorf("message %q", f.Message)
			}
		}
		if len(files) == 0 || !slices.ContainsFunc(files, func(f string) bool { return strings.HasPrefix(f, "clusters/stg-h100/") }) {
			t.Errorf("stale files: %v", files)
		}
	})
}

// TestVerifyInvalidFleetFile: a fleet file that does not load is the one
// check made, each problem on its line.
func TestVerifyInvalidFleetFile(t *testing.T) {
	r := newFleetRepo(t)
	r.branch("invalid")
	src, _ := os.ReadFile(r.file)
	src = []byte(strings.Replace(string(src), "[promotion]\n", "[promotion]\nstabel = \"r2026-06\"\n", 1))
	if err := os.WriteFile(r.file, src, 0o644); err != nil {
		t.Fatal(err)
	}
	rep := r.verify(Options{})
	if rep.ExitCode() != ExitFailed || len(rep.Checks) != 1 || rep.Checks[0].Name != CheckFleet {
		t.Fatalf("exit %d, checks %+v", rep.ExitCode(), rep.Checks)
	}
	if f := rep.Findings; len(f) != 1 || f[0].Line != lineOf(t, r.file, "stabel = ") || !strings.Contains(f[0].Message, "unknown key") {
		t.Errorf("findings %+v", f)
	}
}

// wantRefusal checks the promotion check failed with want (its message
// compared by prefix) and nothing else failed.
func wantRefusal(t *testing.T, rep *Report, want Finding) {
	t.Helper()
	if rep.ExitCode() != ExitFailed {
		t.Fatalf("exit %d, want 1; findings %+v", rep.ExitCode(), rep.Findings)
	}
	got := findingsOf(rep, CheckPromotion)
	if len(got) != 1 {
		t.Fatalf("promotion findings: %+v", got)
	}
	if !strings.HasPrefix(got[0].Message, want.Message) {
		t.Errorf("message:\n got %s\nwant %s…", got[0].Message, want.Message)
	}
	got[0].Message = want.Message
	if diff := cmp.Diff(want, got[0]); diff != "" {
		t.Errorf("finding (-want +got):\n%s", diff)
	}
	if s := status(rep); s[CheckRendered] != StatusPassed || s[CheckLint] != StatusPassed || s[CheckGate] != StatusSkipped {
		t.Errorf("checks %v: only the promotion should fail", s)
	}
}
