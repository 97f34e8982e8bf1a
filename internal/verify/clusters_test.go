package verify

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/promote"
)

// edit replaces each old with its new in the fleet file (once; the test
// fails when old is not there: pairs old, new, ...), re-renders and
// commits, as a person editing fleet.toml by hand and running `gpufleet
// render` would.
func (r *fleetRepo) edit(pairs ...string) {
	r.t.Helper()
	src, err := os.ReadFile(r.file)
	if err != nil {
		r.t.Fatal(err)
	}
	text := string(src)
	for i := 0; i+1 < len(pairs); i += 2 {
		if !strings.Contains(text, pairs[i]) {
			r.t.Fatalf("the fleet file has no %q", pairs[i])
		}
		text = strings.Replace(text, pairs[i], pairs[i+1], 1)
	}
	if err := os.WriteFile(r.file, []byte(text), 0o644); err != nil {
		r.t.Fatal(err)
	}
	r.render()
	r.git("add", "-A")
	r.git("commit", "-q", "-m", "edit fleet.toml by hand")
}

// wantMoved checks that verify refuses the change in the clusters check
// with a finding at the line that starts with line, whose message holds
// each of says; and that the change is otherwise one the tools would make.
func wantMoved(t *testing.T, r *fleetRepo, rep *Report, line string, says ...string) {
	t.Helper()
	if rep.ExitCode() != ExitFailed || status(rep)[CheckClusters] != StatusFailed {
		t.Fatalf("exit %d, checks %v, findings %+v: want the clusters check to fail (exit 1)", rep.ExitCode(), status(rep), rep.Findings)
	}
	if s := status(rep); s[CheckRendered] != StatusPassed || s[CheckLint] != StatusPassed {
		t.Errorf("checks %v: the tree is rendered and lints, only what the clusters run is wrong", s)
	}
	want := lineOf(t, r.file, line)
	for _, f := range findingsOf(rep, CheckClusters) {
		if f.Line != want || f.Severity != SeverityError {
			continue
		}
		ok := true
		for _, s := range says {
			ok = ok && strings.Contains(f.Message, s)
		}
		if ok {
			return
		}
	}
	t.Errorf("no error at line %d (%q) saying %q; findings:\n%s", want, line, says, findingLines(rep))
}

func wantPassed(t *testing.T, rep *Report) {
	t.Helper()
	if rep.ExitCode() != ExitOK {
		t.Fatalf("exit %d, checks %v; findings:\n%s", rep.ExitCode(), status(rep), findingLines(rep))
	}
}

func findingLines(rep *Report) string {
	var b strings.Builder
	for _, f := range rep.Findings {
		b.WriteString("  " + f.Kind + " " + f.Severity + " line " + itoa(f.Line) + ": " + f.Message + "\n")
	}
	return b.String()
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}

// TestVerifyClusters: in the middle of a rollout (r2026-10 started at
// staging), every edit that changes what a cluster runs without a
// promotion step is refused at the line that causes it, and the edits a
// fleet needs meanwhile pass.
func TestVerifyClusters(t *testing.T) {
	r := newFleetRepo(t)
	r.apply(start("r2026-10"), "")

	refused := []struct {
		name, old, new, line string
		says                 []string
		// also are more edits of the same change (old, new, ...).
		also []string
	}{
		{
			name: "the stable release's driver",
			old:  "driver = \"570.172.08\"", new: "driver = \"570.195.03\"", line: "driver = \"570.195.03\"",
			says: []string{"releases.r2026-06.driver changed (570.172.08 → 570.195.03) while r2026-06 runs on 4 cluster(s)", "make it a new release and promote it"},
		},
		{
			name: "the driver of the release in flight",
			old:  "driver = \"580.95.05\"", new: "driver = \"580.105.08\"", line: "driver = \"580.105.08\"",
			says: []string{"releases.r2026-10.driver changed (580.95.05 → 580.105.08) while r2026-10 runs on 1 cluster(s) (stg-h100)"},
		},
		{
			name: "the GPU Operator of the stable release",
			old:  "gpu-operator = \"v25.3.4\"", new: "gpu-operator = \"v25.10.1\"", line: "gpu-operator = \"v25.10.1\"",
			says: []string{"releases.r2026-06.gpu-operator changed (v25.3.4 → v25.10.1)"},
		},
		{
			name: "a prod cluster moved into the wave in flight",
			old:  "clusters = [\"stg-h100\"]", new: "clusters = [\"stg-h100\", \"prod-h100-b\"]", line: "clusters = [\"stg-h100\", \"prod-h100-b\"]",
			says: []string{"cluster prod-h100-b moves to release r2026-10 (it runs r2026-06) because the waves changed"},
			also: []string{"clusters = [\"prod-h100-a\", \"prod-h100-b\"]", "clusters = [\"prod-h100-a\"]"},
		},
		{
			name: "the charts' source",
			old:  "repository = \"https://helm.ngc.nvidia.com/nvidia\"", new: "repository = \"https://charts.example.com/nvidia\"", line: "repository = \"https://charts.example.com/nvidia\"",
			says: []string{"[charts] changed", "every cluster's operators would come from there at once"},
		},
		{
			name: "the policy of a cluster in flight",
			old:  "soak = \"30m\"", new: "soak = \"5m\"", line: "soak = \"5m\"",
			says: []string{"the policy of cluster stg-h100 changes (soak 30m0s → 5m0s) while r2026-10 rolls out there"},
		},
		{
			name: "a new cluster in the wave in flight",
			old:  "[[waves]]\nname = \"staging\"\nclusters = [\"stg-h100\"]",
			new:  "[[waves]]\nname = \"staging\"\nclusters = [\"stg-h100\", \"stg-b\"]",
			line: "[clusters.stg-b]",
			says: []string{"cluster stg-b is new and in wave staging, which r2026-10 has reached"},
			also: []string{"[[waves]]", "[clusters.stg-b]\nenvironment = \"staging\"\n\n[[clusters.stg-b.pools]]\nname = \"h100\"\nproduct = \"NVIDIA-H100-80GB-HBM3\"\nnodes = 2\n\n[[waves]]"},
		},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			r.branch(strings.ReplaceAll(c.name, " ", "-"))
			r.edit(append([]string{c.old, c.new}, c.also...)...)
			wantMoved(t, r, r.verify(Options{}), c.line, c.says...)
		})
	}

	allowed := []struct {
		name, old, new string
		also           []string
	}{
		{"a release no cluster runs", "driver = \"580.82.07\"", "driver = \"580.82.09\"", nil},
		{"a new release beside the rollout", "# ---------------------------------------------------------------- clusters", "[releases.r2027-01]\ngpu-operator = \"v25.10.1\"\nnetwork-operator = \"v25.10.0\"\ndriver = \"580.105.08\"\n\n# ---------------------------------------------------------------- clusters", nil},
		{"a pool's node count", "nodes = 16", "nodes = 20", nil},
		{"a release's notes", "notes = \"Current production baseline.\"", "notes = \"Still the production baseline.\"", nil},
		{"the policy of clusters at rest", "soak = \"2h\"", "soak = \"3h\"", nil},
		{"a wave the rollout has not reached", "name = \"prod-ampere\"\nclusters = [\"prod-a100\"]", "name = \"prod-ampere\"\nclusters = [\"prod-a100\"]\nrequire-approval = true", nil},
		{"an environment renamed with its policy", "environment = \"staging\"", "environment = \"qa\"", []string{"[policy.environments.staging]", "[policy.environments.qa]"}},
	}
	for _, c := range allowed {
		t.Run(c.name, func(t *testing.T) {
			r.branch(strings.ReplaceAll(c.name, " ", "-"))
			r.edit(append([]string{c.old, c.new}, c.also...)...)
			wantPassed(t, r.verify(Options{}))
		})
	}

	t.Run("rules edited with a step", func(t *testing.T) {
		for _, e := range []struct{ old, new, line string }{
			{"soak = \"2h\"", "soak = \"3h\"", "soak = \"3h\""},
			{"name = \"prod-ampere\"\nclusters = [\"prod-a100\"]", "name = \"prod-ampere\"\nclusters = [\"prod-a100\"]\ncanary = \"prod-a100\"", "canary = \"prod-a100\""},
		} {
			r.branch("rules-and-step")
			r.edit(e.old, e.new)
			r.apply(approve("r2026-10/prod-h100"), "")
			rep := r.verify(Options{})
			wantMoved(t, r, rep, e.line, "is edited in a change that also takes promotion steps (approve r2026-10/prod-h100)")
		}
	})

	t.Run("the gate reaches the clusters as the base says", func(t *testing.T) {
		r.branch("context-moved")
		r.edit("context = \"stg-h100\"", "context = \"attacker\"")
		// Alone the edit passes: nothing is gated, and render does not
		// read contexts.
		wantPassed(t, r.verify(Options{}))
		r.apply(approve("r2026-10/prod-h100"), "")
		r.apply(promote.Promote, "")
		var contexts []string
		g := func(_ context.Context, f *fleet.Fleet, clusters []string, revision string) *gate.Report {
			for _, c := range clusters {
				contexts = append(contexts, f.Clusters[c].Context)
			}
			return &gate.Report{Revision: revision, Clusters: clusters}
		}
		rep := r.verify(Options{Gate: g})
		if rep.ExitCode() != ExitFailed || status(rep)[CheckGate] != StatusFailed {
			t.Fatalf("exit %d, checks %v: a context moved under a gated step is refused", rep.ExitCode(), status(rep))
		}
		found := false
		for _, f := range findingsOf(rep, CheckGate) {
			found = found || (f.Line == lineOf(t, r.file, "context = \"attacker\"") && strings.Contains(f.Message, "the kubeconfig context of cluster stg-h100 changes (stg-h100 → attacker)"))
		}
		if !found {
			t.Errorf("findings:\n%s", findingLines(rep))
		}
		if len(contexts) != 1 || contexts[0] != "stg-h100" {
			t.Errorf("the gate reached %v, want the base's context stg-h100", contexts)
		}
	})
}

// TestVerifyClustersLegitimateSequences: what the promotion commands do,
// from a fleet at rest to a release stable and through an abort, passes
// at every commit, each compared with the one before.
func TestVerifyClustersLegitimateSequences(t *testing.T) {
	r := newFleetRepo(t)
	check := func(base string) {
		t.Helper()
		rep := r.verify(Options{Base: base, Gate: fakeGate(gate.Pass, new([]gateCall))})
		if rep.ExitCode() != ExitOK {
			t.Fatalf("from %s: exit %d, checks %v; findings:\n%s", base, rep.ExitCode(), status(rep), findingLines(rep))
		}
	}
	steps := []struct {
		name string
		m    promote.Mutation
		skip string
	}{
		{"start", start("r2026-10"), ""},
		{"approve the wave", approve("r2026-10/prod-h100"), ""},
		{"promote", promote.Promote, ""},
		{"approve the canary cluster's nodes", approve("r2026-10/prod-h100-a"), ""},
		{"approve past the canary cluster", approve("r2026-10/prod-h100"), ""},
		{"promote without the gate", promote.Promote, "INC-1: staging API down"},
		{"pause", promote.Pause, ""},
		{"resume", promote.Resume, ""},
		{"promote", promote.Promote, ""},
		{"stable", promote.Promote, ""},
	}
	for _, s := range steps {
		prev := r.git("rev-parse", "HEAD")
		r.apply(s.m, s.skip)
		check(prev)
	}
	// Aborting a new rollout, and ending the abort.
	r.apply(start("r2026-10-drill"), "")
	r.apply(approve("r2026-10-drill/prod-h100"), "")
	r.apply(promote.Promote, "")
	prev := r.git("rev-parse", "HEAD")
	r.apply(promote.Abort, "")
	check(prev)
	prev = r.git("rev-parse", "HEAD")
	r.apply(promote.Promote, "")
	check(prev)
}
