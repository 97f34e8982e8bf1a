package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/cli"
	"github.com/gpufleet/gpufleet/internal/lab"
	"github.com/gpufleet/gpufleet/internal/nodesim"
	"github.com/gpufleet/gpufleet/internal/secrets/sopstest"
	"github.com/gpufleet/gpufleet/internal/testbed"
)

// The story fleet's names (package lab's fleet.toml), as the suite uses
// them.
const (
	stg  = lab.Staging
	prod = lab.Prod

	relStable = lab.ReleaseStable
	relGood   = lab.ReleaseGood
	relDrill  = lab.ReleaseDrill

	drvStable = lab.DriverStable
	drvGood   = lab.DriverGood
	drvDrill  = lab.DriverDrill

	chartStable = lab.ChartVersion

	product   = lab.Product
	poolName  = lab.PoolName
	poolNodes = lab.PoolNodes

	sourceInterval = lab.SourceInterval
	rootInterval   = lab.RootInterval

	waveStaging    = lab.WaveStaging
	waveProduction = lab.WaveProduction
)

var clusters = lab.StoryClusters()

// world is the running fleet (package lab's World) as the suite sees it:
// every step fails the test on error, and per cluster a recorder samples
// the nodes, driver pods and NVIDIADrivers.
type world struct {
	t         *testing.T
	lab       *lab.World
	tb        *testbed.Testbed
	dir       string // the fleet repository's work tree
	fleetFile string
	sims      map[string]*nodesim.Sim
	// stackCRDs says the image automation and notification CRDs are
	// installed, which the serving stack's objects need.
	stackCRDs bool
	// rec samples each cluster's nodes, driver pods and NVIDIADrivers.
	rec map[string]*recorder
}

// newWorld starts everything the story needs (lab.Start) and stops it when
// t ends.
func newWorld(t *testing.T) *world {
	t.Helper()
	if testing.Short() {
		t.Skip("e2e: skipped under -short (needs the testbed)")
	}
	// The story encrypts its Secrets with gpufleet secret, which runs sops.
	sopstest.Use(t)
	// The in-process controllers log nothing (their Events and status are
	// what the story checks), and the git server's request log is noise.
	ctrllog.SetLogger(logr.Discard())
	log.SetOutput(io.Discard)
	// Flux's controllers build in $TMPDIR: a private one keeps other
	// programs' clean-ups of the shared one out of the story.
	t.Setenv("TMPDIR", t.TempDir())
	// Without the testbed programs the suite fails, naming make testbin;
	// without the operator charts it skips.
	if err := lab.CheckPrograms(); err != nil {
		t.Fatalf("e2e: %v", err)
	}
	began := time.Now()
	lw, err := lab.Start(t.Context(), lab.Options{
		Root: "../..", Dir: t.TempDir(), Clusters: clusters, FleetTOML: lab.StoryFleet(), ChartVersion: chartStable,
		Pool:       nodesim.Pool{Name: poolName, Product: product, Nodes: poolNodes, Driver: drvStable},
		BadDrivers: []string{drvDrill}, StackCRDs: true,
		SourceInterval: sourceInterval, RootInterval: rootInterval, GitUser: "e2e",
		OnError: func(err error) { t.Errorf("%v", err) },
	})
	if errors.Is(err, lab.ErrNoOperatorCharts) {
		t.Skipf("e2e: needs the real GPU Operator charts in ../shared/operators: %v", err)
	}
	if err != nil {
		t.Fatalf("e2e: %v", err)
	}
	// Cleanups run last-registered first: the dumps run before Stop, which
	// stops everything beside the testbed before the testbed.
	t.Cleanup(func() {
		if err := lw.Stop(); err != nil {
			t.Errorf("testbed: %v", err)
		}
	})
	t.Logf("e2e: %d clusters up in %s, kubeconfig %s", len(clusters), since(began), lw.Testbed.Kubeconfig)
	w := &world{t: t, lab: lw, tb: lw.Testbed, dir: lw.Dir, fleetFile: lw.FleetFile, sims: lw.Sims, stackCRDs: lw.StackCRDs, rec: map[string]*recorder{}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("testbed logs:\n%s", lw.Testbed.LogTail(40))
			for _, name := range clusters {
				t.Logf("=== %s at the failure ===\n%s", name, w.dump(name))
			}
		}
	})
	for _, name := range clusters {
		rec := newRecorder(w.client(name))
		w.rec[name] = rec
		lw.Go(func(ctx context.Context) { rec.run(ctx, 200*time.Millisecond) })
	}
	return w
}

// gpufleet runs one gpufleet command line in-process, as the binary would,
// and returns its output and exit code.
func (w *world) gpufleet(args ...string) (string, int) {
	w.t.Helper()
	var out bytes.Buffer
	code := cli.Run(context.Background(), args, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &out})
	w.t.Logf("$ gpufleet %s  (exit %d)\n%s", strings.Join(args, " "), code, strings.TrimRight(out.String(), "\n"))
	return out.String(), code
}

// mutate runs a promotion command against the fleet file, with the gate
// reading the testbed's clusters.
func (w *world) mutate(args ...string) (string, int) {
	w.t.Helper()
	full := append(append([]string(nil), args...), "-f", w.fleetFile)
	if args[0] == "promote" {
		full = append(full, "--kubeconfig", w.tb.Kubeconfig, "--gate-timeout", "20s")
	}
	return w.gpufleet(full...)
}

// gate runs "gpufleet gate --wave wave" against the testbed.
func (w *world) gate(wave string) (string, int) {
	w.t.Helper()
	return w.gpufleet("gate", "--wave", wave, "-f", w.fleetFile, "--kubeconfig", w.tb.Kubeconfig, "--timeout", "20s")
}

// git runs the real git in the fleet work tree.
func (w *world) git(args ...string) string {
	w.t.Helper()
	out, err := w.lab.Git(args...)
	if err != nil {
		w.t.Fatal(err)
	}
	return out
}

// push pushes the work tree's HEAD to the git server and returns the
// revision Flux will report for it.
func (w *world) push() string {
	w.t.Helper()
	rev, err := w.lab.Push()
	if err != nil {
		w.t.Fatal(err)
	}
	return rev
}

// waitApplied waits until the cluster's three steps are Ready at revision.
func (w *world) waitApplied(cluster, revision string, steps ...string) {
	w.t.Helper()
	if err := w.lab.WaitApplied(context.Background(), cluster, revision, 2*time.Minute, steps...); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) client(cluster string) client.Client { return w.lab.Client(cluster) }

// rollout returns the DriverRollout name of cluster, or nil.
func (w *world) rollout(cluster, name string) *v1alpha1.DriverRollout {
	dr, err := w.lab.Rollout(context.Background(), cluster, name)
	if err != nil {
		return nil
	}
	return dr
}

// waitRollout waits until the DriverRollout's phase is one of phases and
// the controller observed its latest spec.
func (w *world) waitRollout(cluster, name string, timeout time.Duration, phases ...v1alpha1.RolloutPhase) *v1alpha1.DriverRollout {
	w.t.Helper()
	dr, err := w.lab.WaitRollout(context.Background(), cluster, name, timeout, phases...)
	if err != nil {
		w.t.Fatal(err)
	}
	return dr
}

// drivers returns each GPU node's installed driver (GFD's label).
func (w *world) drivers(cluster string) map[string]string {
	w.t.Helper()
	got, err := w.lab.Drivers(context.Background(), cluster)
	if err != nil {
		w.t.Fatal(err)
	}
	return got
}

// waitDrivers waits until every GPU node of cluster reports version.
func (w *world) waitDrivers(cluster, version string, timeout time.Duration) {
	w.t.Helper()
	if err := w.lab.WaitDrivers(context.Background(), cluster, version, timeout); err != nil {
		w.t.Fatal(err)
	}
}

// assertDrivers checks that every GPU node of cluster reports version now.
func (w *world) assertDrivers(cluster, version string) {
	w.t.Helper()
	got := w.drivers(cluster)
	for n, v := range got {
		if v != version {
			w.t.Errorf("%s: node %s on driver %s, want %s (all: %v)", cluster, n, v, version, got)
		}
	}
	if len(got) != poolNodes {
		w.t.Errorf("%s: %d GPU nodes, want %d", cluster, len(got), poolNodes)
	}
}

// operatorChart returns the helm.sh/chart label of the GPU Operator's
// Deployment, which says which chart version Flux applied.
func (w *world) operatorChart(cluster string) string {
	dep := &appsv1.Deployment{}
	if err := w.client(cluster).Get(context.Background(), client.ObjectKey{Namespace: "gpu-operator", Name: "gpu-operator"}, dep); err != nil {
		return "missing: " + err.Error()
	}
	return dep.Labels["helm.sh/chart"]
}

// exists reports whether the object exists in cluster.
func (w *world) exists(cluster, apiVersion, kind, ns, name string) bool {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	return w.client(cluster).Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u) == nil
}

// in returns a copy of w that reports to t (a subtest).
func (w *world) in(t *testing.T) *world {
	c := *w
	c.t = t
	return &c
}

// eventually polls cond until it holds or timeout passes, then fails the
// test with what cond last said.
func (w *world) eventually(timeout time.Duration, what string, cond func() (bool, string)) {
	w.t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, msg := cond()
		last = msg
		return ok, nil
	})
	if err != nil {
		w.t.Fatalf("timed out after %s waiting for %s; last seen: %s", timeout, what, last)
	}
}

// since formats a duration for logs.
func since(t0 time.Time) string { return time.Since(t0).Round(10 * time.Millisecond).String() }

// dump describes cluster's DriverRollouts, GPU nodes and the controller's
// Events, for a failed run's log.
func (w *world) dump(cluster string) string {
	ctx := context.Background()
	c := w.client(cluster)
	var b strings.Builder
	var kss kustomizev1.KustomizationList
	if err := c.List(ctx, &kss, client.InNamespace(testbed.FluxNamespace)); err == nil {
		for _, ks := range kss.Items {
			fmt.Fprintf(&b, "Kustomization %s: applied %s attempted %s", ks.Name, ks.Status.LastAppliedRevision, ks.Status.LastAttemptedRevision)
			if cond := apimeta.FindStatusCondition(ks.Status.Conditions, "Ready"); cond != nil {
				fmt.Fprintf(&b, " Ready=%s %s: %s", cond.Status, cond.Reason, cond.Message)
			}
			b.WriteString("\n")
		}
	}
	var ros v1alpha1.DriverRolloutList
	if err := c.List(ctx, &ros); err == nil {
		for _, ro := range ros.Items {
			fmt.Fprintf(&b, "DriverRollout %s: target %s previous %s approval %q abort %t phase %s progress %s canary %+v nodes %+v budget %d\n",
				ro.Name, ro.Spec.TargetVersion, ro.Spec.PreviousVersion, ro.Spec.Approval, ro.Spec.Abort, ro.Status.Phase, ro.Status.Progress, ro.Status.Canary, ro.Status.Nodes, ro.Status.BudgetUsed)
			for _, cond := range ro.Status.Conditions {
				if cond.Status == metav1.ConditionTrue || cond.Type == "Ready" {
					fmt.Fprintf(&b, "  %s=%s %s: %s\n", cond.Type, cond.Status, cond.Reason, cond.Message)
				}
			}
		}
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err == nil {
		for _, n := range nodes.Items {
			var gf []string
			for k, v := range n.Labels {
				if strings.HasPrefix(k, "gpufleet.io/") || k == v1alpha1.LabelGFDDriverFull {
					gf = append(gf, k+"="+v)
				}
			}
			slices.Sort(gf)
			fmt.Fprintf(&b, "node %s unschedulable=%t %s\n", n.Name, n.Spec.Unschedulable, strings.Join(gf, " "))
		}
	}
	var evs corev1.EventList
	if err := c.List(ctx, &evs); err == nil {
		slices.SortFunc(evs.Items, func(a, b corev1.Event) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind == "DriverRollout" {
				fmt.Fprintf(&b, "event %s %s %s: %s\n", e.InvolvedObject.Name, e.Type, e.Reason, e.Message)
			}
		}
	}
	return b.String()
}
