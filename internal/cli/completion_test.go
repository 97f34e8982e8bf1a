package cli

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// complete runs cobra's hidden completion command as a shell does and
// returns the names offered.
func complete(t *testing.T, args ...string) []string {
	t.Helper()
	_, out, _ := run(t, append([]string{"__complete"}, args...)...)
	var names []string
	for l := range strings.SplitSeq(out, "\n") {
		if l == "" || strings.HasPrefix(l, ":") || strings.HasPrefix(l, "Completion ended") {
			continue
		}
		names = append(names, l)
	}
	return names
}

// TestCompletion offers what the fleet file has: releases for start,
// clusters for explain, waves for gate --wave, and for approve exactly the
// approval names that wait now (none before a rollout, the wave's after
// start).
func TestCompletion(t *testing.T) {
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com", "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.com"} {
		t.Setenv(k, v)
	}
	fleetFile := copyExample(t)
	check := func(what string, got []string, want ...string) {
		t.Helper()
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: offered %q, want %q", what, got, want)
		}
	}
	check("start", complete(t, "start", "-f", fleetFile, "r2026-10"), "r2026-10", "r2026-10-drill")
	check("explain", complete(t, "explain", "-f", fleetFile, "prod-h"), "prod-h100-a", "prod-h100-b")
	check("gate --wave", complete(t, "gate", "-f", fleetFile, "--wave", ""), "staging", "prod-h100", "prod-ampere")
	check("approve before a rollout", complete(t, "approve", "-f", fleetFile, ""))
	check("plan", complete(t, "plan", "-f", fleetFile, "a"), "approve", "abort")

	dir := filepath.Dir(fleetFile)
	if code, _, errOut := run(t, "render", "-f", fleetFile); code != ExitOK {
		t.Fatal(errOut)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "fleet"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if code, _, errOut := run(t, "start", "r2026-10", "-f", fleetFile); code != ExitOK {
		t.Fatal(errOut)
	}
	check("approve after start", complete(t, "approve", "-f", fleetFile, ""), "r2026-10/prod-h100")
	check("plan approve after start", complete(t, "plan", "-f", fleetFile, "approve", "r2026"), "r2026-10/prod-h100")
}
