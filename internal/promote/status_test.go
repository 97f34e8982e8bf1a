package promote

import (
	"testing"

	"github.com/gpufleet/gpufleet/internal/gate"
)

// TestAddGateShowsTheRollout: `status --live` shows each cluster's
// DriverRollout as the gate found it, so a rollout that completed with a
// node rolled back reads as such, not as a bare "fail".
func TestAddGateShowsTheRollout(t *testing.T) {
	st := &Status{Clusters: []ClusterStatus{{Cluster: "stg"}, {Cluster: "prod"}}}
	st.AddGate(&gate.Report{Checks: []gate.Check{
		{Cluster: "stg", Name: gate.RolloutCheck("r2"), Status: gate.Fail, Observed: "CompletedWithFailures, 23/24 done, budget used 1 of 2"},
		{Cluster: "stg", Name: gate.PoolDriverCheck("h100"), Status: gate.Fail},
		{Cluster: "prod", Name: gate.RolloutCheck("r1"), Status: gate.Pass, Observed: "Completed, 8/8 done, budget used 0 of 1"},
	}})
	stg, prod := st.Clusters[0], st.Clusters[1]
	if stg.Lifecycle != "CompletedWithFailures, 23/24 done, budget used 1 of 2" || stg.Gate != "fail (lifecycle/DriverRollout/r2, nodes/h100/driver)" {
		t.Errorf("stg: %+v", stg)
	}
	if prod.Lifecycle != "Completed, 8/8 done, budget used 0 of 1" || prod.Gate != "pass" {
		t.Errorf("prod: %+v", prod)
	}
}
