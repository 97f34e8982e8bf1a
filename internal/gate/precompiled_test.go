package gate

import (
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// TestEvaluatePrecompiledBranch gates a release of precompiled drivers: GFD
// reports a full version on each node, and any build of the release's
// branch counts as on the driver (planner.DriverMatches, the comparison the
// controller makes too); a node on another branch still fails.
func TestEvaluatePrecompiledBranch(t *testing.T) {
	e := exampleExpect(t, "stg-h100")
	rel := *e.Release
	rel.Driver, rel.Precompiled = "570", true
	e.Release = &rel
	for _, tt := range []struct {
		name, other string
		fail        bool
	}{
		{"every node on a build of the branch", "570.172.08", false},
		{"a node on another branch", "575.51.02", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := healthy(e)
			for i := range o.Nodes {
				o.Nodes[i].Labels[v1alpha1.LabelGFDDriverFull] = "570.124.06"
			}
			o.Nodes[1].Labels[v1alpha1.LabelGFDDriverFull] = tt.other
			var failed []string
			for _, c := range Evaluate(e, o) {
				if c.Status != Pass {
					failed = append(failed, c.Name.String()+": "+c.Message)
				}
			}
			switch {
			case !tt.fail && len(failed) > 0:
				t.Errorf("want every check to pass, got %v", failed)
			case tt.fail && (len(failed) != 1 || !strings.Contains(failed[0], "nodes/h100/driver") || !strings.Contains(failed[0], "="+tt.other)):
				t.Errorf("want nodes/h100/driver failing on %s, got %v", tt.other, failed)
			}
		})
	}
}
