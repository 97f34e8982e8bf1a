package cli

import (
	"encoding/json"
	"os"
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

// TestRemovalIsPrinted: plan start, start and promote each say which
// clusters lose the Network Operator when the release they move to says
// network-operator = "none", in text, in -o json and in the commit.
func TestRemovalIsPrinted(t *testing.T) {
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com", "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.com"} {
		t.Setenv(k, v)
	}
	fleetFile := copyExample(t)
	dir := filepath.Dir(fleetFile)
	src, err := os.ReadFile(fleetFile)
	if err != nil {
		t.Fatal(err)
	}
	// r2026-10 runs no Network Operator (nor, so, its OFED driver).
	const withOp = `network-operator = "v25.10.0"` + "\n" + `ofed-driver = "doca3.2.0-25.10-1.2.8.0-2"` + "\n"
	if !strings.Contains(string(src), withOp) {
		t.Fatal("the example fleet's r2026-10 no longer names its Network Operator so")
	}
	edited := strings.Replace(string(src), withOp, `network-operator = "none"`+"\n", 1)
	if err := os.WriteFile(fleetFile, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := run(t, "render", "-f", fleetFile); code != ExitOK {
		t.Fatal(errOut)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "fleet"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	lastCommit := func() string {
		out, err := exec.Command("git", "-C", dir, "log", "-1", "--format=%B").Output()
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	const stg = `network-operator v25.4.0 is removed from cluster stg-h100 (release r2026-10 says network-operator = "none")`

	code, out, errOut := run(t, "plan", "start", "r2026-10", "-f", fleetFile)
	if code != ExitOK || !strings.Contains(out, "\nremoval: "+stg+"\n") {
		t.Errorf("plan start: exit %d, want the removal said\n%s%s", code, out, errOut)
	}
	code, out, errOut = run(t, "plan", "start", "r2026-10", "-f", fleetFile, "-o", "json")
	if code != ExitOK {
		t.Fatalf("plan start -o json: exit %d\n%s", code, errOut)
	}
	checkSchema(t, "Plan", []byte(out))
	var plan struct {
		Removals []struct {
			Operator, Version, Release, Message string
			Clusters                            []string
		}
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil || len(plan.Removals) != 1 || plan.Removals[0].Message != stg ||
		plan.Removals[0].Operator != "network-operator" || plan.Removals[0].Version != "v25.4.0" || plan.Removals[0].Release != "r2026-10" ||
		strings.Join(plan.Removals[0].Clusters, ",") != "stg-h100" {
		t.Errorf("plan start -o json: removals %+v (%v)", plan.Removals, err)
	}

	code, out, errOut = run(t, "start", "r2026-10", "-f", fleetFile)
	if code != ExitOK || !strings.Contains(out, "\nremoval: "+stg+"\n") {
		t.Errorf("start: exit %d, want the removal said\n%s%s", code, out, errOut)
	}
	if msg := lastCommit(); !strings.Contains(msg, "Removal: "+stg+".\n") {
		t.Errorf("the start's commit does not say the removal:\n%s", msg)
	}

	// Into wave prod-h100, whose canary cluster gets the release first.
	if code, out, errOut := run(t, "approve", "r2026-10/prod-h100", "-f", fleetFile); code != ExitOK {
		t.Fatalf("approve: exit %d\n%s%s", code, out, errOut)
	}
	const prod = `network-operator v25.4.0 is removed from cluster prod-h100-a (release r2026-10 says network-operator = "none")`
	code, out, errOut = run(t, "promote", "-f", fleetFile, "--skip-gate", "--reason", "test", "-o", "json")
	if code != ExitOK {
		t.Fatalf("promote: exit %d\n%s%s", code, out, errOut)
	}
	checkSchema(t, "PromotionResult", []byte(out))
	var res struct {
		Removals []struct{ Message string }
		Message  string
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Removals) != 1 || res.Removals[0].Message != prod || !strings.Contains(res.Message, "Removal: "+prod+".\n") {
		t.Errorf("promote -o json: removals %+v, message %q (%v)", res.Removals, res.Message, err)
	}
}
