package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	"github.com/gpufleet/gpufleet/internal/controller"
	"github.com/gpufleet/gpufleet/internal/demo"
	"github.com/gpufleet/gpufleet/internal/gate/gatetest"
	"github.com/gpufleet/gpufleet/internal/nodesim"
	"github.com/gpufleet/gpufleet/internal/testbed"
)

// The fleet of testdata/fleet.toml.
const (
	stg  = "stg"
	prod = "prod"

	relStable = "r2026-06"
	relGood   = "r2026-10"
	relDrill  = "r2026-10-drill"

	drvStable = "570.172.08"
	drvGood   = "580.95.05"
	drvDrill  = "580.82.07"

	// chartStable is the GPU Operator chart of every release: the real
	// operator built for the testbed is this version.
	chartStable = "v25.3.4"

	product   = "NVIDIA-H100-80GB-HBM3"
	poolName  = "h100"
	poolNodes = 3

	// placeholderCharts is the chart repository in testdata/fleet.toml; the
	// suite replaces it with the absolute path of ../shared/operators.
	placeholderCharts = `"../shared/operators"`

	// sourceInterval is how often source-controller polls the fleet
	// repository; rootInterval is the interval of each cluster's root
	// Kustomization (the one "flux bootstrap" would create), which applies
	// the rendered flux-*.yaml and repairs drift of them.
	sourceInterval = 2 * time.Second
	rootInterval   = 10 * time.Second
)

var clusters = []string{stg, prod}

// The waves of testdata/fleet.toml.
const (
	waveStaging    = "staging"
	waveProduction = "production"
)

// world is the running fleet: the testbed, the fleet repository's work tree
// and, per cluster, the node agent.
type world struct {
	t         *testing.T
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

// newWorld starts everything the story needs and stops it when t ends.
func newWorld(t *testing.T) *world {
	t.Helper()
	if testing.Short() {
		t.Skip("e2e: skipped under -short (needs the testbed)")
	}
	// The in-process controllers log nothing (their Events and status are
	// what the story checks), and the git server's request log is noise.
	ctrllog.SetLogger(logr.Discard())
	log.SetOutput(io.Discard)
	// Flux's controllers build in $TMPDIR: a private one keeps other
	// programs' clean-ups of the shared one out of the story.
	t.Setenv("TMPDIR", t.TempDir())
	// Flux applies the GPU Operator's own CRDs (the manifests mode renders
	// them); the testbed installs only gpufleet's DriverRollout CRD, as the
	// controller's install manifests would, and the serving stack's image
	// automation and notification CRDs (no controller runs for them: only
	// kustomize-controller applies their objects).
	bins, err := testbed.FindBinaries()
	if err != nil {
		t.Fatalf("e2e: %v", err)
	}
	if err := bins.CheckGPUOperator(); err != nil {
		t.Fatalf("e2e: %v", err)
	}
	operators, err := filepath.Abs("../../../shared/operators")
	if err == nil {
		_, err = os.Stat(filepath.Join(operators, "gpu-operator", chartStable))
	}
	if err != nil {
		t.Skipf("e2e: needs the real GPU Operator charts in ../shared/operators: %v", err)
	}
	crds := []string{"../../config/crd/bases"}
	w0 := &world{}
	if m, _ := filepath.Glob(filepath.Join(bins.FluxImageCRDDir(), "*.yaml")); len(m) > 0 {
		crds = append(crds, bins.FluxImageCRDDir())
		w0.stackCRDs = true
	}
	tb := testbed.New(t, testbed.Options{
		Clusters: clusters, CRDDirs: crds, Flux: true, Git: true, Kube: true, Kwok: true, Scheme: gatetest.Scheme(),
		StartTimeout: 3 * time.Minute,
	})
	w := &world{t: t, tb: tb, sims: map[string]*nodesim.Sim{}, stackCRDs: w0.stackCRDs, rec: map[string]*recorder{}}
	t.Cleanup(func() {
		if t.Failed() {
			for _, name := range clusters {
				t.Logf("=== %s at the failure ===\n%s", name, w.dump(name))
			}
		}
	})

	// Everything the suite runs beside the testbed stops before it (cleanups
	// run last-registered first).
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })

	for _, name := range clusters {
		c := tb.Cluster(name)
		// kwok is the nodes' kubelet; the node agent plays NFD/GFD and the
		// driver install inside the real operator's driver pods.
		sim := nodesim.New(c.Client, nodesim.Options{Kwok: true, BadDrivers: []string{drvDrill}, InstallTime: time.Second})
		if _, err := sim.AddPool(ctx, nodesim.Pool{Name: poolName, Product: product, Nodes: poolNodes, Driver: drvStable}); err != nil {
			t.Fatalf("cluster %s: node agent: %v", name, err)
		}
		w.sims[name] = sim
		wg.Go(func() { _ = sim.Run(ctx) })
		// notification-controller does not run here: the stack's Receiver
		// is marked Ready as it would mark it.
		wg.Go(func() { demo.PlayNotificationController(ctx, c.Client) })
		// The real GPU Operator starts once Flux has applied its chart: it
		// is configured by the Deployment that chart version installs.
		wg.Go(func() {
			if _, err := c.StartGPUOperatorWhenApplied(ctx, testbed.GPUOperatorOptions{}); err != nil && ctx.Err() == nil {
				t.Errorf("cluster %s: %v", name, err)
			}
		})
		rec := newRecorder(c.Client)
		w.rec[name] = rec
		wg.Go(func() { rec.run(ctx, 200*time.Millisecond) })

		mgr, err := controller.NewManager(ctx, c.Config, controller.Options{
			MetricsAddr: "0", ProbeAddr: "0", DrainRetry: 300 * time.Millisecond, HealthPoll: time.Second,
			SkipNameValidation: true,
		})
		if err != nil {
			t.Fatalf("cluster %s: controller: %v", name, err)
		}
		wg.Go(func() {
			if err := mgr.Start(ctx); err != nil {
				t.Errorf("cluster %s: controller: %v", name, err)
			}
		})
	}

	// The fleet repository: an empty repository on the git server and a
	// work tree with the real git in it.
	w.dir = filepath.Join(t.TempDir(), "fleet")
	repo, err := tb.Git.NewRepo("fleet.git", "main", w.dir)
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("testdata/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	src = bytes.Replace(src, []byte(placeholderCharts), []byte(strconv.Quote(operators)), 1)
	w.fleetFile = filepath.Join(w.dir, "fleet.toml")
	if err := os.WriteFile(w.fleetFile, src, 0o644); err != nil {
		t.Fatal(err)
	}
	w.git("config", "user.name", "gpufleet e2e")
	w.git("config", "user.email", "e2e@gpufleet.invalid")
	w.git("config", "commit.gpgsign", "false")

	// What "flux bootstrap" would create in each cluster: the source and
	// the root Kustomization applying clusters/<name>.
	for _, name := range clusters {
		c := tb.Cluster(name)
		if err := c.ApplySync(ctx, testbed.Sync{Name: "flux-system", URL: repo.URL, Path: "./clusters/" + name, Interval: sourceInterval}); err != nil {
			t.Fatal(err)
		}
		if err := testbed.Update(ctx, c.Client, "kustomize.toolkit.fluxcd.io/v1", "Kustomization", testbed.FluxNamespace, "flux-system", false, func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, rootInterval.String(), "spec", "interval")
		}); err != nil {
			t.Fatal(err)
		}
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
	cmd := exec.Command("git", append([]string{"-C", w.dir}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		w.t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, errOut.String())
	}
	return strings.TrimSpace(out.String())
}

// push pushes the work tree's HEAD to the git server and returns the
// revision Flux will report for it.
func (w *world) push() string {
	w.t.Helper()
	w.git("push", "-q", "origin", "HEAD:main")
	return "main@sha1:" + w.git("rev-parse", "HEAD")
}

// waitApplied waits until the cluster's three steps are Ready at revision.
func (w *world) waitApplied(cluster, revision string, steps ...string) {
	w.t.Helper()
	if len(steps) == 0 {
		steps = []string{"operators", "config", "lifecycle"}
	}
	for _, s := range steps {
		if err := w.tb.Cluster(cluster).WaitApplied(context.Background(), s, revision, 2*time.Minute); err != nil {
			w.t.Fatal(err)
		}
	}
}

func (w *world) client(cluster string) client.Client { return w.tb.Cluster(cluster).Client }

// rollout returns the DriverRollout name of cluster, or nil.
func (w *world) rollout(cluster, name string) *v1alpha1.DriverRollout {
	dr := &v1alpha1.DriverRollout{}
	if err := w.client(cluster).Get(context.Background(), client.ObjectKey{Name: name}, dr); err != nil {
		return nil
	}
	return dr
}

// waitRollout waits until the DriverRollout's phase is one of phases and
// the controller observed its latest spec.
func (w *world) waitRollout(cluster, name string, timeout time.Duration, phases ...v1alpha1.RolloutPhase) *v1alpha1.DriverRollout {
	w.t.Helper()
	var dr *v1alpha1.DriverRollout
	w.eventually(timeout, fmt.Sprintf("%s: DriverRollout %s in phase %v", cluster, name, phases), func() (bool, string) {
		dr = w.rollout(cluster, name)
		if dr == nil {
			return false, "missing"
		}
		for _, p := range phases {
			if dr.Status.Phase == p && dr.Status.ObservedGeneration == dr.Generation {
				return true, ""
			}
		}
		msg := ""
		if c := apimeta.FindStatusCondition(dr.Status.Conditions, v1alpha1.ConditionReady); c != nil {
			msg = c.Reason + ": " + c.Message
		}
		return false, fmt.Sprintf("phase %q progress %s generation %d observed %d (%s)", dr.Status.Phase, dr.Status.Progress, dr.Generation, dr.Status.ObservedGeneration, msg)
	})
	return dr
}

// drivers returns each GPU node's installed driver (GFD's label).
func (w *world) drivers(cluster string) map[string]string {
	w.t.Helper()
	var nodes corev1.NodeList
	if err := w.client(cluster).List(context.Background(), &nodes); err != nil {
		w.t.Fatalf("%s: list nodes: %v", cluster, err)
	}
	out := map[string]string{}
	for _, n := range nodes.Items {
		if n.Labels[nodesim.LabelGPUPresent] == "true" {
			out[n.Name] = n.Labels[nodesim.LabelDriverFull]
		}
	}
	return out
}

// waitDrivers waits until every GPU node of cluster reports version.
func (w *world) waitDrivers(cluster, version string, timeout time.Duration) {
	w.t.Helper()
	w.eventually(timeout, fmt.Sprintf("%s: every node on driver %s", cluster, version), func() (bool, string) {
		got := w.drivers(cluster)
		if len(got) != poolNodes {
			return false, fmt.Sprint(got)
		}
		for _, v := range got {
			if v != version {
				return false, fmt.Sprint(got)
			}
		}
		return true, ""
	})
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
				if strings.HasPrefix(k, "gpufleet.io/") || k == nodesim.LabelDriverFull {
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
