package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/cli"
	"github.com/gpufleet/gpufleet/internal/planner"
	"github.com/gpufleet/gpufleet/internal/render"
	"github.com/gpufleet/gpufleet/internal/testbed"
)

// story runs named checks in order. A step the rest of the story depends
// on stops it when it fails; a check does not.
type story struct {
	t *testing.T
	w *world
}

func (s *story) step(name string, fn func(w *world)) {
	s.t.Helper()
	if !s.t.Run(name, func(t *testing.T) { fn(s.w.in(t)) }) {
		s.t.Fatalf("the story cannot go on after %q failed", name)
	}
}

func (s *story) check(name string, fn func(w *world)) {
	s.t.Helper()
	s.t.Run(name, func(t *testing.T) { fn(s.w.in(t)) })
}

// TestFleetStory plays a release's whole life on two clusters: render and
// first sync, drift repair, a good release promoted from staging to prod
// (with a git revert on the way), and a drill release that fails at the
// staging canary node, is refused promotion and is aborted.
func TestFleetStory(t *testing.T) {
	began := time.Now()
	w := newWorld(t)
	t.Logf("testbed, controllers and node agents up in %s", since(began))
	s := &story{t: t, w: w}
	var rev string // the revision Flux should apply

	// ------------------------------------------------------------ first sync
	s.step("render writes every cluster's Flux folder", func(w *world) {
		if _, code := w.gpufleet("render", "-f", w.fleetFile); code != 0 {
			w.t.Fatalf("render exit %d", code)
		}
		for _, c := range clusters {
			for _, f := range []string{"kustomization.yaml", "flux-operators.yaml", "flux-config.yaml", "flux-lifecycle.yaml",
				"operators/gpu-operator-" + chartStable + ".yaml", "config/nvidiadriver-" + render.NVIDIADriverName(poolName, drvStable) + ".yaml", "lifecycle/driverrollout.yaml"} {
				if _, err := os.Stat(filepath.Join(w.dir, "clusters", c, f)); err != nil {
					w.t.Errorf("render did not write clusters/%s/%s", c, f)
				}
			}
		}
	})

	// seen[cluster][step] is when the step's first object appeared, and
	// ready[cluster][step] when its Kustomization was first Ready.
	seen := map[string]map[string]time.Duration{}
	ready := map[string]map[string]time.Duration{}
	s.step("commit and push; Flux applies the first commit in both clusters", func(w *world) {
		w.git("add", "-A")
		w.git("commit", "-q", "-m", "gpufleet render: the fleet's first render")
		t0 := time.Now()
		rev = w.push()
		probes := map[string][4]string{ // step -> apiVersion, kind, namespace, name
			"operators": {"apps/v1", "Deployment", "gpu-operator", "gpu-operator"},
			"config":    {"nvidia.com/v1alpha1", "NVIDIADriver", "", render.NVIDIADriverName(poolName, drvStable)},
			"lifecycle": {"gpufleet.io/v1alpha1", "DriverRollout", "", relStable},
		}
		for _, c := range clusters {
			seen[c], ready[c] = map[string]time.Duration{}, map[string]time.Duration{}
		}
		w.eventually(3*time.Minute, "the three steps applied and Ready in both clusters", func() (bool, string) {
			done := true
			var missing []string
			for _, c := range clusters {
				for step, p := range probes {
					if _, ok := seen[c][step]; !ok && w.exists(c, p[0], p[1], p[2], p[3]) {
						seen[c][step] = time.Since(t0)
					}
					if _, ok := ready[c][step]; !ok && kustomizationReadyAt(w, c, step, rev) {
						ready[c][step] = time.Since(t0)
					}
					if _, ok := ready[c][step]; !ok {
						done = false
						missing = append(missing, c+"/"+step)
					}
				}
			}
			return done, "not Ready yet: " + strings.Join(missing, ", ")
		})
		for _, c := range clusters {
			w.t.Logf("%s: objects appeared after %v; Kustomizations Ready after %v", c, seen[c], ready[c])
		}
	})
	for _, c := range clusters {
		s.check(c+": Flux applies operators, then config, then lifecycle", func(w *world) {
			order := []string{"operators", "config", "lifecycle"}
			for i := 1; i < len(order); i++ {
				prev, cur := order[i-1], order[i]
				if seen[c][cur] < seen[c][prev] {
					w.t.Errorf("%s's objects appeared (%s) before %s's (%s)", cur, seen[c][cur], prev, seen[c][prev])
				}
				// dependsOn: a step is applied only once the one before it is Ready.
				if seen[c][cur] < ready[c][prev] {
					w.t.Errorf("%s's objects appeared (%s) before %s was Ready (%s)", cur, seen[c][cur], prev, ready[c][prev])
				}
			}
		})
	}
	s.check("render --check: the pushed repository is up to date", func(w *world) {
		if _, code := w.gpufleet("render", "--check", "-f", w.fleetFile); code != 0 {
			w.t.Errorf("render --check exit %d", code)
		}
	})
	s.check("the real GPU Operator reports ClusterPolicy and every NVIDIADriver ready by itself", func(w *world) {
		for _, c := range clusters {
			w.eventually(2*time.Minute, c+": ClusterPolicy and NVIDIADrivers ready", func() (bool, string) {
				var objs []*unstructured.Unstructured
				policies := &unstructured.UnstructuredList{}
				policies.SetAPIVersion("nvidia.com/v1")
				policies.SetKind("ClusterPolicyList")
				drivers := &unstructured.UnstructuredList{}
				drivers.SetAPIVersion("nvidia.com/v1alpha1")
				drivers.SetKind("NVIDIADriverList")
				if err := w.client(c).List(context.Background(), policies); err != nil {
					return false, err.Error()
				}
				if err := w.client(c).List(context.Background(), drivers); err != nil {
					return false, err.Error()
				}
				for i := range policies.Items {
					objs = append(objs, &policies.Items[i])
				}
				for i := range drivers.Items {
					objs = append(objs, &drivers.Items[i])
				}
				if len(policies.Items) != 1 || len(drivers.Items) == 0 {
					return false, fmt.Sprintf("%d ClusterPolicies, %d NVIDIADrivers", len(policies.Items), len(drivers.Items))
				}
				var notReady []string
				for _, o := range objs {
					state, _, _ := unstructured.NestedString(o.Object, "status", "state")
					wrote, managers := operatorWrote(o)
					if state != "ready" || !wrote {
						notReady = append(notReady, fmt.Sprintf("%s %s: state %q, status written by %s", o.GetKind(), o.GetName(), state, managers))
					}
				}
				return len(notReady) == 0, strings.Join(notReady, "; ")
			})
		}
	})
	s.check("one driver DaemonSet per NVIDIADriver, its pods only on the nodes that NVIDIADriver selects", func(w *world) {
		for _, c := range clusters {
			w.checkDriverPlacement(c)
		}
	})
	s.check("the controller's default driver-pod selector matches the operator's real driver pods", func(w *world) {
		for _, c := range clusters {
			w.checkDefaultDriverPodSelector(c)
		}
	})
	s.check("both clusters run the stable release", func(w *world) {
		for _, c := range clusters {
			if got := w.operatorChart(c); got != "gpu-operator-"+chartStable {
				w.t.Errorf("%s: the GPU Operator's Deployment is of chart %s, want gpu-operator-%s", c, got, chartStable)
			}
			w.assertDrivers(c, drvStable)
		}
		// Nothing to change: staging's DriverRollout of the stable release
		// completes at once.
		w.waitRollout(stg, relStable, 30*time.Second, v1alpha1.PhaseCompleted)
	})
	s.check("gate --wave staging passes on the stable release", func(w *world) {
		if out, code := w.gate("staging"); code != 0 || !strings.Contains(out, "PASS") {
			w.t.Errorf("gate exit %d", code)
		}
	})

	// ------------------------------------------------------------ drift
	s.check("drift: a hand edit of a Flux-managed object is repaired within interval + apply time", func(w *world) {
		measureDrift(w, stg)
	})

	// ------------------------------------------------------------ a good release
	s.step("stg: a workload with a PodDisruptionBudget runs on the GPU nodes", func(w *world) {
		w.createWorkload(stg)
	})
	blockedBefore := evictions("blocked")
	s.step("start r2026-10: one commit, pushed", func(w *world) {
		if _, code := w.mutate("start", relGood); code != 0 {
			w.t.Fatalf("start exit %d", code)
		}
		if got := w.git("log", "-1", "--format=%s"); got != "gpufleet: start "+relGood+" at wave staging" {
			w.t.Errorf("commit subject %q", got)
		}
		rev = w.push()
	})
	s.step("stg: the DriverRollout upgrades the staging nodes, canary first", func(w *world) {
		w.waitApplied(stg, rev, "operators", "config")
		dr := w.waitRollout(stg, relGood, 3*time.Minute, v1alpha1.PhaseCompleted)
		w.assertDrivers(stg, drvGood)
		if dr.Status.Canary.Result != v1alpha1.CanaryPassed || len(dr.Status.Canary.Nodes) != 1 {
			w.t.Errorf("canary status %+v, want one canary node that passed", dr.Status.Canary)
		}
		w.waitApplied(stg, rev, "lifecycle")
		w.waitApplied(prod, rev)
	})
	s.check("stg: on each node the DaemonSet controller replaced the old driver pod by the new NVIDIADriver's, Ready on the new version", func(w *world) {
		w.checkDriverPlacement(stg)
		seen := w.rec[stg].seen()
		old, cur := render.NVIDIADriverName(poolName, drvStable), render.NVIDIADriverName(poolName, drvGood)
		dss := w.driverDaemonSets(stg)
		for node, v := range w.drivers(stg) {
			history := seen.driverPods[node]
			// The last pod is the new NVIDIADriver's; an earlier one was the old one's.
			last := history[len(history)-1]
			ds, version, _ := strings.Cut(strings.TrimPrefix(last, "DaemonSet/"), "@")
			if dss[ds] != cur || version != drvGood || v != drvGood {
				w.t.Errorf("%s: last driver pod %s (NVIDIADriver %q), GFD %s; want a pod of %s at %s", node, last, dss[ds], v, cur, drvGood)
			}
			if !slices.ContainsFunc(history[:len(history)-1], func(e string) bool { return strings.HasSuffix(e, "@"+drvStable) }) {
				w.t.Errorf("%s: no pod of the old driver seen before the new one: %v", node, history)
			}
			w.t.Logf("%s: driver pods seen in turn: %v (old NVIDIADriver %s)", node, history, old)
		}
	})
	s.check("stg: drain honoured the workload's real PodDisruptionBudget", func(w *world) {
		seen := w.rec[stg].seen()
		blocked := evictions("blocked") - blockedBefore
		w.t.Logf("evictions refused with 429 during the rollout: %.0f; fewest Ready workers seen: %d of %d (budget: at least %d)",
			blocked, seen.minReady, workloadReplicas, workloadMin)
		if seen.minReady < workloadMin {
			w.t.Errorf("the workload fell to %d Ready workers, below its budget of %d", seen.minReady, workloadMin)
		}
		if blocked < 1 {
			w.t.Errorf("no eviction was ever refused: two nodes drained at once while a replacement worker took %s to start should meet the budget", workloadStartup)
		}
	})
	s.check("prod is untouched while staging rolls", func(w *world) {
		if got := w.operatorChart(prod); got != "gpu-operator-"+chartStable {
			w.t.Errorf("prod: the GPU Operator's Deployment is of chart %s, want gpu-operator-%s", got, chartStable)
		}
		w.assertDrivers(prod, drvStable)
		if w.rollout(prod, relGood) != nil {
			w.t.Errorf("prod has a DriverRollout %s", relGood)
		}
	})
	s.check("gate --wave staging passes", func(w *world) {
		if _, code := w.gate("staging"); code != 0 {
			w.t.Errorf("gate exit %d", code)
		}
	})

	// ------------------------------------------------------------ git revert
	s.step("git revert of the start commit returns staging to r2026-06", func(w *world) {
		start := w.git("rev-parse", "HEAD")
		w.git("revert", "--no-edit", start)
		rev = w.push()
		t0 := time.Now()
		w.waitApplied(stg, rev, "operators", "config")
		w.waitDrivers(stg, drvStable, 2*time.Minute)
		w.t.Logf("staging back on driver %s %s after the revert was pushed", drvStable, since(t0))
		w.eventually(time.Minute, "the reverted release's DriverRollout pruned", func() (bool, string) {
			return w.rollout(stg, relGood) == nil, "still there"
		})
		w.waitApplied(stg, rev, "lifecycle")
		w.waitApplied(prod, rev)
	})
	s.step("start r2026-10 again: staging upgrades again", func(w *world) {
		if _, code := w.mutate("start", relGood); code != 0 {
			w.t.Fatalf("start exit %d", code)
		}
		rev = w.push()
		w.waitApplied(stg, rev, "operators", "config")
		w.waitRollout(stg, relGood, 3*time.Minute, v1alpha1.PhaseCompleted)
		w.assertDrivers(stg, drvGood)
		w.waitApplied(stg, rev, "lifecycle")
		w.waitApplied(prod, rev)
	})

	// ------------------------------------------------------------ promotion to prod
	approval := relGood + "/" + waveProduction
	s.check("status prints the approval the flow waits for", func(w *world) {
		out, code := w.gpufleet("status", "-f", w.fleetFile)
		if code != 0 || !strings.Contains(out, "next: gpufleet approve "+approval) {
			w.t.Errorf("status (exit %d) does not name `gpufleet approve %s` as the next command", code, approval)
		}
	})
	s.check("promote without the approval is refused and changes nothing", func(w *world) {
		head := w.git("rev-parse", "HEAD")
		if out, code := w.mutate("promote"); code != 1 || !strings.Contains(out, "gpufleet approve "+approval) {
			w.t.Errorf("promote exit %d, want 1 naming the approval", code)
		}
		if w.git("rev-parse", "HEAD") != head || w.git("status", "--porcelain") != "" {
			w.t.Error("a refused promotion changed the repository")
		}
	})
	s.check("a wrong approval name is refused and changes nothing", func(w *world) {
		head := w.git("rev-parse", "HEAD")
		if _, code := w.mutate("approve", relGood+"/"+stg); code != 1 {
			w.t.Errorf("approve of a name nothing waits for: exit %d, want 1", code)
		}
		if w.git("rev-parse", "HEAD") != head || w.git("status", "--porcelain") != "" {
			w.t.Error("a refused approval changed the repository")
		}
	})
	s.step("approve with the printed name", func(w *world) {
		if _, code := w.mutate("approve", approval); code != 0 {
			w.t.Fatalf("approve exit %d", code)
		}
		if got := w.git("log", "-1", "--format=%s"); got != "gpufleet: approve "+approval {
			w.t.Errorf("commit subject %q", got)
		}
		rev = w.push()
		// The gate checks that Flux applied HEAD: wait for it.
		for _, c := range clusters {
			w.waitApplied(c, rev)
		}
	})
	downNode := poolName + "-2"
	s.step("prod: a node whose kubelet stops is marked NotReady and tainted by the real node lifecycle controller", func(w *world) {
		if err := w.sims[prod].SetNotReady(context.Background(), downNode); err != nil {
			w.t.Fatal(err)
		}
		t0 := time.Now()
		w.eventually(time.Minute, downNode+" NotReady and tainted unreachable", func() (bool, string) {
			n := &corev1.Node{}
			if err := w.client(prod).Get(context.Background(), client.ObjectKey{Name: downNode}, n); err != nil {
				return false, err.Error()
			}
			tainted := slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeUnreachable })
			return !planner.NodeReady(n) && tainted, fmt.Sprintf("ready %t taints %v", planner.NodeReady(n), n.Spec.Taints)
		})
		w.t.Logf("%s NotReady and tainted %s after its heartbeats stopped", downNode, since(t0))
	})
	s.step("promote: the gate passes and prod gets r2026-10", func(w *world) {
		if _, code := w.mutate("promote"); code != 0 {
			w.t.Fatalf("promote exit %d", code)
		}
		if body := w.git("log", "-1", "--format=%B"); !strings.Contains(body, "Gate passed: "+stg+" at") {
			w.t.Errorf("the commit does not carry the gate result:\n%s", body)
		}
		rev = w.push()
		w.waitApplied(prod, rev, "operators", "config")
	})
	s.step("prod: the rollout upgrades every node but the NotReady one, which it counts as unavailable and does not start", func(w *world) {
		w.eventually(3*time.Minute, "every other prod node Done", func() (bool, string) {
			dr := w.rollout(prod, relGood)
			if dr == nil {
				return false, "no DriverRollout"
			}
			return dr.Status.Nodes.Done == poolNodes-1, fmt.Sprintf("%+v", dr.Status.Nodes)
		})
		// Long enough for the planner to have started the node had it wanted to.
		time.Sleep(5 * time.Second)
		dr := w.rollout(prod, relGood)
		if dr.Status.Phase == v1alpha1.PhaseCompleted {
			w.t.Errorf("the rollout completed with %s NotReady", downNode)
		}
		seen := w.rec[prod].seen()
		for _, rp := range seen.notReady[downNode] {
			// What an earlier rollout left (Done, in r2026-06) is not this one's doing.
			if rollout, phase, _ := strings.Cut(rp, "/"); rollout == relGood && phase != string(v1alpha1.NodePending) {
				w.t.Errorf("%s was %s in %s while NotReady", downNode, phase, rollout)
			}
		}
		w.t.Logf("%s while NotReady: %v", downNode, seen.notReady[downNode])
		if seen.maxUnavailable > 2 {
			w.t.Errorf("%d nodes were out of service at once, more than max-unavailable 2", seen.maxUnavailable)
		}
		if c := apimeta.FindStatusCondition(dr.Status.Conditions, v1alpha1.ConditionReady); c != nil {
			w.t.Logf("while %s is NotReady: phase %s, %s: %s (most nodes out at once: %d)", downNode, dr.Status.Phase, c.Reason, c.Message, seen.maxUnavailable)
		}
		if err := w.sims[prod].SetReady(context.Background(), downNode); err != nil {
			w.t.Fatal(err)
		}
	})
	s.step("prod: the DriverRollout upgrades the prod nodes, canary first", func(w *world) {
		dr := w.waitRollout(prod, relGood, 3*time.Minute, v1alpha1.PhaseCompleted)
		w.assertDrivers(prod, drvGood)
		if dr.Status.Canary.Result != v1alpha1.CanaryPassed || len(dr.Status.Canary.Nodes) != 1 {
			w.t.Errorf("canary status %+v, want one canary node that passed", dr.Status.Canary)
		}
		w.waitApplied(prod, rev, "lifecycle")
	})
	s.step("gate --wave production passes once the operator has settled", func(w *world) {
		// The node that came back had its pods marked NotReady by the node
		// lifecycle controller; the operator reports ClusterPolicy ready
		// again once its operands there are Ready: a person re-runs the gate.
		t0 := time.Now()
		w.eventually(2*time.Minute, "gate --wave production to pass", func() (bool, string) {
			var out bytes.Buffer
			code := cli.Run(context.Background(), []string{"gate", "--wave", waveProduction, "-f", w.fleetFile, "--kubeconfig", w.tb.Kubeconfig, "--timeout", "20s"},
				cli.Streams{In: strings.NewReader(""), Out: &out, Err: &out})
			return code == 0, out.String()
		})
		w.t.Logf("gate --wave production passed %s after the prod rollout completed", since(t0))
	})
	s.step("promote after the last wave: r2026-10 is stable", func(w *world) {
		// Becoming stable gates every cluster, so both must have applied HEAD.
		for _, c := range clusters {
			w.waitApplied(c, rev)
		}
		if _, code := w.mutate("promote"); code != 0 {
			w.t.Fatalf("promote exit %d", code)
		}
		if got := w.git("log", "-1", "--format=%s"); got != "gpufleet: "+relGood+" is stable: every wave passed" {
			w.t.Errorf("commit subject %q", got)
		}
		rev = w.push()
		for _, c := range clusters {
			w.waitApplied(c, rev)
		}
	})
	s.check("status says done: r2026-10 stable, no rollout", func(w *world) {
		out, code := w.gpufleet("status", "-f", w.fleetFile)
		if code != 0 || !strings.Contains(out, "stable: "+relGood) || strings.Contains(out, "rollout:") || strings.Contains(out, "waiting:") {
			w.t.Errorf("status (exit %d) does not say the rollout is done", code)
		}
	})

	// ------------------------------------------------------------ the drill
	s.step("start the drill release", func(w *world) {
		if _, code := w.mutate("start", relDrill); code != 0 {
			w.t.Fatalf("start exit %d", code)
		}
		if body := w.git("log", "-1", "--format=%B"); !strings.Contains(body, "drill") {
			w.t.Errorf("the commit does not say the release is a drill:\n%s", body)
		}
		rev = w.push()
		w.waitApplied(stg, rev, "operators", "config")
		w.waitApplied(prod, rev)
	})
	s.step("stg: the canary node fails, rolls back, the rollout stalls", func(w *world) {
		dr := w.waitRollout(stg, relDrill, 3*time.Minute, v1alpha1.PhaseStalled)
		if dr.Status.Canary.Result != v1alpha1.CanaryFailed {
			w.t.Errorf("canary result %q, want Failed", dr.Status.Canary.Result)
		}
		if c := apimeta.FindStatusCondition(dr.Status.Conditions, v1alpha1.ConditionStalled); c == nil || c.Status != "True" {
			w.t.Errorf("no Stalled condition: %+v", dr.Status.Conditions)
		} else {
			w.t.Logf("Stalled: %s: %s", c.Reason, c.Message)
		}
		// The failed canary goes back to the stable driver; no other node moved.
		w.eventually(time.Minute, "the canary node rolled back", func() (bool, string) {
			dr := w.rollout(stg, relDrill)
			return dr.Status.Nodes.RolledBack == 1 && dr.Status.Nodes.Pending == poolNodes-1, fmt.Sprintf("%+v", dr.Status.Nodes)
		})
		w.assertDrivers(stg, drvGood)
		n := &corev1.Node{}
		if err := w.client(stg).Get(context.Background(), client.ObjectKey{Name: dr.Status.Canary.Nodes[0]}, n); err != nil {
			w.t.Fatal(err)
		}
		if n.Labels[v1alpha1.LabelDriver] != drvGood || n.Spec.Unschedulable {
			w.t.Errorf("canary node %s: driver label %s, unschedulable %t; want %s and back in service", n.Name, n.Labels[v1alpha1.LabelDriver], n.Spec.Unschedulable, drvGood)
		}
	})
	s.check("gate --wave staging fails", func(w *world) {
		if _, code := w.gate("staging"); code != 1 {
			w.t.Errorf("gate exit %d, want 1", code)
		}
	})
	drillApproval := relDrill + "/" + waveProduction
	s.step("approve the drill into prod (the gate must still stop it)", func(w *world) {
		if _, code := w.mutate("approve", drillApproval); code != 0 {
			w.t.Fatalf("approve exit %d", code)
		}
		rev = w.push()
		w.waitApplied(stg, rev, "operators", "config")
		w.waitApplied(prod, rev)
	})
	s.check("promote is refused by the gate and changes nothing", func(w *world) {
		head := w.git("rev-parse", "HEAD")
		out, code := w.mutate("promote")
		if code != 1 {
			w.t.Errorf("promote exit %d, want 1", code)
		}
		if !strings.Contains(out, "gate FAIL") || !strings.Contains(out, "lifecycle/DriverRollout/"+relDrill) {
			w.t.Errorf("promote did not print the failed gate naming the drill's DriverRollout")
		}
		if w.git("rev-parse", "HEAD") != head || w.git("status", "--porcelain") != "" {
			w.t.Error("a refused promotion changed the repository")
		}
	})
	s.check("prod never sees the drill", func(w *world) {
		w.assertDrivers(prod, drvGood)
		if w.rollout(prod, relDrill) != nil {
			w.t.Errorf("prod has a DriverRollout %s", relDrill)
		}
	})
	s.step("abort returns staging to the stable release", func(w *world) {
		if _, code := w.mutate("abort"); code != 0 {
			w.t.Fatalf("abort exit %d", code)
		}
		rev = w.push()
		w.waitApplied(stg, rev, "operators", "config")
		w.eventually(time.Minute, "the drill's DriverRollout aborted", func() (bool, string) {
			dr := w.rollout(stg, relDrill)
			if dr == nil {
				return true, ""
			}
			return dr.Spec.Abort, fmt.Sprintf("abort=%t phase %s", dr.Spec.Abort, dr.Status.Phase)
		})
		w.waitDrivers(stg, drvGood, time.Minute)
		out, _ := w.gpufleet("status", "-f", w.fleetFile)
		if !strings.Contains(out, "stable: "+relGood) || !strings.Contains(out, "ABORTED") {
			w.t.Errorf("status does not say the drill was aborted")
		}
	})
	s.check("render --check: the repository is up to date at the end", func(w *world) {
		if _, code := w.gpufleet("render", "--check", "-f", w.fleetFile); code != 0 {
			w.t.Errorf("render --check exit %d", code)
		}
	})

	// ------------------------------------------------------------ over the whole story
	s.check("recorded over every rollout: at no moment did two NVIDIADrivers select the same node", func(w *world) {
		for _, c := range clusters {
			seen := w.rec[c].seen()
			w.t.Logf("%s: %d samples (%d failed reads)", c, seen.samples, seen.errs)
			if seen.samples < 100 {
				w.t.Errorf("%s: only %d samples", c, seen.samples)
			}
			if len(seen.overlaps) > 0 {
				w.t.Errorf("%s: %d samples with a node selected twice, first: %v", c, len(seen.overlaps), seen.overlaps[0])
			}
		}
	})
	s.check("the operator's own upgrade controller never labelled a node while gpufleet rolled", func(w *world) {
		for _, c := range clusters {
			if seen := w.rec[c].seen(); len(seen.upgrade) > 0 {
				w.t.Errorf("%s: %s seen %d times, first %s", c, labelUpgradeState, len(seen.upgrade), seen.upgrade[0])
			}
		}
	})

	// ------------------------------------------------------------ the serving stack, SOPS
	if !w.stackCRDs {
		t.Logf("serving stack skipped: the Flux image automation and notification CRDs are not in the testbed folder (make testbin)")
	} else {
		stackStory(s)
	}
	t.Logf("the story took %s", since(began))
}

// kustomizationReadyAt reports whether cluster's Kustomization name is
// Ready with revision applied.
func kustomizationReadyAt(w *world, cluster, name, revision string) bool {
	ks := &kustomizev1.Kustomization{}
	if err := w.client(cluster).Get(context.Background(), client.ObjectKey{Namespace: testbed.FluxNamespace, Name: name}, ks); err != nil {
		return false
	}
	return ks.Status.LastAppliedRevision == revision && apimeta.IsStatusConditionTrue(ks.Status.Conditions, "Ready")
}

func readyTrue(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// measureDrift edits the lifecycle Kustomization's interval by hand (the
// root Kustomization applies it from clusters/<cluster>/flux-lifecycle.yaml)
// and measures how long Flux takes to put it back. The edit falls at an
// arbitrary point of the root Kustomization's interval, so the repair takes
// on average rootInterval/2 plus the apply time, and at most rootInterval
// plus the apply time. The apply time is measured afterwards, as the time
// the root Kustomization takes to handle a reconcile request.
func measureDrift(w *world, cluster string) {
	ctx := context.Background()
	c := w.client(cluster)
	const want = "2m0s"
	if err := testbed.Update(ctx, c, "kustomize.toolkit.fluxcd.io/v1", "Kustomization", testbed.FluxNamespace, "lifecycle", false, func(u *unstructured.Unstructured) {
		if got, _, _ := unstructured.NestedString(u.Object, "spec", "interval"); got != want {
			w.t.Fatalf("lifecycle interval is %s before the edit, want %s", got, want)
		}
		_ = unstructured.SetNestedField(u.Object, "1h0m0s", "spec", "interval")
	}); err != nil {
		w.t.Fatal(err)
	}
	edited := time.Now()
	w.eventually(2*rootInterval+30*time.Second, "Flux to restore the lifecycle Kustomization's interval", func() (bool, string) {
		ks := &kustomizev1.Kustomization{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: testbed.FluxNamespace, Name: "lifecycle"}, ks); err != nil {
			return false, err.Error()
		}
		return ks.Spec.Interval.Duration.String() == want, ks.Spec.Interval.Duration.String()
	})
	repair := time.Since(edited)

	root := client.ObjectKey{Namespace: testbed.FluxNamespace, Name: "flux-system"}
	token := time.Now().Format(time.RFC3339Nano)
	t0 := time.Now()
	if err := testbed.Update(ctx, c, "kustomize.toolkit.fluxcd.io/v1", "Kustomization", root.Namespace, root.Name, false, func(u *unstructured.Unstructured) {
		ann := u.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann["reconcile.fluxcd.io/requestedAt"] = token
		u.SetAnnotations(ann)
	}); err != nil {
		w.t.Fatal(err)
	}
	w.eventually(time.Minute, "the root Kustomization to handle a reconcile request", func() (bool, string) {
		ks := &kustomizev1.Kustomization{}
		if err := c.Get(ctx, root, ks); err != nil {
			return false, err.Error()
		}
		return ks.Status.LastHandledReconcileAt == token, ks.Status.LastHandledReconcileAt
	})
	apply := time.Since(t0)

	bound := rootInterval + apply + 5*time.Second
	w.t.Logf("drift repaired in %s; root interval %s, apply time %s: expected on average interval/2 + apply = %s, at most interval + apply = %s",
		repair.Round(10*time.Millisecond), rootInterval, apply.Round(10*time.Millisecond), (rootInterval/2 + apply).Round(10*time.Millisecond), (rootInterval + apply).Round(10*time.Millisecond))
	if repair > bound {
		w.t.Errorf("drift repaired in %s, more than interval + apply time + 5s slack (%s)", repair, bound)
	}
}

// stackStory adds the serving stack with SOPS-encrypted Secrets to the
// fleet: each cluster gets its environment's age key as flux-system/sops-age,
// "gpufleet secret encrypt" writes the Secrets encrypted, and the real
// kustomize-controller decrypts and applies them. No pod ever runs (no
// scheduler or kubelet), so the app's own Kustomization never becomes Ready;
// the infrastructure Kustomizations do, in dependency order.
func stackStory(s *story) {
	const (
		masterKey = "sk-e2e-master-6f1c2b" // the plaintext that must never reach git
		token     = "e2e-webhook-token-93ad"
	)
	var rev string
	s.step("serving stack: age keys in the clusters, Secrets encrypted with gpufleet secret encrypt, pushed", func(w *world) {
		recipients := map[string]string{}
		for env, cluster := range map[string]string{"staging": stg, "prod": prod} {
			id, err := age.GenerateX25519Identity()
			if err != nil {
				w.t.Fatal(err)
			}
			recipients[env] = id.Recipient().String()
			sec := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "sops-age", Namespace: testbed.FluxNamespace},
				StringData: map[string]string{"age.agekey": id.String()},
			}
			if err := w.client(cluster).Create(context.Background(), sec); err != nil {
				w.t.Fatal(err)
			}
		}
		stack := fmt.Sprintf(`
[stack]
review-branch = "image-updates"

[stack.age-recipients]
staging = %q
prod = %q

[stack.services.litellm]
layer = "gateway"
namespace = "llm-gateway"
startup = "1m"
image = "ghcr.io/berriai/litellm"
tag = "1.67.0"
tag-range = ">=1.67.0 <2.0.0"
port = 4000
health = "/health/readiness"
secrets = ["litellm-master-key"]
`, recipients["staging"], recipients["prod"])
		f, err := os.OpenFile(w.fleetFile, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			w.t.Fatal(err)
		}
		_, err = f.WriteString(stack)
		if err := errors.Join(err, f.Close()); err != nil {
			w.t.Fatal(err)
		}
		if _, code := w.gpufleet("render", "-f", w.fleetFile); code != 0 {
			w.t.Fatalf("render exit %d", code)
		}
		if _, code := w.gpufleet("secret", "encrypt", "-f", w.fleetFile, "--webhook-token", "--from-literal", "token="+token); code != 0 {
			w.t.Fatalf("secret encrypt --webhook-token exit %d", code)
		}
		for _, env := range []string{"staging", "prod"} {
			if _, code := w.gpufleet("secret", "encrypt", "-f", w.fleetFile, "--env", env, "--service", "litellm", "--name", "litellm-master-key", "--from-literal", "master-key="+masterKey); code != 0 {
				w.t.Fatalf("secret encrypt --env %s exit %d", env, code)
			}
		}
		w.git("add", "-A")
		w.git("commit", "-q", "-m", "Add the serving stack with its encrypted Secrets")
		rev = w.push()
	})
	s.check("serving stack: no plaintext Secret in git", func(w *world) {
		for _, plain := range []string{masterKey, token} {
			cmd := exec.Command("git", "-C", w.dir, "grep", "-q", "-F", plain, "HEAD")
			if err := cmd.Run(); err == nil {
				w.t.Errorf("the plaintext %q is in the committed tree", plain)
			}
		}
		b, err := os.ReadFile(filepath.Join(w.dir, "apps", "staging", "litellm", "secret-litellm-master-key.sops.yaml"))
		if err != nil {
			w.t.Fatal(err)
		}
		if !strings.Contains(string(b), "ENC[AES256_GCM,") || !strings.Contains(string(b), "sops:") {
			w.t.Errorf("the committed Secret is not SOPS-encrypted:\n%s", b)
		}
	})
	ready := map[string]time.Duration{}
	var secretAt time.Duration
	s.step("serving stack: kustomize-controller decrypts and applies the Secrets with the cluster's age key", func(w *world) {
		t0 := time.Now()
		c := w.client(stg)
		w.eventually(3*time.Minute, "the decrypted Secret llm-gateway/litellm-master-key in stg", func() (bool, string) {
			for _, k := range []string{"infra-controllers", "infra-configs", render.WebhookKustomization} {
				if _, ok := ready[k]; !ok && kustomizationReadyAt(w, stg, k, rev) {
					ready[k] = time.Since(t0)
				}
			}
			sec := &corev1.Secret{}
			if err := c.Get(context.Background(), client.ObjectKey{Namespace: "llm-gateway", Name: "litellm-master-key"}, sec); err != nil {
				return false, err.Error()
			}
			if secretAt == 0 {
				secretAt = time.Since(t0)
			}
			if got := string(sec.Data["master-key"]); got != masterKey {
				w.t.Fatalf("the Secret in the cluster holds %q, want the decrypted value", got)
			}
			return len(ready) == 3, fmt.Sprintf("Ready: %v", ready)
		})
		tok := &corev1.Secret{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: testbed.FluxNamespace, Name: render.WebhookSecretName}, tok); err != nil {
			w.t.Fatalf("webhook token Secret: %v", err)
		}
		if string(tok.Data["token"]) != token {
			w.t.Errorf("webhook token Secret holds %q, want the decrypted value", tok.Data["token"])
		}
		w.t.Logf("infra Kustomizations Ready after %v; the app's Secret appeared after %s", ready, secretAt)
	})
	s.check("serving stack: infra-controllers, then infra-configs, then the app", func(w *world) {
		if ready["infra-configs"] < ready["infra-controllers"] {
			w.t.Errorf("infra-configs Ready (%s) before infra-controllers (%s)", ready["infra-configs"], ready["infra-controllers"])
		}
		if secretAt < ready["infra-configs"] {
			w.t.Errorf("the app applied (%s) before infra-configs was Ready (%s)", secretAt, ready["infra-configs"])
		}
	})
}
