package lab

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/cli"
	"github.com/gpufleet/gpufleet/internal/planner"
	"github.com/gpufleet/gpufleet/internal/render"
)

// Step is one named step of a story: what the demo prints and plays, and
// what the end-to-end suite runs as a subtest of that name.
type Step struct {
	Name string
	// Check marks a step that looks at what the steps before it did: the
	// story goes on when it fails. A step that is not a check acts on the
	// world, and the story stops when it fails, since the rest builds on
	// it.
	Check bool
	// Run plays the step; it reports to w.T, and ends the step with
	// w.T.Fatal when it cannot go on.
	Run func(w *Play)
}

// FleetStory is the story of a release's whole life on the story's two
// clusters ([StoryOptions]): render and first sync, drift repair, a good
// release promoted from staging to prod (with a git revert on the way),
// and a drill release that fails at the staging canary node, is refused
// promotion and is aborted; with stack, the serving stack with its
// SOPS-encrypted Secrets at the end (it needs the Flux image automation
// and notification CRDs, [World.StackCRDs], and the sops program).
//
// The steps share the story's state (the revision Flux should apply), so
// a story is played once, in order, on a world of its own.
func FleetStory(stack bool) []Step {
	s := &fleetStory{}
	s.firstSync()
	s.drift()
	s.goodRelease()
	s.revert()
	s.promotion(true)
	s.drill()
	s.controllerUpgrade()
	s.overTheStory()
	if stack {
		s.stack()
	}
	return s.steps
}

// fleetStory builds the story's steps; each section's method adds its own.
type fleetStory struct {
	steps []Step
	// rev is the revision Flux should apply.
	rev string
	// blockedBefore counts the evictions refused before the good release
	// started.
	blockedBefore float64
}

func (s *fleetStory) step(name string, run func(w *Play)) {
	s.steps = append(s.steps, Step{Name: name, Run: run})
}

func (s *fleetStory) check(name string, run func(w *Play)) {
	s.steps = append(s.steps, Step{Name: name, Check: true, Run: run})
}

// firstSync is render and the first sync: Flux applies the three steps in
// order in both clusters, the real GPU Operator reports ready by itself, and
// both clusters run the stable release.
func (s *fleetStory) firstSync() {
	s.fluxFirstSync()
	s.firstSyncChecks()
}

// fluxFirstSync is render and the first sync on Flux: the three steps
// applied in order in both clusters.
func (s *fleetStory) fluxFirstSync() {
	s.step("render writes every cluster's Flux folder", func(w *Play) {
		if _, code := w.Gpufleet("render", "-f", w.FleetFile); code != 0 {
			w.T.Fatalf("render exit %d", code)
		}
		for _, c := range StoryClusters() {
			for _, f := range []string{"kustomization.yaml", "flux-operators.yaml", "flux-config.yaml", "flux-lifecycle.yaml",
				"operators/gpu-operator-" + ChartVersion + ".yaml", "config/nvidiadriver-" + render.NVIDIADriverName(PoolName, DriverStable) + ".yaml", "lifecycle/driverrollout.yaml"} {
				if _, err := os.Stat(filepath.Join(w.Dir, "clusters", c, f)); err != nil {
					w.T.Errorf("render did not write clusters/%s/%s", c, f)
				}
			}
		}
	})

	// seen[cluster][step] is when the step's first object appeared, and
	// ready[cluster][step] when its Kustomization was first Ready.
	seen := map[string]map[string]time.Duration{}
	ready := map[string]map[string]time.Duration{}
	s.step("commit and push; Flux applies the first commit in both clusters", func(w *Play) {
		w.Git("add", "-A")
		w.Git("commit", "-q", "-m", "gpufleet render: the fleet's first render")
		t0 := time.Now()
		s.rev = w.Push()
		probes := map[string][4]string{ // step -> apiVersion, kind, namespace, name
			"operators": {"apps/v1", "Deployment", "gpu-operator", "gpu-operator"},
			"config":    {v1alpha1.NVIDIADriverAPIVersion, v1alpha1.KindNVIDIADriver, "", render.NVIDIADriverName(PoolName, DriverStable)},
			"lifecycle": {"gpufleet.io/v1alpha1", "DriverRollout", "", ReleaseStable},
		}
		for _, c := range StoryClusters() {
			seen[c], ready[c] = map[string]time.Duration{}, map[string]time.Duration{}
		}
		w.Eventually(3*time.Minute, "the three steps applied and Ready in both clusters", func() (bool, string) {
			done := true
			var missing []string
			for _, c := range StoryClusters() {
				for step, p := range probes {
					if _, ok := seen[c][step]; !ok && w.Exists(c, p[0], p[1], p[2], p[3]) {
						seen[c][step] = time.Since(t0)
					}
					if _, ok := ready[c][step]; !ok && kustomizationReadyAt(w, c, step, s.rev) {
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
		for _, c := range StoryClusters() {
			w.T.Logf("%s: objects appeared after %v; Kustomizations Ready after %v", c, seen[c], ready[c])
		}
		w.Note("both clusters applied %s in %s", shortRev(s.rev), Since(t0))
	})
	for _, c := range StoryClusters() {
		s.check(c+": Flux applies operators, then config, then lifecycle", func(w *Play) {
			order := []string{"operators", "config", "lifecycle"}
			for i := 1; i < len(order); i++ {
				prev, cur := order[i-1], order[i]
				if seen[c][cur] < seen[c][prev] {
					w.T.Errorf("%s's objects appeared (%s) before %s's (%s)", cur, seen[c][cur], prev, seen[c][prev])
				}
				// dependsOn: a step is applied only once the one before it is Ready.
				if seen[c][cur] < ready[c][prev] {
					w.T.Errorf("%s's objects appeared (%s) before %s was Ready (%s)", cur, seen[c][cur], prev, ready[c][prev])
				}
			}
		})
	}
}

// firstSyncChecks are what holds after the first sync, whatever the
// engine: the pushed tree up to date, the real GPU Operator ready by
// itself, the driver pods where the NVIDIADrivers say, and both clusters
// on the stable release, which the gate passes.
func (s *fleetStory) firstSyncChecks() {
	s.check("render --check: the pushed repository is up to date", func(w *Play) {
		if _, code := w.Gpufleet("render", "--check", "-f", w.FleetFile); code != 0 {
			w.T.Errorf("render --check exit %d", code)
		}
	})
	s.check("the real GPU Operator reports ClusterPolicy and every NVIDIADriver ready by itself", func(w *Play) {
		for _, c := range StoryClusters() {
			w.Eventually(2*time.Minute, c+": ClusterPolicy and NVIDIADrivers ready", func() (bool, string) {
				var objs []*unstructured.Unstructured
				policies := &unstructured.UnstructuredList{}
				policies.SetAPIVersion(v1alpha1.ClusterPolicyAPIVersion)
				policies.SetKind(v1alpha1.KindClusterPolicy + "List")
				drivers := &unstructured.UnstructuredList{}
				drivers.SetAPIVersion(v1alpha1.NVIDIADriverAPIVersion)
				drivers.SetKind(v1alpha1.KindNVIDIADriver + "List")
				if err := w.Client(c).List(w.Context(), policies); err != nil {
					return false, err.Error()
				}
				if err := w.Client(c).List(w.Context(), drivers); err != nil {
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
	s.check("one driver DaemonSet per NVIDIADriver, its pods only on the nodes that NVIDIADriver selects", func(w *Play) {
		for _, c := range StoryClusters() {
			w.checkDriverPlacement(c)
		}
	})
	s.check("the controller's default driver-pod selector matches the operator's real driver pods", func(w *Play) {
		for _, c := range StoryClusters() {
			w.checkDefaultDriverPodSelector(c)
		}
	})
	s.check("both clusters run the stable release", func(w *Play) {
		for _, c := range StoryClusters() {
			if got := w.OperatorChart(c); got != "gpu-operator-"+ChartVersion {
				w.T.Errorf("%s: the GPU Operator's Deployment is of chart %s, want gpu-operator-%s", c, got, ChartVersion)
			}
			w.AssertDrivers(c, DriverStable)
		}
		// Nothing to change: staging's DriverRollout of the stable release
		// completes at once.
		w.WaitRollout(Staging, ReleaseStable, 30*time.Second, v1alpha1.PhaseCompleted)
	})
	s.check("gate --wave staging passes on the stable release", func(w *Play) {
		if out, code := w.Gate("staging"); code != 0 || !strings.Contains(out, "PASS") {
			w.T.Errorf("gate exit %d", code)
		}
	})
}

// drift is a hand edit of a Flux-managed object, which Flux repairs.
func (s *fleetStory) drift() {
	s.check("drift: a hand edit of a Flux-managed object is repaired within interval + apply time", func(w *Play) {
		measureDrift(w, Staging)
	})
}

// goodRelease starts r2026-10: staging's DriverRollout upgrades its
// nodes, canary first, the real DaemonSet controller swapping each driver
// pod, and drains meet a real PodDisruptionBudget.
func (s *fleetStory) goodRelease() {
	s.step("stg: a workload with a PodDisruptionBudget runs on the GPU nodes", func(w *Play) {
		w.CreateWorkload(Staging)
		s.blockedBefore = w.evictions("blocked")
	})
	s.step("start r2026-10: one commit, pushed", func(w *Play) {
		if _, code := w.Mutate("start", ReleaseGood); code != 0 {
			w.T.Fatalf("start exit %d", code)
		}
		if got := w.Git("log", "-1", "--format=%s"); got != "gpufleet: start "+ReleaseGood+" at wave staging" {
			w.T.Errorf("commit subject %q", got)
		}
		s.rev = w.Push()
	})
	s.step("stg: the DriverRollout upgrades the staging nodes, canary first", func(w *Play) {
		w.WaitApplied(Staging, s.rev, "operators", "config")
		// `kubectl rollout restart` of the controller while a node is in
		// flight: the process the new pod template says takes over.
		w.restartControllerInFlight(Staging, ReleaseGood)
		dr := w.WaitRollout(Staging, ReleaseGood, 3*time.Minute, v1alpha1.PhaseCompleted)
		w.AssertDrivers(Staging, DriverGood)
		if dr.Status.Canary.Result != v1alpha1.CanaryPassed || len(dr.Status.Canary.Nodes) != 1 {
			w.T.Errorf("canary status %+v, want one canary node that passed", dr.Status.Canary)
		}
		w.Note("canary %v %s; every %s node on %s", dr.Status.Canary.Nodes, dr.Status.Canary.Result, Staging, DriverGood)
		w.WaitApplied(Staging, s.rev, "lifecycle")
		w.WaitApplied(Prod, s.rev)
	})
	s.check("stg: on each node the DaemonSet controller replaced the old driver pod by the new NVIDIADriver's, Ready on the new version", func(w *Play) {
		w.checkDriverPlacement(Staging)
		seen := w.Recorders[Staging].Seen()
		old, cur := render.NVIDIADriverName(PoolName, DriverStable), render.NVIDIADriverName(PoolName, DriverGood)
		dss := w.driverDaemonSets(Staging)
		for node, v := range w.Drivers(Staging) {
			history := seen.DriverPods[node]
			// The last pod is the new NVIDIADriver's; an earlier one was the old one's.
			last := history[len(history)-1]
			ds, version, _ := strings.Cut(strings.TrimPrefix(last, "DaemonSet/"), "@")
			if dss[ds] != cur || version != DriverGood || v != DriverGood {
				w.T.Errorf("%s: last driver pod %s (NVIDIADriver %q), GFD %s; want a pod of %s at %s", node, last, dss[ds], v, cur, DriverGood)
			}
			if !slices.ContainsFunc(history[:len(history)-1], func(e string) bool { return strings.HasSuffix(e, "@"+DriverStable) }) {
				w.T.Errorf("%s: no pod of the old driver seen before the new one: %v", node, history)
			}
			w.T.Logf("%s: driver pods seen in turn: %v (old NVIDIADriver %s)", node, history, old)
		}
	})
	s.check("stg: drain honoured the workload's real PodDisruptionBudget", func(w *Play) {
		seen := w.Recorders[Staging].Seen()
		blocked := w.evictions("blocked") - s.blockedBefore
		w.Note("evictions refused with 429 during the rollout: %.0f; fewest Ready workers seen: %d of %d (budget: at least %d)",
			blocked, seen.MinReady, WorkloadReplicas, workloadMin)
		if seen.MinReady < workloadMin {
			w.T.Errorf("the workload fell to %d Ready workers, below its budget of %d", seen.MinReady, workloadMin)
		}
		if blocked < 1 {
			w.T.Errorf("no eviction was ever refused: two nodes drained at once while a replacement worker took %s to start should meet the budget", workloadStartup)
		}
	})
	s.check("prod is untouched while staging rolls", func(w *Play) {
		if got := w.OperatorChart(Prod); got != "gpu-operator-"+ChartVersion {
			w.T.Errorf("prod: the GPU Operator's Deployment is of chart %s, want gpu-operator-%s", got, ChartVersion)
		}
		w.AssertDrivers(Prod, DriverStable)
		if w.Rollout(Prod, ReleaseGood) != nil {
			w.T.Errorf("prod has a DriverRollout %s", ReleaseGood)
		}
	})
	s.check("gate --wave staging passes", func(w *Play) {
		if _, code := w.Gate("staging"); code != 0 {
			w.T.Errorf("gate exit %d", code)
		}
	})
}

// revert is a git revert of the start commit, which returns staging to the
// stable release, and the start again.
func (s *fleetStory) revert() {
	s.step("git revert of the start commit returns staging to r2026-06", func(w *Play) {
		start := w.Git("rev-parse", "HEAD")
		w.Git("revert", "--no-edit", start)
		s.rev = w.Push()
		t0 := time.Now()
		w.WaitApplied(Staging, s.rev, "operators", "config")
		w.WaitDrivers(Staging, DriverStable, 2*time.Minute)
		w.Note("staging back on driver %s %s after the revert was pushed", DriverStable, Since(t0))
		w.Eventually(time.Minute, "the reverted release's DriverRollout pruned", func() (bool, string) {
			return w.Rollout(Staging, ReleaseGood) == nil, "still there"
		})
		w.WaitApplied(Staging, s.rev, "lifecycle")
		w.WaitApplied(Prod, s.rev)
	})
	s.step("start r2026-10 again: staging upgrades again", func(w *Play) {
		if _, code := w.Mutate("start", ReleaseGood); code != 0 {
			w.T.Fatalf("start exit %d", code)
		}
		s.rev = w.Push()
		w.WaitApplied(Staging, s.rev, "operators", "config")
		w.WaitRollout(Staging, ReleaseGood, 3*time.Minute, v1alpha1.PhaseCompleted)
		w.AssertDrivers(Staging, DriverGood)
		w.WaitApplied(Staging, s.rev, "lifecycle")
		w.WaitApplied(Prod, s.rev)
	})
}

// promotion takes r2026-10 through the approval to prod, where, with
// outage, one node's kubelet stops during the rollout, and on to stable.
func (s *fleetStory) promotion(outage bool) {
	approval := ReleaseGood + "/" + WaveProduction
	s.check("status prints the approval the flow waits for", func(w *Play) {
		out, code := w.Gpufleet("status", "-f", w.FleetFile)
		if code != 0 || !strings.Contains(out, "next: gpufleet approve "+approval) {
			w.T.Errorf("status (exit %d) does not name `gpufleet approve %s` as the next command", code, approval)
		}
	})
	s.check("promote without the approval is refused and changes nothing", func(w *Play) {
		head := w.Git("rev-parse", "HEAD")
		if out, code := w.Mutate("promote"); code != 1 || !strings.Contains(out, "gpufleet approve "+approval) {
			w.T.Errorf("promote exit %d, want 1 naming the approval", code)
		}
		if w.Git("rev-parse", "HEAD") != head || w.Git("status", "--porcelain") != "" {
			w.T.Error("a refused promotion changed the repository")
		}
	})
	s.check("a wrong approval name is refused and changes nothing", func(w *Play) {
		head := w.Git("rev-parse", "HEAD")
		if _, code := w.Mutate("approve", ReleaseGood+"/"+Staging); code != 1 {
			w.T.Errorf("approve of a name nothing waits for: exit %d, want 1", code)
		}
		if w.Git("rev-parse", "HEAD") != head || w.Git("status", "--porcelain") != "" {
			w.T.Error("a refused approval changed the repository")
		}
	})
	s.step("approve with the printed name", func(w *Play) {
		if _, code := w.Mutate("approve", approval); code != 0 {
			w.T.Fatalf("approve exit %d", code)
		}
		if got := w.Git("log", "-1", "--format=%s"); got != "gpufleet: approve "+approval {
			w.T.Errorf("commit subject %q", got)
		}
		s.rev = w.Push()
		// The gate checks that Flux applied HEAD: wait for it.
		for _, c := range StoryClusters() {
			w.WaitApplied(c, s.rev)
		}
	})
	downNode := PoolName + "-2"
	if outage {
		s.step("prod: a node whose kubelet stops is marked NotReady and tainted by the real node lifecycle controller", func(w *Play) {
			if err := w.Sims[Prod].SetNotReady(w.Context(), downNode); err != nil {
				w.T.Fatal(err)
			}
			t0 := time.Now()
			w.Eventually(time.Minute, downNode+" NotReady and tainted unreachable", func() (bool, string) {
				n := &corev1.Node{}
				if err := w.Client(Prod).Get(w.Context(), client.ObjectKey{Name: downNode}, n); err != nil {
					return false, err.Error()
				}
				tainted := slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeUnreachable })
				return !planner.NodeReady(n) && tainted, fmt.Sprintf("ready %t taints %v", planner.NodeReady(n), n.Spec.Taints)
			})
			w.Note("%s NotReady and tainted %s after its heartbeats stopped", downNode, Since(t0))
		})
	}
	s.step("promote: the gate passes and prod gets r2026-10", func(w *Play) {
		if _, code := w.Mutate("promote"); code != 0 {
			w.T.Fatalf("promote exit %d", code)
		}
		if body := w.Git("log", "-1", "--format=%B"); !strings.Contains(body, "Gate passed: "+Staging+" at") {
			w.T.Errorf("the commit does not carry the gate result:\n%s", body)
		}
		s.rev = w.Push()
		w.WaitApplied(Prod, s.rev, "operators", "config")
	})
	if outage {
		s.step("prod: the rollout upgrades every node but the NotReady one, which it counts as unavailable and does not start", func(w *Play) {
			w.Eventually(3*time.Minute, "every other prod node Done", func() (bool, string) {
				dr := w.Rollout(Prod, ReleaseGood)
				if dr == nil {
					return false, "no DriverRollout"
				}
				return dr.Status.Nodes.Done == PoolNodes-1, fmt.Sprintf("%+v", dr.Status.Nodes)
			})
			// Long enough for the planner to have started the node had it wanted to.
			time.Sleep(5 * time.Second)
			dr := w.Rollout(Prod, ReleaseGood)
			if dr.Status.Phase == v1alpha1.PhaseCompleted {
				w.T.Errorf("the rollout completed with %s NotReady", downNode)
			}
			seen := w.Recorders[Prod].Seen()
			for _, rp := range seen.NotReady[downNode] {
				// What an earlier rollout left (Done, in r2026-06) is not this one's doing.
				if rollout, phase, _ := strings.Cut(rp, "/"); rollout == ReleaseGood && phase != string(v1alpha1.NodePending) {
					w.T.Errorf("%s was %s in %s while NotReady", downNode, phase, rollout)
				}
			}
			w.Note("%s while NotReady: %v", downNode, seen.NotReady[downNode])
			if seen.MaxUnavailable > 2 {
				w.T.Errorf("%d nodes were out of service at once, more than max-unavailable 2", seen.MaxUnavailable)
			}
			if c := apimeta.FindStatusCondition(dr.Status.Conditions, v1alpha1.ConditionReady); c != nil {
				w.T.Logf("while %s is NotReady: phase %s, %s: %s (most nodes out at once: %d)", downNode, dr.Status.Phase, c.Reason, c.Message, seen.MaxUnavailable)
			}
			if err := w.Sims[Prod].SetReady(w.Context(), downNode); err != nil {
				w.T.Fatal(err)
			}
		})
	}
	s.step("prod: the DriverRollout upgrades the prod nodes, canary first", func(w *Play) {
		dr := w.WaitRollout(Prod, ReleaseGood, 3*time.Minute, v1alpha1.PhaseCompleted)
		w.AssertDrivers(Prod, DriverGood)
		if dr.Status.Canary.Result != v1alpha1.CanaryPassed || len(dr.Status.Canary.Nodes) != 1 {
			w.T.Errorf("canary status %+v, want one canary node that passed", dr.Status.Canary)
		}
		w.WaitApplied(Prod, s.rev, "lifecycle")
	})
	s.step("gate --wave production passes once the operator has settled", func(w *Play) {
		// The node that came back had its pods marked NotReady by the node
		// lifecycle controller; the operator reports ClusterPolicy ready
		// again once its operands there are Ready: a person re-runs the gate.
		t0 := time.Now()
		w.Eventually(2*time.Minute, "gate --wave production to pass", func() (bool, string) {
			var out bytes.Buffer
			code := cli.Run(w.Context(), []string{"gate", "--wave", WaveProduction, "-f", w.FleetFile, "--kubeconfig", w.Testbed.Kubeconfig, "--timeout", "20s"},
				cli.Streams{In: strings.NewReader(""), Out: &out, Err: &out})
			return code == 0, out.String()
		})
		w.Note("gate --wave production passed %s after the prod rollout completed", Since(t0))
	})
	s.step("promote after the last wave: r2026-10 is stable", func(w *Play) {
		// Becoming stable gates every cluster, so both must have applied HEAD.
		for _, c := range StoryClusters() {
			w.WaitApplied(c, s.rev)
		}
		if _, code := w.Mutate("promote"); code != 0 {
			w.T.Fatalf("promote exit %d", code)
		}
		got := w.Git("log", "-1", "--format=%s")
		if got != "gpufleet: "+ReleaseGood+" is stable: every wave passed" {
			w.T.Errorf("commit subject %q", got)
		}
		w.Note("committed %q", got)
		s.rev = w.Push()
		for _, c := range StoryClusters() {
			w.WaitApplied(c, s.rev)
		}
	})
	s.check("status says done: r2026-10 stable, no rollout", func(w *Play) {
		out, code := w.Gpufleet("status", "-f", w.FleetFile)
		if code != 0 || !strings.Contains(out, "stable: "+ReleaseGood) || strings.Contains(out, "rollout:") || strings.Contains(out, "waiting:") {
			w.T.Errorf("status (exit %d) does not say the rollout is done", code)
		}
	})
}

// drill is the drill release: its canary fails at staging, the gate and
// promote refuse it, and abort returns staging to the stable release.
// stalled adds checks of what the cluster says while the drill is
// stalled, before it is approved into prod and aborted.
func (s *fleetStory) drill(stalled ...func()) {
	s.step("start the drill release", func(w *Play) {
		if _, code := w.Mutate("start", ReleaseDrill); code != 0 {
			w.T.Fatalf("start exit %d", code)
		}
		if body := w.Git("log", "-1", "--format=%B"); !strings.Contains(body, "drill") {
			w.T.Errorf("the commit does not say the release is a drill:\n%s", body)
		}
		s.rev = w.Push()
		w.WaitApplied(Staging, s.rev, "operators", "config")
		w.WaitApplied(Prod, s.rev)
	})
	s.step("stg: the canary node fails, rolls back, the rollout stalls", func(w *Play) {
		dr := w.WaitRollout(Staging, ReleaseDrill, 3*time.Minute, v1alpha1.PhaseStalled)
		if dr.Status.Canary.Result != v1alpha1.CanaryFailed {
			w.T.Errorf("canary result %q, want Failed", dr.Status.Canary.Result)
		}
		if c := apimeta.FindStatusCondition(dr.Status.Conditions, v1alpha1.ConditionStalled); c == nil || c.Status != "True" {
			w.T.Errorf("no Stalled condition: %+v", dr.Status.Conditions)
		} else {
			w.Note("Stalled: %s: %s", c.Reason, c.Message)
		}
		// The failed canary goes back to the stable driver; no other node moved.
		w.Eventually(time.Minute, "the canary node rolled back", func() (bool, string) {
			dr := w.Rollout(Staging, ReleaseDrill)
			return dr.Status.Nodes.RolledBack == 1 && dr.Status.Nodes.Pending == PoolNodes-1, fmt.Sprintf("%+v", dr.Status.Nodes)
		})
		w.AssertDrivers(Staging, DriverGood)
		n := &corev1.Node{}
		if err := w.Client(Staging).Get(w.Context(), client.ObjectKey{Name: dr.Status.Canary.Nodes[0]}, n); err != nil {
			w.T.Fatal(err)
		}
		if n.Labels[v1alpha1.LabelDriver] != DriverGood || n.Spec.Unschedulable {
			w.T.Errorf("canary node %s: driver label %s, unschedulable %t; want %s and back in service", n.Name, n.Labels[v1alpha1.LabelDriver], n.Spec.Unschedulable, DriverGood)
		}
	})
	s.check("gate --wave staging fails", func(w *Play) {
		if _, code := w.Gate("staging"); code != 1 {
			w.T.Errorf("gate exit %d, want 1", code)
		}
	})
	for _, add := range stalled {
		add()
	}
	drillApproval := ReleaseDrill + "/" + WaveProduction
	s.step("approve the drill into prod (the gate must still stop it)", func(w *Play) {
		if _, code := w.Mutate("approve", drillApproval); code != 0 {
			w.T.Fatalf("approve exit %d", code)
		}
		s.rev = w.Push()
		w.WaitApplied(Staging, s.rev, "operators", "config")
		w.WaitApplied(Prod, s.rev)
	})
	s.check("promote is refused by the gate and changes nothing", func(w *Play) {
		head := w.Git("rev-parse", "HEAD")
		out, code := w.Mutate("promote")
		if code != 1 {
			w.T.Errorf("promote exit %d, want 1", code)
		}
		if !strings.Contains(out, "gate FAIL") || !strings.Contains(out, "lifecycle/DriverRollout/"+ReleaseDrill) {
			w.T.Errorf("promote did not print the failed gate naming the drill's DriverRollout")
		}
		if w.Git("rev-parse", "HEAD") != head || w.Git("status", "--porcelain") != "" {
			w.T.Error("a refused promotion changed the repository")
		}
	})
	s.check("prod never sees the drill", func(w *Play) {
		w.AssertDrivers(Prod, DriverGood)
		if w.Rollout(Prod, ReleaseDrill) != nil {
			w.T.Errorf("prod has a DriverRollout %s", ReleaseDrill)
		}
	})
	s.step("abort returns staging to the stable release", func(w *Play) {
		if _, code := w.Mutate("abort"); code != 0 {
			w.T.Fatalf("abort exit %d", code)
		}
		s.rev = w.Push()
		w.WaitApplied(Staging, s.rev, "operators", "config")
		w.Eventually(time.Minute, "the drill's DriverRollout aborted", func() (bool, string) {
			dr := w.Rollout(Staging, ReleaseDrill)
			if dr == nil {
				return true, ""
			}
			return dr.Spec.Abort, fmt.Sprintf("abort=%t phase %s", dr.Spec.Abort, dr.Status.Phase)
		})
		w.WaitDrivers(Staging, DriverGood, time.Minute)
		out, _ := w.Gpufleet("status", "-f", w.FleetFile)
		if !strings.Contains(out, "stable: "+ReleaseGood) || !strings.Contains(out, "ABORTED") {
			w.T.Errorf("status does not say the drill was aborted")
		}
		w.Note("%s back on %s; status says the drill was aborted", Staging, DriverGood)
	})
	s.check("render --check: the repository is up to date at the end", func(w *Play) {
		if _, code := w.Gpufleet("render", "--check", "-f", w.FleetFile); code != 0 {
			w.T.Errorf("render --check exit %d", code)
		}
	})
}

// overTheStory checks what the recorders saw over every rollout.
func (s *fleetStory) overTheStory() {
	s.check("recorded over every rollout: at no moment did two NVIDIADrivers select the same node", func(w *Play) {
		for _, c := range StoryClusters() {
			seen := w.Recorders[c].Seen()
			w.T.Logf("%s: %d samples (%d failed reads)", c, seen.Samples, seen.Errs)
			if seen.Samples < 100 {
				w.T.Errorf("%s: only %d samples", c, seen.Samples)
			}
			if len(seen.Overlaps) > 0 {
				w.T.Errorf("%s: %d samples with a node selected twice, first: %v", c, len(seen.Overlaps), seen.Overlaps[0])
			}
		}
	})
	s.check("the operator's own upgrade controller never labelled a node while gpufleet rolled", func(w *Play) {
		for _, c := range StoryClusters() {
			if seen := w.Recorders[c].Seen(); len(seen.Upgrade) > 0 {
				w.T.Errorf("%s: %s seen %d times, first %s", c, v1alpha1.LabelOperatorUpgradeState, len(seen.Upgrade), seen.Upgrade[0])
			}
		}
	})
}
