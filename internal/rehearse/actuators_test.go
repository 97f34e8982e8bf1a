package rehearse

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// TestCompareRunsBothActuatorsOnTheSameNodes: the same policy, nodes and
// seed under each actuator; a failed node rolls back under gpufleet's and is
// quarantined under the operator's (it cannot roll one node back), and the
// table says what the operator's path cannot do.
func TestCompareRunsBothActuatorsOnTheSameNodes(t *testing.T) {
	all, err := Options{
		Fleet: example(t, nil), Cluster: "stg-h100", Release: "r2026-10", Nodes: 12, Seed: 3,
		FailRate: 0.2, FailRateSet: true, Start: start,
	}.Compare(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || len(actuatorRuns(all[0])) != 2 {
		t.Fatalf("comparisons %+v, want one cluster with two runs", all)
	}
	g, o := actuatorRuns(all[0])[0], actuatorRuns(all[0])[1]
	if g.Actuator != v1alpha1.ActuatorGPUFleet || o.Actuator != v1alpha1.ActuatorGPUOperator {
		t.Fatalf("actuators %s, %s", g.Actuator, o.Actuator)
	}
	if g.Rehearsal.Policy != o.Rehearsal.Policy || g.Rehearsal.Report.Nodes != o.Rehearsal.Report.Nodes {
		t.Errorf("not the same policy and nodes: %q/%d vs %q/%d", g.Rehearsal.Policy, g.Rehearsal.Report.Nodes, o.Rehearsal.Policy, o.Rehearsal.Report.Nodes)
	}
	if g.Rehearsal.Report.Failures == 0 {
		t.Fatalf("no failure drawn: pick another seed")
	}
	if o.Rehearsal.Report.RolledBack != 0 || o.Rehearsal.Report.Quarantined == 0 {
		t.Errorf("operator: %d rolled back, %d quarantined; want none rolled back, the failed quarantined", o.Rehearsal.Report.RolledBack, o.Rehearsal.Report.Quarantined)
	}
	if g.Rehearsal.Report.RolledBack == 0 {
		t.Errorf("gpufleet: no node rolled back although %d failed", g.Rehearsal.Report.Failures)
	}
	var b bytes.Buffer
	if err := WriteComparisons(&b, all); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"gpufleet", "gpu-operator", "no per-node rollback", "label and taint"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the table does not say %q:\n%s", want, b.String())
		}
	}
}
