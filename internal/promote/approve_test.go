package promote

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
)

// fakeCanary says which clusters' DriverRollouts wait for the approval of
// their canary node(s).
type fakeCanary map[string]bool

func (c fakeCanary) check(_ context.Context, _ *fleet.Fleet, cluster string) (bool, string, error) {
	if c[cluster] {
		return true, "DriverRollout r2026-10 is WaitingForApproval, canary Passed", nil
	}
	return false, "DriverRollout r2026-10 is Progressing, canary InProgress", nil
}

// TestApprovalsApproveExactlyWhatWaits: one approval name approves one
// thing, only once it waits. A wave requiring approval is not entered
// without it, canary cluster or not; the approval is used up by the step
// it lets through; a cluster's canary node(s) are approved only once the
// cluster's DriverRollout waits for it, by their own name, never by the
// wave's.
func TestApprovalsApproveExactlyWhatWaits(t *testing.T) {
	path := fleetRepo(t)
	dir := filepath.Dir(path)
	gate := (&fakeGate{}).check
	apply := func(m Mutation, canary fakeCanary) (*Result, error) {
		o := Options{FleetFile: path, Mutation: m, Gate: gate}
		if canary != nil {
			o.Canary = canary.check
		}
		return Apply(t.Context(), o)
	}
	approve := func(name string) Mutation {
		return func(f *fleet.Fleet) (Step, error) { return Approve(f, name) }
	}
	waits := func() []string {
		f, err := fleet.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, w := range Waits(f) {
			out = append(out, w.Approval+": "+w.What)
		}
		return out
	}
	approval := func(cluster string) string {
		var dr v1alpha1.DriverRollout
		data, err := os.ReadFile(filepath.Join(dir, "clusters", cluster, "lifecycle/driverrollout.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(data, &dr); err != nil {
			t.Fatal(err)
		}
		return dr.Spec.Approval
	}
	mustApply := func(what string, m Mutation, canary fakeCanary) *Result {
		t.Helper()
		res, err := apply(m, canary)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return res
	}
	refused := func(what string, m Mutation, canary fakeCanary, want string) {
		t.Helper()
		head := gitT(t, dir, "rev-parse", "HEAD")
		if _, err := apply(m, canary); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: want a refusal containing %q, got %v", what, want, err)
		}
		if gitT(t, dir, "rev-parse", "HEAD") != head {
			t.Errorf("%s: a refused command made a commit", what)
		}
	}

	mustApply("start", startR, nil)
	// prod-h100 has a canary cluster and requires approval: it is not
	// entered, not even by its canary cluster, until approved.
	refused("promote into prod-h100 unapproved", Promote, nil, "wave prod-h100 requires approval before r2026-10 enters it")
	if diff := cmp.Diff([]string{"r2026-10/prod-h100: entering wave prod-h100 (its canary cluster prod-h100-a first)"}, waits()); diff != "" {
		t.Errorf("waits after start (-want +got):\n%s", diff)
	}
	// What is not reached yet does not wait.
	refused("approve a canary not reached", approve("r2026-10/prod-h100-a"), fakeCanary{"prod-h100-a": true}, `"r2026-10/prod-h100-a" is not waiting for approval; waiting: r2026-10/prod-h100`)
	mustApply("approve entering prod-h100", approve("r2026-10/prod-h100"), nil)
	mustApply("promote to the canary cluster", Promote, nil)

	// Entering used the approval up: the rest of the wave waits for its own.
	want := []string{
		"r2026-10/prod-h100: the rest of wave prod-h100, after its canary cluster prod-h100-a",
		"r2026-10/prod-h100-a: the canary node(s) of cluster prod-h100-a, once they have soaked (its DriverRollout waits for approval)",
	}
	if diff := cmp.Diff(want, waits()); diff != "" {
		t.Errorf("waits at the canary cluster (-want +got):\n%s", diff)
	}
	// The canary node of prod-h100-a has not soaked yet: refused, saying
	// what does wait.
	refused("approve a canary still upgrading", approve("r2026-10/prod-h100-a"), fakeCanary{}, "the canary node(s) of cluster prod-h100-a do not wait for approval yet (DriverRollout r2026-10 is Progressing, canary InProgress); waiting: r2026-10/prod-h100")
	refused("approve a canary with no way to look", approve("r2026-10/prod-h100-a"), nil, "no way to see whether the canary of cluster prod-h100-a waits for approval")
	res := mustApply("approve the soaked canary", approve("r2026-10/prod-h100-a"), fakeCanary{"prod-h100-a": true})
	if !strings.Contains(res.Message, "Approved: the canary node(s) of cluster prod-h100-a") || approval("prod-h100-a") != "r2026-10" {
		t.Errorf("the canary approval is not in the commit or the DriverRollout:\n%s\napproval %q", res.Message, approval("prod-h100-a"))
	}

	// The wave's approval lets the release go on; it approves no canary
	// node inside the wave's other clusters.
	mustApply("approve the rest of prod-h100", approve("r2026-10/prod-h100"), nil)
	mustApply("promote to all of prod-h100", Promote, nil)
	if got := approval("prod-h100-b"); got != "" {
		t.Errorf("prod-h100-b's canary is approved (%q) by the wave's approval", got)
	}
	if diff := cmp.Diff([]string{"r2026-10/prod-h100-b: the canary node(s) of cluster prod-h100-b, once they have soaked (its DriverRollout waits for approval)"}, waits()); diff != "" {
		t.Errorf("waits in all of prod-h100 (-want +got):\n%s", diff)
	}
	refused("approve the canary cluster twice", approve("r2026-10/prod-h100-a"), fakeCanary{"prod-h100-a": true}, "(it is approved already)")
}
