package cli

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRefusedPromotionExitsNonZero runs the promotion commands through the
// CLI: a refused step prints why and exits 1, and changes nothing.
func TestRefusedPromotionExitsNonZero(t *testing.T) {
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com", "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.com"} {
		t.Setenv(k, v)
	}
	fleetFile := copyExample(t)
	dir := filepath.Dir(fleetFile)
	if code, _, errOut := run(t, "render", "-f", fleetFile); code != ExitOK {
		t.Fatal(errOut)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "fleet"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	head := func() string {
		out, _ := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
		return string(out)
	}
	before := head()
	code, _, errOut := run(t, "approve", "r2026-10/prod-h100", "-f", fleetFile)
	if code != ExitFailed || !strings.Contains(errOut, "nothing waits for approval: no rollout is under way") {
		t.Errorf("approve with nothing waiting: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = run(t, "promote", "-f", fleetFile)
	if code != ExitFailed || !strings.Contains(errOut, "no rollout is under way") {
		t.Errorf("promote with nothing under way: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = run(t, "plan", "approve", "x/y", "-f", fleetFile)
	if code != ExitFailed || !strings.Contains(errOut, "nothing waits for approval") {
		t.Errorf("plan of a refused step: exit %d, stderr %q", code, errOut)
	}
	if head() != before {
		t.Error("a refused command made a commit")
	}
	code, out, errOut := run(t, "start", "r2026-10", "-f", fleetFile)
	if code != ExitOK || !strings.Contains(out, "committed: gpufleet: start r2026-10 at wave staging") {
		t.Errorf("start: exit %d\n%s%s", code, out, errOut)
	}
}
