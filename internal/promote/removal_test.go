package promote

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufleet/gpufleet/internal/fleet"
)

// exampleWith is the example fleet with each edit (old, new) applied once.
func exampleWith(t *testing.T, edits ...[2]string) *fleet.Fleet {
	t.Helper()
	b, err := os.ReadFile("../../examples/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	for _, e := range edits {
		if !strings.Contains(src, e[0]) {
			t.Fatalf("the example fleet no longer has %q", e[0])
		}
		src = strings.Replace(src, e[0], e[1], 1)
	}
	f, err := fleet.Parse("fleet.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// Edits of the example fleet: r2026-10 (the first release naming v25.10.0)
// runs no Network Operator, on purpose or by leaving it out; the stable
// r2026-06 runs none; the prod-h100 wave has no canary cluster and
// requires no approval.
var (
	r202610None = [2]string{`network-operator = "v25.10.0"` + "\n" + `ofed-driver = "doca3.2.0-25.10-1.2.8.0-2"` + "\n", `network-operator = "none"` + "\n"}
	r202610Out  = [2]string{`network-operator = "v25.10.0"` + "\n" + `ofed-driver = "doca3.2.0-25.10-1.2.8.0-2"` + "\n", ""}
	r202606Out  = [2]string{`network-operator = "v25.4.0"` + "\n" + `ofed-driver = "25.04-0.6.1.0-2"   # the Network Operator's OFED (DOCA) driver` + "\n", ""}
	wholeWave   = [2]string{`canary = "prod-h100-a"` + "\n" + "pause-after-canary = true\nrequire-approval = true\n", ""}
)

// rollout puts r2026-10's rollout in [promotion] as given.
func rollout(spec string) [2]string {
	return [2]string{`stable = "r2026-06"`, "stable = \"r2026-06\"\nrollout = { release = \"r2026-10\", " + spec + " }"}
}

// TestRemovalsAreSaid: each step that moves clusters to a release that runs
// no Network Operator says, in plan and in the commit message, which
// version goes from which clusters and why; a step that removes nothing
// says nothing, and a start that would remove it without the release
// saying so is refused.
func TestRemovalsAreSaid(t *testing.T) {
	tests := []struct {
		name  string
		f     *fleet.Fleet
		step  Mutation
		want  []Removal
		wantM string
	}{
		{
			name: "start of a release that says none",
			f:    exampleWith(t, r202610None),
			step: startR,
			want: []Removal{{Operator: "network-operator", Version: "v25.4.0", Clusters: []string{"stg-h100"}, Release: "r2026-10",
				Message: `network-operator v25.4.0 is removed from cluster stg-h100 (release r2026-10 says network-operator = "none")`}},
		},
		{
			name: "promote into a whole wave",
			f:    exampleWith(t, r202610None, wholeWave, rollout(`wave = "staging"`)),
			step: Promote,
			want: []Removal{{Operator: "network-operator", Version: "v25.4.0", Clusters: []string{"prod-h100-a", "prod-h100-b"}, Release: "r2026-10",
				Message: `network-operator v25.4.0 is removed from clusters prod-h100-a, prod-h100-b (release r2026-10 says network-operator = "none")`}},
		},
		{
			name: "abort back to a stable release that never had one",
			f:    exampleWith(t, r202606Out, rollout(`wave = "staging"`)),
			step: Abort,
			want: []Removal{{Operator: "network-operator", Version: "v25.10.0", Clusters: []string{"stg-h100"}, Release: "r2026-06",
				Message: `network-operator v25.10.0 is removed from cluster stg-h100 (release r2026-06 runs no network-operator)`}},
		},
		{
			name: "a start that keeps it",
			f:    exampleWith(t),
			step: startR,
		},
		{
			name: "the release already reached becomes stable",
			f:    exampleWith(t, r202610None, wholeWave, rollout(`wave = "prod-ampere"`)),
			step: Promote,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := MakePlan(tt.f, tt.step, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, p.Removals); diff != "" {
				t.Errorf("removals (-want +got):\n%s", diff)
			}
			msg := message(p.Step, "")
			for _, r := range tt.want {
				if !strings.Contains(msg, "Removal: "+r.Message+".\n") {
					t.Errorf("the commit message does not say the removal:\n%s", msg)
				}
			}
			if len(tt.want) == 0 && strings.Contains(msg, "Removal:") {
				t.Errorf("a step that removes nothing says it does:\n%s", msg)
			}
		})
	}

	t.Run("a start that leaves it out is refused and not offered", func(t *testing.T) {
		f := exampleWith(t, r202610Out)
		_, err := MakePlan(f, startR, nil)
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), `network-operator is left out of release r2026-10, but the clusters run network-operator v25.4.0 (r2026-06, the stable release)`) {
			t.Errorf("start r2026-10: %v, want a refusal naming the Network Operator the clusters run", err)
		}
		if next := StatusOf(f).Next; next != "gpufleet start r2026-10-drill" {
			t.Errorf("status offers %q, want r2026-10-drill alone (start refuses r2026-10)", next)
		}
	})
}
