package verify

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/internal/fleet"
)

// bigWave is a fleet whose prod wave has n clusters, each of whose canary
// nodes a person approves, with [promotion] as given.
func bigWave(t *testing.T, n int, promotion string) *fleet.Fleet {
	t.Helper()
	var b strings.Builder
	b.WriteString("[releases.r1]\ngpu-operator = \"v25.3.4\"\nnetwork-operator = \"v25.4.0\"\ndriver = \"570.172.08\"\n\n")
	b.WriteString("[releases.r2]\ngpu-operator = \"v25.10.1\"\nnetwork-operator = \"v25.10.0\"\ndriver = \"580.95.05\"\n\n")
	b.WriteString("[clusters.stg]\nenvironment = \"staging\"\n[[clusters.stg.pools]]\nname = \"h100\"\nproduct = \"NVIDIA-H100-80GB-HBM3\"\nnodes = 4\n\n")
	var names []string
	for i := range n {
		name := fmt.Sprintf("prod-%02d", i)
		names = append(names, `"`+name+`"`)
		fmt.Fprintf(&b, "[clusters.%s]\nenvironment = \"prod\"\n[[clusters.%s.pools]]\nname = \"h100\"\nproduct = \"NVIDIA-H100-80GB-HBM3\"\nnodes = 8\n\n", name, name)
	}
	b.WriteString("[[waves]]\nname = \"staging\"\nclusters = [\"stg\"]\n\n[[waves]]\nname = \"prod\"\nclusters = [" + strings.Join(names, ", ") + "]\n\n")
	b.WriteString("[policy.environments.staging]\nauto-approve-canary = true\n\n[promotion]\n" + promotion)
	f, err := fleet.Parse("fleet.toml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestFindStepsManyCanaryApprovals: a change approving the canary nodes of
// every cluster of a 40-cluster wave is 40 steps, found at once; searching
// the order of the approvals would try every subset of the wave.
func TestFindStepsManyCanaryApprovals(t *testing.T) {
	base := bigWave(t, 40, "stable = \"r1\"\nrollout = { release = \"r2\", wave = \"prod\" }\n")
	var approved []string
	for i := range 40 {
		approved = append(approved, fmt.Sprintf(`"r2/prod-%02d"`, i))
	}
	head := bigWave(t, 40, "stable = \"r1\"\nrollout = { release = \"r2\", wave = \"prod\" }\napproved = ["+strings.Join(approved, ", ")+"]\n")
	began := time.Now()
	steps, ok := FindSteps(Search{Head: head, Base: base.Promotion})
	if !ok || len(steps) != 40 || steps[0].Summary != "approve r2/prod-00" {
		t.Fatalf("found %v, %d step(s)", ok, len(steps))
	}
	// One approval of a cluster the rollout has not reached: no sequence,
	// and the diagnosis, which explores every state within reach, names it.
	head = bigWave(t, 40, "stable = \"r1\"\nrollout = { release = \"r2\", wave = \"staging\" }\napproved = [\"r2/prod-07\"]\n")
	base = bigWave(t, 40, "stable = \"r1\"\nrollout = { release = \"r2\", wave = \"staging\" }\n")
	s := Search{Head: head, Base: base.Promotion}
	if _, ok := FindSteps(s); ok {
		t.Fatal("an approval of what does not wait was found a sequence")
	}
	refusals := Diagnose(s)
	if len(refusals) != 1 || refusals[0].Message != "approved r2/prod-07, which nothing waits for (nothing does)" || refusals[0].Key != "promotion.approved[0]" {
		t.Errorf("refusals: %+v", refusals)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("took %s", took)
	}
}

// TestStateKeyApprovalsAsSets: two [promotion]s that list the same
// approvals in another order, or one twice, are the same state.
func TestStateKeyApprovalsAsSets(t *testing.T) {
	a := fleet.Promotion{Stable: "r1", Rollout: &fleet.Rollout{Release: "r2", Wave: "prod"}, Approved: []string{"r2/b", "r2/a"}}
	b := fleet.Promotion{Stable: "r1", Rollout: &fleet.Rollout{Release: "r2", Wave: "prod", Stage: fleet.StageAll}, Approved: []string{"r2/a", "r2/b", "r2/a"}}
	if stateKey(a) != stateKey(b) {
		t.Errorf("%s != %s", stateKey(a), stateKey(b))
	}
	b.Paused = true
	if stateKey(a) == stateKey(b) {
		t.Error("paused does not count")
	}
}
