package promote

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
)

// RealGate is the gate a promotion runs: gate.Run on the clusters, at the
// commit the fleet repository in dir is at (what Flux should have applied).
// report, when set, receives the full report of a gate that did not pass.
func RealGate(dir, kubeconfig string, timeout time.Duration, report func(*gate.Report)) GateFunc {
	return func(ctx context.Context, f *fleet.Fleet, clusters []string) (bool, string, error) {
		rev, err := gate.HeadRevision(dir)
		if err != nil {
			return false, "", err
		}
		rep := gate.Run(ctx, gate.Options{Fleet: f, Clusters: clusters, Revision: rev, Kubeconfig: kubeconfig, Timeout: timeout, Now: time.Now})
		if rep.Verdict() != gate.Pass {
			if report != nil {
				report(rep)
			}
			var failed []string
			for _, c := range rep.Failed() {
				failed = append(failed, fmt.Sprintf("%s %s: %s", c.Cluster, c.Name, c.Message))
			}
			return false, fmt.Sprintf("%s (%s)", rep.Verdict(), strings.Join(failed, "; ")), nil
		}
		return true, fmt.Sprintf("%s at %s (%d checks)", strings.Join(clusters, ", "), rev[:min(12, len(rev))], len(rep.Checks)), nil
	}
}
