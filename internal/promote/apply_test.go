package promote

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/render"
)

// fleetRepo makes a git repository holding the example fleet, rendered and
// committed, and returns the fleet file's path.
func fleetRepo(t *testing.T) string {
	t.Helper()
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": "Ada Admin", "GIT_AUTHOR_EMAIL": "ada@example.com", "GIT_COMMITTER_NAME": "Ada Admin", "GIT_COMMITTER_EMAIL": "ada@example.com"} {
		t.Setenv(k, v)
	}
	dir := t.TempDir()
	src, err := os.ReadFile("../../examples/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "fleet.toml")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := fleet.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	out, err := render.Render(f)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := render.Write(out, dir); err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "init", "-q", "-b", "main")
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", "initial fleet")
	return path
}

func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// fleetDiff is the +/- lines the last commit made to fleet.toml.
func fleetDiff(t *testing.T, dir string) []string {
	t.Helper()
	var lines []string
	for l := range strings.SplitSeq(gitT(t, dir, "diff", "HEAD~1", "HEAD", "--", "fleet.toml"), "\n") {
		if (strings.HasPrefix(l, "+") || strings.HasPrefix(l, "-")) && !strings.HasPrefix(l, "+++") && !strings.HasPrefix(l, "---") {
			lines = append(lines, l)
		}
	}
	return lines
}

func releases(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := fleet.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range f.ClusterNames() {
		got[c] = f.ReleaseFor(c).Name
	}
	return got
}

// passGate records what it was asked to check and passes.
type fakeGate struct {
	checked [][]string
	fail    bool
}

func (g *fakeGate) check(_ context.Context, _ *fleet.Fleet, clusters []string) (bool, string, error) {
	g.checked = append(g.checked, clusters)
	if g.fail {
		return false, "nodes/h100/driver failed on stg-h100: h100-0=570.172.08", nil
	}
	return true, strings.Join(clusters, ", ") + " at HEAD", nil
}

// TestPromotionWalk walks a release through every wave of the example
// fleet, checking after each step the exact lines of fleet.toml that
// changed, the release each cluster runs, and the commit message.
func TestPromotionWalk(t *testing.T) {
	path := fleetRepo(t)
	dir := filepath.Dir(path)
	gate := &fakeGate{}
	apply := func(m Mutation) (*Result, error) {
		return Apply(t.Context(), Options{FleetFile: path, Mutation: m, Gate: gate.check})
	}
	heads := func() string { return strings.TrimSpace(gitT(t, dir, "rev-parse", "HEAD")) }
	steps := []struct {
		name     string
		mutation Mutation
		diff     []string
		releases map[string]string
		subject  string
		gated    []string
	}{
		{
			name:     "start",
			mutation: func(f *fleet.Fleet) (Step, error) { return Start(f, "r2026-10") },
			diff:     []string{`+rollout = { release = "r2026-10", wave = "staging" }`},
			releases: map[string]string{"stg-h100": "r2026-10", "prod-h100-a": "r2026-06", "prod-h100-b": "r2026-06", "prod-a100": "r2026-06"},
			subject:  "gpufleet: start r2026-10 at wave staging",
		},
		{
			name:     "approve entering prod-h100",
			mutation: func(f *fleet.Fleet) (Step, error) { return Approve(f, "r2026-10/prod-h100") },
			diff:     []string{`-approved = []`, `+approved = ["r2026-10/prod-h100"]`},
			releases: map[string]string{"stg-h100": "r2026-10", "prod-h100-a": "r2026-06", "prod-h100-b": "r2026-06", "prod-a100": "r2026-06"},
			subject:  "gpufleet: approve r2026-10/prod-h100",
		},
		{
			name:     "promote to the prod-h100 canary cluster, using the approval up",
			mutation: Promote,
			diff:     []string{`-approved = ["r2026-10/prod-h100"]`, `+approved = []`, `-rollout = { release = "r2026-10", wave = "staging" }`, `+rollout = { release = "r2026-10", wave = "prod-h100", stage = "canary" }`},
			releases: map[string]string{"stg-h100": "r2026-10", "prod-h100-a": "r2026-10", "prod-h100-b": "r2026-06", "prod-a100": "r2026-06"},
			subject:  "gpufleet: promote r2026-10 to wave prod-h100, canary cluster prod-h100-a",
			gated:    []string{"stg-h100"},
		},
		{
			name:     "approve the wave after its canary",
			mutation: func(f *fleet.Fleet) (Step, error) { return Approve(f, "r2026-10/prod-h100") },
			diff:     []string{`-approved = []`, `+approved = ["r2026-10/prod-h100"]`},
			releases: map[string]string{"stg-h100": "r2026-10", "prod-h100-a": "r2026-10", "prod-h100-b": "r2026-06", "prod-a100": "r2026-06"},
			subject:  "gpufleet: approve r2026-10/prod-h100",
		},
		{
			name:     "promote to the whole of prod-h100",
			mutation: Promote,
			diff:     []string{`-approved = ["r2026-10/prod-h100"]`, `+approved = []`, `-rollout = { release = "r2026-10", wave = "prod-h100", stage = "canary" }`, `+rollout = { release = "r2026-10", wave = "prod-h100" }`},
			releases: map[string]string{"stg-h100": "r2026-10", "prod-h100-a": "r2026-10", "prod-h100-b": "r2026-10", "prod-a100": "r2026-06"},
			subject:  "gpufleet: promote r2026-10 to all of wave prod-h100",
			gated:    []string{"prod-h100-a"},
		},
		{
			name:     "promote to prod-ampere",
			mutation: Promote,
			diff:     []string{`-rollout = { release = "r2026-10", wave = "prod-h100" }`, `+rollout = { release = "r2026-10", wave = "prod-ampere" }`},
			releases: map[string]string{"stg-h100": "r2026-10", "prod-h100-a": "r2026-10", "prod-h100-b": "r2026-10", "prod-a100": "r2026-10"},
			subject:  "gpufleet: promote r2026-10 to wave prod-ampere",
			gated:    []string{"prod-h100-a", "prod-h100-b"},
		},
		{
			name:     "the last wave passes: the release becomes stable, every cluster gated",
			mutation: Promote,
			diff:     []string{`-stable = "r2026-06"`, `+stable = "r2026-10"`, `-rollout = { release = "r2026-10", wave = "prod-ampere" }`},
			releases: map[string]string{"stg-h100": "r2026-10", "prod-h100-a": "r2026-10", "prod-h100-b": "r2026-10", "prod-a100": "r2026-10"},
			subject:  "gpufleet: r2026-10 is stable: every wave passed",
			gated:    []string{"stg-h100", "prod-h100-a", "prod-h100-b", "prod-a100"},
		},
	}
	for _, s := range steps {
		before := heads()
		gate.checked = nil
		res, err := apply(s.mutation)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if heads() == before || !res.Committed {
			t.Fatalf("%s: no commit made", s.name)
		}
		if diff := cmp.Diff(s.diff, fleetDiff(t, dir)); diff != "" {
			t.Errorf("%s: fleet.toml lines changed (-want +got):\n%s", s.name, diff)
		}
		if diff := cmp.Diff(s.releases, releases(t, path)); diff != "" {
			t.Errorf("%s: releases (-want +got):\n%s", s.name, diff)
		}
		subject := strings.TrimSpace(gitT(t, dir, "log", "-1", "--format=%s"))
		if subject != s.subject {
			t.Errorf("%s: commit subject %q, want %q", s.name, subject, s.subject)
		}
		if author := strings.TrimSpace(gitT(t, dir, "log", "-1", "--format=%an")); author != "Ada Admin" {
			t.Errorf("%s: the commit's author (who approved) is %q", s.name, author)
		}
		var wantGated [][]string
		if s.gated != nil {
			wantGated = [][]string{s.gated}
			if body := gitT(t, dir, "log", "-1", "--format=%b"); !strings.Contains(body, "Gate passed: "+strings.Join(s.gated, ", ")) {
				t.Errorf("%s: the commit message does not give the gate result:\n%s", s.name, body)
			}
		}
		if diff := cmp.Diff(wantGated, gate.checked); diff != "" {
			t.Errorf("%s: gated clusters (-want +got):\n%s", s.name, diff)
		}
		if out := gitT(t, dir, "status", "--porcelain"); out != "" {
			t.Errorf("%s: the work tree is not clean after the commit:\n%s", s.name, out)
		}
	}
}

// TestRefusedChangesNothing checks every refused transition leaves the
// repository exactly as it was, with a message saying why.
func TestRefusedChangesNothing(t *testing.T) {
	tests := []struct {
		name  string
		setup []Mutation
		try   Mutation
		fail  bool
		want  string
	}{
		{"start an unknown release", nil, func(f *fleet.Fleet) (Step, error) { return Start(f, "r2099-01") }, false, `unknown release "r2099-01"`},
		{"start during a rollout", []Mutation{startR}, func(f *fleet.Fleet) (Step, error) { return Start(f, "r2026-10-drill") }, false, "release r2026-10 is being rolled out (at wave staging)"},
		{"promote with nothing under way", nil, Promote, false, "no rollout is under way"},
		{"promote while paused", []Mutation{startR, Pause}, Promote, false, "the rollout of r2026-10 is paused: `gpufleet resume` first"},
		{"approve while paused", []Mutation{startR, approveEnter, Promote, Pause}, func(f *fleet.Fleet) (Step, error) { return Approve(f, "r2026-10/prod-h100-a") }, false, "paused"},
		{"approve when nothing waits", nil, func(f *fleet.Fleet) (Step, error) { return Approve(f, "r2026-10/prod-h100") }, false, "nothing waits for approval"},
		{"approve a wrong name", []Mutation{startR, approveEnter, Promote}, func(f *fleet.Fleet) (Step, error) { return Approve(f, "r2026-10/prod-h10") }, false, `"r2026-10/prod-h10" is not waiting for approval; waiting: r2026-10/prod-h100, r2026-10/prod-h100-a`},
		{"promote past the canary without approval", []Mutation{startR, approveEnter, Promote}, Promote, false, "wave prod-h100 waits for approval after its canary cluster prod-h100-a: `gpufleet approve r2026-10/prod-h100`"},
		{"promote into a wave that requires approval", []Mutation{startR}, Promote, false, "wave prod-h100 requires approval before r2026-10 enters it: `gpufleet approve r2026-10/prod-h100`"},
		{"promote with a failing gate", []Mutation{startR, approveEnter}, Promote, true, "the gate did not pass for stg-h100: nodes/h100/driver failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := fleetRepo(t)
			dir := filepath.Dir(path)
			for _, m := range tt.setup {
				if _, err := Apply(t.Context(), Options{FleetFile: path, Mutation: m, Gate: (&fakeGate{}).check}); err != nil {
					t.Fatal(err)
				}
			}
			head := gitT(t, dir, "rev-parse", "HEAD")
			src, _ := os.ReadFile(path)
			_, err := Apply(t.Context(), Options{FleetFile: path, Mutation: tt.try, Gate: (&fakeGate{fail: tt.fail}).check})
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("want a refusal containing %q, got %v", tt.want, err)
			}
			after, _ := os.ReadFile(path)
			if gitT(t, dir, "rev-parse", "HEAD") != head || string(after) != string(src) || gitT(t, dir, "status", "--porcelain") != "" {
				t.Error("a refused command changed the repository")
			}
		})
	}
}

func startR(f *fleet.Fleet) (Step, error) { return Start(f, "r2026-10") }

// approveEnter approves r2026-10 entering prod-h100, the wave after staging.
func approveEnter(f *fleet.Fleet) (Step, error) { return Approve(f, "r2026-10/prod-h100") }

func TestSkipGateNeedsReason(t *testing.T) {
	path := fleetRepo(t)
	for _, m := range []Mutation{startR, approveEnter} {
		if _, err := Apply(t.Context(), Options{FleetFile: path, Mutation: m}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Apply(t.Context(), Options{FleetFile: path, Mutation: Promote, SkipGate: true}); err == nil || !strings.Contains(err.Error(), "--skip-gate needs --reason") {
		t.Fatalf("got %v", err)
	}
	if _, err := Apply(t.Context(), Options{FleetFile: path, Mutation: Promote, SkipGate: true, Reason: "CVE-2026-1234 hotfix, staging gate flaky"}); err != nil {
		t.Fatal(err)
	}
	body := gitT(t, filepath.Dir(path), "log", "-1", "--format=%b")
	if !strings.Contains(body, "Gate SKIPPED for stg-h100. Reason: CVE-2026-1234 hotfix, staging gate flaky") {
		t.Errorf("the reason is not in the commit message:\n%s", body)
	}
}

// TestPauseAbortRender checks what pause and abort do to the rendered
// DriverRollouts of the clusters in progress.
func TestPauseAbortRender(t *testing.T) {
	path := fleetRepo(t)
	dir := filepath.Dir(path)
	for _, m := range []Mutation{startR, Pause} {
		if _, err := Apply(t.Context(), Options{FleetFile: path, Mutation: m, Gate: (&fakeGate{}).check}); err != nil {
			t.Fatal(err)
		}
	}
	if got := fleetDiff(t, dir); !cmp.Equal(got, []string{"-paused = false", "+paused = true"}) {
		t.Errorf("pause changed %v", got)
	}
	stg, _ := os.ReadFile(filepath.Join(dir, "clusters/stg-h100/lifecycle/driverrollout.yaml"))
	prod, _ := os.ReadFile(filepath.Join(dir, "clusters/prod-a100/lifecycle/driverrollout.yaml"))
	if !strings.Contains(string(stg), "paused: true") || strings.Contains(string(prod), "paused: true") {
		t.Errorf("only the clusters in progress are paused:\nstg:\n%s\nprod:\n%s", stg, prod)
	}
	for _, m := range []Mutation{Resume, Abort} {
		if _, err := Apply(t.Context(), Options{FleetFile: path, Mutation: m}); err != nil {
			t.Fatal(err)
		}
	}
	if got := releases(t, path); got["stg-h100"] != "r2026-06" {
		t.Errorf("after abort staging runs %s, want the stable r2026-06", got["stg-h100"])
	}
	stg, _ = os.ReadFile(filepath.Join(dir, "clusters/stg-h100/lifecycle/driverrollout.yaml"))
	hr, _ := os.ReadFile(filepath.Join(dir, "clusters/stg-h100/operators/helmrelease-gpu-operator.yaml"))
	if !strings.Contains(string(stg), "abort: true") || !strings.Contains(string(stg), "name: r2026-10") || !strings.Contains(string(hr), "version: v25.3.4") {
		t.Errorf("after abort staging keeps the aborted DriverRollout (to roll nodes back) on the stable operators:\n%s\n%s", stg, hr)
	}
	if _, err := os.Stat(filepath.Join(dir, "clusters/stg-h100/config/nvidiadriver-h100-580-95-05.yaml")); err != nil {
		t.Errorf("the new driver's NVIDIADriver must stay while nodes roll back: %v", err)
	}
}

// TestSkipGateMessageSaysOnlyWhatHappened takes every gated step there is
// with --skip-gate: each commit says the gate was skipped, and why, and
// never that anything passed it. The same steps with the gate say it passed.
func TestSkipGateMessageSaysOnlyWhatHappened(t *testing.T) {
	for _, skip := range []bool{true, false} {
		path := fleetRepo(t)
		dir := filepath.Dir(path)
		approve := func(name string) Mutation {
			return func(f *fleet.Fleet) (Step, error) { return Approve(f, name) }
		}
		for _, m := range []Mutation{startR, approveEnter, Promote, approve("r2026-10/prod-h100"), Promote, Promote} {
			res, err := Apply(t.Context(), Options{FleetFile: path, Mutation: m, Gate: (&fakeGate{}).check, SkipGate: skip, Reason: "CVE hotfix"})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Step.Gate) == 0 {
				continue
			}
			body := gitT(t, dir, "log", "-1", "--format=%B")
			skipped := "Gate SKIPPED for " + strings.Join(res.Step.Gate, ", ") + ". Reason: CVE hotfix"
			switch {
			case skip && (!strings.Contains(body, skipped) || strings.Contains(strings.ToLower(body), "passed")):
				t.Errorf("a --skip-gate commit must say the gate was skipped and nothing passed:\n%s", body)
			case !skip && (!strings.Contains(body, "Gate passed: ") || strings.Contains(body, "SKIPPED")):
				t.Errorf("a gated commit must say the gate passed:\n%s", body)
			}
		}
	}
}

// TestPromotionCommitsOnlyWhatItWrote: with something else staged, a
// promotion command refuses and names it; otherwise its commit holds the
// fleet file and the rendered files it changed, nothing else, and leaves
// the user's other changes where they were.
func TestPromotionCommitsOnlyWhatItWrote(t *testing.T) {
	path := fleetRepo(t)
	dir := filepath.Dir(path)
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("NOTES.md", "notes\n")
	write("runbook.md", "runbook\n")
	gitT(t, dir, "add", "NOTES.md")
	gitT(t, dir, "commit", "-q", "-m", "notes")
	write("NOTES.md", "notes, edited\n")
	gitT(t, dir, "add", "NOTES.md", "runbook.md")
	head := gitT(t, dir, "rev-parse", "HEAD")
	_, err := Apply(t.Context(), Options{FleetFile: path, Mutation: startR})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "other changes are staged (NOTES.md, runbook.md)") {
		t.Fatalf("want a refusal naming the staged files, got %v", err)
	}
	if gitT(t, dir, "rev-parse", "HEAD") != head || gitT(t, dir, "diff", "--cached", "--name-only") != "NOTES.md\nrunbook.md\n" {
		t.Error("the refusal changed the repository or the index")
	}
	// Unstaged and untracked changes are left alone, and out of the commit.
	gitT(t, dir, "restore", "--staged", "NOTES.md", "runbook.md")
	res, err := Apply(t.Context(), Options{FleetFile: path, Mutation: startR})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"fleet.toml"}
	for _, c := range res.Changes {
		want = append(want, c.Path)
	}
	slices.Sort(want)
	got := strings.Fields(gitT(t, dir, "show", "--name-only", "--format=", "HEAD"))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("files in the commit (-want +got):\n%s", diff)
	}
	if st := gitT(t, dir, "status", "--porcelain"); st != " M NOTES.md\n?? runbook.md\n" {
		t.Errorf("the user's own changes moved:\n%s", st)
	}
}

// TestDowngradeWarnsAndIsNotOffered: with r2026-10 stable, r2026-06 is older
// in every part; starting it is a downgrade that the commit and the command
// warn about, and status never offers it (nor the drill, whose driver is
// older too) as a next step.
func TestDowngradeWarnsAndIsNotOffered(t *testing.T) {
	path := fleetRepo(t)
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	newer := "[releases.r2027-01]\ngpu-operator = \"v26.7.0\"\nnetwork-operator = \"v26.4.1\"\ndriver = \"580.105.08\"\n\n"
	edited := strings.Replace(string(src), `stable = "r2026-06"`, `stable = "r2026-10"`, 1)
	edited = strings.Replace(edited, "[releases.r2026-06]", newer+"[releases.r2026-06]", 1)
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	f := renderCommit(t, path, "r2026-10 stable")
	if next := StatusOf(f).Next; next != "gpufleet start r2027-01" {
		t.Errorf("status offers %q, want only the newer release", next)
	}
	res, err := Apply(t.Context(), Options{FleetFile: path, Mutation: func(f *fleet.Fleet) (Step, error) { return Start(f, "r2026-06") }})
	if err != nil {
		t.Fatal(err)
	}
	want := "r2026-06 is older than the stable release r2026-10 (gpu-operator v25.3.4 < v25.10.1, network-operator v25.4.0 < v25.10.0, driver 570.172.08 < 580.95.05): this start is a downgrade"
	if !strings.Contains(res.Message, want) {
		t.Errorf("the commit does not warn of the downgrade:\n%s", res.Message)
	}
}
