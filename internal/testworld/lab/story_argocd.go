package lab

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/config"
	"github.com/gpufleet/gpufleet/internal/cli"
	"github.com/gpufleet/gpufleet/internal/explain"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/render"
	"github.com/gpufleet/gpufleet/internal/testworld/testbed"
)

// argoGitOps is what the story's fleet file gains to put its staging
// cluster on Argo CD ([ArgoCDStoryFleet]); prod stays on Flux.
const argoGitOps = `# Staging is on Argo CD: render writes its Argo CD folder, and the real
# Argo CD (application-controller, repo-server) applies it. lab.Start
# writes the repository on the testbed's git server for the placeholder.
[gitops]
repository = ` + PlaceholderRepository + `

[gitops.clusters.stg]
engine = "argocd"

`

// ArgoCDStoryFleet is the story's fleet file with its staging cluster on
// Argo CD and prod on Flux: the one fixture, and the lines that say so.
func ArgoCDStoryFleet() []byte {
	return bytes.Replace(StoryFleet(), []byte("[releases."+ReleaseStable+"]"), []byte(argoGitOps+"[releases."+ReleaseStable+"]"), 1)
}

// ArgoCDStoryOptions are [StoryOptions] on [ArgoCDStoryFleet].
func ArgoCDStoryOptions() Options {
	o := StoryOptions()
	o.FleetTOML = ArgoCDStoryFleet()
	return o
}

// ArgoCDStory is the story of a release's life with staging on the real
// Argo CD and prod on Flux ([ArgoCDStoryOptions]): render and bootstrap,
// the steps applied by sync waves, drift repaired by self-heal, a good
// release started (canary, completion) and reverted with git, approved into
// prod and made stable, the drill stopped at staging's canary and rolled
// back (explain naming the DriverRollout's health), aborted, the abort
// ended by promote; and the gate judging both clusters with the same
// checks.
func ArgoCDStory() []Step {
	s := &fleetStory{}
	s.argoFirstSync()
	s.firstSyncChecks()
	s.argoDrift()
	s.goodRelease()
	s.revert()
	s.promotion(false)
	s.drill(s.argoExplainStalled)
	s.endAbort()
	s.argoSameGate()
	s.overTheStory()
	return s.steps
}

// argoStepProbes are an object of each step, as seen on the cluster:
// apiVersion, kind, namespace, name.
var argoStepProbes = map[string][4]string{
	"operators": {"apps/v1", "Deployment", "gpu-operator", "gpu-operator"},
	"config":    {v1alpha1.NVIDIADriverAPIVersion, v1alpha1.KindNVIDIADriver, "", render.NVIDIADriverName(PoolName, DriverStable)},
	"lifecycle": {"gpufleet.io/v1alpha1", "DriverRollout", "", ReleaseStable},
}

// argoFirstSync renders, pushes and bootstraps: Flux applies prod, and on
// staging the root Application that gpufleet bootstrap prints, applied
// once, has Argo CD apply the rest, wave by wave.
func (s *fleetStory) argoFirstSync() {
	s.step("render writes staging's Argo CD folder and prod's Flux folder", func(w *Play) {
		if _, code := w.Gpufleet("render", "-f", w.FleetFile); code != 0 {
			w.T.Fatalf("render exit %d", code)
		}
		for _, f := range []string{"kustomization.yaml", "argocd/application-gpufleet.yaml", "argocd/application-gpu-stack.yaml", "argocd/argocd-cm.yaml",
			"operators/gpu-operator-" + ChartVersion + ".yaml", "config/nvidiadriver-" + render.NVIDIADriverName(PoolName, DriverStable) + ".yaml", "lifecycle/driverrollout.yaml"} {
			if _, err := os.Stat(filepath.Join(w.Dir, "clusters", Staging, f)); err != nil {
				w.T.Errorf("render did not write clusters/%s/%s", Staging, f)
			}
		}
		if _, err := os.Stat(filepath.Join(w.Dir, "clusters", Staging, "flux-lifecycle.yaml")); err == nil {
			w.T.Errorf("render wrote a Flux Kustomization for %s, which is on Argo CD", Staging)
		}
		if _, err := os.Stat(filepath.Join(w.Dir, "clusters", Prod, "flux-lifecycle.yaml")); err != nil {
			w.T.Errorf("render did not write prod's Flux Kustomizations")
		}
	})
	seen, ready := map[string]time.Duration{}, map[string]time.Duration{}
	s.step("commit and push; bootstrap applies staging's root Application, Argo CD the rest; Flux applies prod", func(w *Play) {
		w.Git("add", "-A")
		w.Git("commit", "-q", "-m", "gpufleet render: the fleet's first render")
		s.rev = w.Push()
		t0 := time.Now()
		w.Bootstrap(Staging)
		// Idle, Argo CD takes about 2.5 minutes here (most of it between
		// the operators' wave healthy and the next wave's sync); under CI's
		// load, with other testbeds beside it, nearly twice that.
		w.Eventually(6*time.Minute, "staging's steps applied, each ready", func() (bool, string) {
			for step, p := range argoStepProbes {
				if _, ok := seen[step]; !ok && w.Exists(Staging, p[0], p[1], p[2], p[3]) {
					seen[step] = time.Since(t0)
				}
				if _, ok := ready[step]; !ok && w.stepReady(Staging, step) {
					ready[step] = time.Since(t0)
				}
			}
			return len(ready) == len(argoStepProbes), fmt.Sprintf("seen %v, ready %v", seen, ready)
		})
		if err := w.Testbed.Cluster(Staging).WaitSynced(w.Context(), render.ArgoCDStackApp, s.rev, true, applyTimeout); err != nil {
			w.T.Fatal(err)
		}
		w.T.Logf("%s: objects appeared after %v; ready after %v", Staging, seen, ready)
		w.WaitApplied(Prod, s.rev)
		w.Note("Argo CD synced %s on %s and Flux applied it on %s, %s after the push", shortRev(s.rev), Staging, Prod, Since(t0))
	})
	s.check("stg: Argo CD applies operators, then config, then lifecycle (sync waves, each after the one before is healthy)", func(w *Play) {
		order := []string{"operators", "config", "lifecycle"}
		for i := 1; i < len(order); i++ {
			prev, cur := order[i-1], order[i]
			if seen[cur] < ready[prev] {
				w.T.Errorf("%s's objects appeared (%s) before %s was healthy (%s)", cur, seen[cur], prev, ready[prev])
			}
		}
	})
	s.check("stg: the real Argo CD took in everything render wrote: both Applications Synced and Healthy, no resource out of sync, no warning", func(w *Play) {
		for _, name := range render.ArgoCDApps() {
			a := w.argoApp(Staging, name)
			if a == nil {
				w.T.Errorf("no Application %s", name)
				continue
			}
			if a.Sync != gate.ArgoSynced || a.Health != gate.ArgoHealthy || len(a.Conditions) > 0 {
				w.T.Errorf("Application %s: %s, %s, conditions %v", name, a.Sync, a.Health, a.Conditions)
			}
			for _, r := range a.Resources {
				w.T.Errorf("Application %s: %s is %s/%s: %s", name, r.Ref(), r.Sync, r.Health, r.Message)
			}
		}
	})
}

// stepReady says the object of step is up as the next wave needs it: the
// operators' and gpufleet-controller's Deployments Available, the
// NVIDIADriver reconciled by the operator, the DriverRollout taken in by
// the controller.
func (w *Play) stepReady(cluster, step string) bool {
	ctx := w.Context()
	c := w.Client(cluster)
	switch step {
	case "operators":
		for _, key := range []client.ObjectKey{{Namespace: "gpu-operator", Name: "gpu-operator"}, {Namespace: config.Namespace, Name: config.Deployment}} {
			d := &appsv1.Deployment{}
			if err := c.Get(ctx, key, d); err != nil || d.Status.AvailableReplicas < 1 {
				return false
			}
		}
		return true
	case "config":
		p := argoStepProbes[step]
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(p[0])
		u.SetKind(p[1])
		if err := c.Get(ctx, client.ObjectKey{Name: p[3]}, u); err != nil {
			return false
		}
		state, _, _ := unstructured.NestedString(u.Object, "status", "state")
		return state != ""
	default:
		dr := w.Rollout(cluster, ReleaseStable)
		return dr != nil && dr.Status.ObservedGeneration == dr.Generation
	}
}

// Bootstrap applies to cluster what `gpufleet bootstrap` prints for it,
// as a person pipes it to kubectl apply, once.
func (w *Play) Bootstrap(cluster string) {
	w.T.Helper()
	var out, errOut bytes.Buffer
	if code := cli.Run(w.Context(), []string{"bootstrap", cluster, "-f", w.FleetFile}, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errOut}); code != 0 {
		w.T.Fatalf("gpufleet bootstrap %s: exit %d: %s", cluster, code, errOut.String())
	}
	w.T.Logf("$ gpufleet bootstrap %s | kubectl apply -f -\n%s", cluster, strings.TrimSpace(errOut.String()))
	var obj map[string]any
	if err := yaml.Unmarshal(out.Bytes(), &obj); err != nil {
		w.T.Fatalf("gpufleet bootstrap %s printed no object: %v", cluster, err)
	}
	if err := w.Client(cluster).Create(w.Context(), &unstructured.Unstructured{Object: obj}); err != nil {
		w.T.Fatal(err)
	}
}

// application reads cluster's Application name; nil and the error when it
// cannot.
func (w *World) application(cluster, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gate.KindApplication.GVK)
	if err := w.Client(cluster).Get(w.Context(), client.ObjectKey{Namespace: testbed.ArgoCDNamespace, Name: name}, u); err != nil {
		return nil, err
	}
	return u, nil
}

// argoApp is what the gate reads of cluster's Application name; nil when it
// cannot be read.
func (w *World) argoApp(cluster, name string) *gate.Application {
	u, _ := w.application(cluster, name)
	return gate.ReadApplication(u)
}

// argoDrift is a hand edit of an object Argo CD applied, which its
// self-heal repairs.
func (s *fleetStory) argoDrift() {
	s.check("stg: drift: a hand edit of a rendered object is repaired by Argo CD's self-heal", func(w *Play) {
		ctx := w.Context()
		c := w.Client(Staging)
		dr := w.Rollout(Staging, ReleaseStable)
		if dr == nil {
			w.T.Fatal("no DriverRollout " + ReleaseStable)
		}
		want := dr.Spec.ParallelNodes
		if err := testbed.Update(ctx, c, "gpufleet.io/v1alpha1", "DriverRollout", "", ReleaseStable, false, func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, int64(want+3), "spec", "parallelNodes")
		}); err != nil {
			w.T.Fatal(err)
		}
		edited := time.Now()
		w.Eventually(time.Minute, "Argo CD to put spec.parallelNodes back", func() (bool, string) {
			dr := w.Rollout(Staging, ReleaseStable)
			return dr != nil && dr.Spec.ParallelNodes == want, fmt.Sprintf("parallelNodes %d", dr.Spec.ParallelNodes)
		})
		repair := time.Since(edited)
		w.Note("drift repaired by self-heal in %s (Argo CD watches what it applied; it compares with git every %s)", repair.Round(10*time.Millisecond), testbed.ArgoCDResync)
		if bound := testbed.ArgoCDResync + 10*time.Second; repair > bound {
			w.T.Errorf("drift repaired in %s, more than a comparison period and 10 s (%s)", repair, bound)
		}
	})
}

// argoExplainStalled checks, with the drill stalled at staging's canary,
// that explain names the DriverRollout's health on Application gpu-stack
// as the first broken link, and the gate fails the Application as it
// fails the lifecycle Kustomization on Flux.
func (s *fleetStory) argoExplainStalled() {
	s.check("stg: explain names the DriverRollout's failing health check on Application gpu-stack", func(w *Play) {
		w.Eventually(time.Minute, "gpu-stack Degraded by the DriverRollout", func() (bool, string) {
			a := w.argoApp(Staging, render.ArgoCDStackApp)
			return a != nil && a.Health == gate.ArgoDegraded, fmt.Sprintf("%+v", a)
		})
		out, code := w.Gpufleet("explain", Staging, "-f", w.FleetFile, "--kubeconfig", w.Testbed.Kubeconfig, "-o", "json")
		var a explain.Answer
		if err := json.Unmarshal([]byte(out), &a); err != nil {
			w.T.Fatalf("explain -o json (exit %d): %v", code, err)
		}
		if code != 1 || a.Verdict != explain.Broken || a.At == nil || a.At.Object.Kind != "Application" || a.At.Step != explain.StepHealthCheck ||
			!strings.Contains(a.At.Message, "DriverRollout/"+ReleaseDrill) || !strings.Contains(a.At.Message, "Stalled") {
			w.T.Errorf("explain exit %d, %s at %+v", code, a.Verdict, a.At)
		} else {
			w.Note("explain: %s", a.Summary)
		}
		gout, _ := w.Gate(WaveStaging)
		if !strings.Contains(gout, gate.ApplicationCheck(render.ArgoCDStackApp).String()) {
			w.T.Errorf("the gate does not fail %s", gate.ApplicationCheck(render.ArgoCDStackApp))
		}
	})
}

// argoSameGate checks that the gate judges the cluster on Argo CD with the
// checks it judges the Flux cluster with, named the same, but for the
// engine's own: both on the stable release now, both passing.
func (s *fleetStory) argoSameGate() {
	s.check("the gate judges staging (Argo CD) and prod (Flux) with the same checks, named the same, and passes both", func(w *Play) {
		for _, c := range StoryClusters() {
			w.WaitApplied(c, s.rev)
		}
		out, code := w.Gpufleet("gate", "--cluster", Staging, "--cluster", Prod, "-f", w.FleetFile, "--kubeconfig", w.Testbed.Kubeconfig, "--timeout", "20s", "-o", "json")
		var r gate.Report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			w.T.Fatalf("gate -o json (exit %d): %v", code, err)
		}
		names := map[string][]string{}
		engine := map[string][]string{}
		for _, c := range r.Checks {
			if c.Status != gate.Pass {
				w.T.Errorf("%s: %s fails: %s", c.Cluster, c.Name, c.Message)
			}
			if c.Name.Kind.GitOps() {
				engine[c.Cluster] = append(engine[c.Cluster], c.Name.String())
				continue
			}
			names[c.Cluster] = append(names[c.Cluster], c.Name.String())
		}
		if !slices.Equal(names[Staging], names[Prod]) || len(names[Staging]) == 0 {
			w.T.Errorf("the checks differ:\n%s %v\n%s %v", Staging, names[Staging], Prod, names[Prod])
		}
		w.Note("gate exit %d: %d checks on each; the engine's own: %s %v, %s %v", code, len(names[Staging]), Staging, engine[Staging], Prod, engine[Prod])
		status, code := w.Gpufleet("status", "--live", "-f", w.FleetFile, "--kubeconfig", w.Testbed.Kubeconfig)
		for wave, c := range map[string]string{WaveStaging: Staging, WaveProduction: Prod} {
			if line := lineOf(status, wave+" "); code != 0 || !strings.Contains(line, " "+c+" ") || !strings.HasSuffix(strings.TrimSpace(line), "pass") {
				w.T.Errorf("status --live (exit %d) says of %s: %q", code, c, line)
			}
		}
	})
}

// lineOf is the first line of text that starts with prefix.
func lineOf(text, prefix string) string {
	for l := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), prefix) {
			return l
		}
	}
	return ""
}
