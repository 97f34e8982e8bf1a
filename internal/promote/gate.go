package promote

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
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
		note := judgeAborted(f, rep)
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
		return true, fmt.Sprintf("%s at %s (%d checks)%s", strings.Join(clusters, ", "), rev[:min(12, len(rev))], len(rep.Checks), note), nil
	}
}

// judgeAborted adapts the report for the clusters an aborted rollout
// reached. Such a cluster runs the stable release, but its DriverRollout
// (the one render writes, which the gate looks for) still carries the
// aborted release, with spec.abort set, so that its nodes roll back: it
// never completes at the stable driver. What ends the abort is that every
// node is back on the stable driver, which the node checks see; the
// DriverRollout check is left out, and the summary says so.
func judgeAborted(f *fleet.Fleet, rep *gate.Report) string {
	r := f.Promotion.Rollout
	if r == nil || !r.Aborted {
		return ""
	}
	name := gate.RolloutCheck(r.Release)
	before := len(rep.Checks)
	rep.Checks = slices.DeleteFunc(rep.Checks, func(c gate.Check) bool { return c.Name == name && f.Touched(c.Cluster) })
	if len(rep.Checks) == before {
		return ""
	}
	return fmt.Sprintf("; the aborted DriverRollout %s is not judged, the nodes are", r.Release)
}

// RealCanary reads, through each cluster's kubeconfig context, whether the
// DriverRollout of the rollout under way waits for the approval of its
// canary node(s): the controller says so with its WaitingForApproval
// condition once the canary has soaked, for the spec it last observed.
func RealCanary(kubeconfig string, timeout time.Duration) CanaryFunc {
	return func(ctx context.Context, f *fleet.Fleet, cluster string) (bool, string, error) {
		r := f.Promotion.Rollout
		c := f.Clusters[cluster]
		if r == nil || c == nil {
			return false, "no rollout there", nil
		}
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		cl, err := gate.ClientFor(kubeconfig, c.Context)
		if err != nil {
			return false, "", err
		}
		dr := &v1alpha1.DriverRollout{}
		if err := cl.Get(ctx, client.ObjectKey{Name: r.Release}, dr); err != nil {
			return false, "", fmt.Errorf("read DriverRollout %s: %w", r.Release, err)
		}
		return canaryWaits(dr, f.Releases[r.Release].Driver)
	}
}

// canaryWaits judges a DriverRollout read from a cluster.
func canaryWaits(dr *v1alpha1.DriverRollout, driver string) (bool, string, error) {
	observed := fmt.Sprintf("DriverRollout %s is %s, canary %s", dr.Name, cmp.Or(string(dr.Status.Phase), "not started"), cmp.Or(string(dr.Status.Canary.Result), "not started"))
	switch {
	case dr.Spec.TargetVersion != driver:
		return false, fmt.Sprintf("DriverRollout %s targets %s, not %s: has Flux applied the rollout?", dr.Name, dr.Spec.TargetVersion, driver), nil
	case dr.Status.ObservedGeneration != dr.Generation:
		return false, observed + "; the controller has not observed its latest spec", nil
	case !apimeta.IsStatusConditionTrue(dr.Status.Conditions, v1alpha1.ConditionWaitingForApproval):
		return false, observed, nil
	}
	return true, observed, nil
}
