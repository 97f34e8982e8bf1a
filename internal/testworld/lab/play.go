package lab

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/cli"
	"github.com/gpufleet/gpufleet/internal/render"
)

// T is where a step reports what it saw and what failed: the methods of
// testing.TB that steps use, so that the end-to-end suite passes its
// *testing.T (a benchmark its *testing.B) and the demo a reporter of its
// own. As in package testing, Fatal and Fatalf end the step with
// runtime.Goexit, so whoever runs a step runs it on a goroutine of its own
// (t.Run does; so does the demo).
type T interface {
	Helper()
	Logf(format string, args ...any)
	Error(args ...any)
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// Play is the world as one step sees it: every helper reports to T, and
// ends the step through it when it cannot do what it says.
type Play struct {
	*World
	T T
}

// In returns the world as a step reporting to t sees it.
func (w *World) In(t T) *Play { return &Play{World: w, T: t} }

// poll is how often the waits look.
const poll = 200 * time.Millisecond

// applyTimeout bounds each wait for Flux to apply a revision.
const applyTimeout = 2 * time.Minute

// Note records the one line that says what a step saw (the demo prints it
// beside the step; the suite logs it).
func (w *Play) Note(format string, args ...any) {
	w.T.Helper()
	msg := fmt.Sprintf(format, args...)
	if n, ok := w.T.(interface{ Note(string) }); ok {
		n.Note(msg)
	}
	w.T.Logf("%s", msg)
}

// Gpufleet runs one gpufleet command line in-process, as the binary would,
// and returns its output and exit code.
func (w *Play) Gpufleet(args ...string) (string, int) {
	w.T.Helper()
	var out bytes.Buffer
	code := cli.Run(w.Context(), args, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &out})
	w.T.Logf("$ gpufleet %s  (exit %d)\n%s", strings.Join(args, " "), code, strings.TrimRight(out.String(), "\n"))
	return out.String(), code
}

// Mutate runs a promotion command against the fleet file, with the gate
// reading the world's clusters.
func (w *Play) Mutate(args ...string) (string, int) {
	w.T.Helper()
	full := append(append([]string(nil), args...), "-f", w.FleetFile)
	if args[0] == "promote" {
		full = append(full, "--kubeconfig", w.Testbed.Kubeconfig, "--gate-timeout", "20s")
	}
	return w.Gpufleet(full...)
}

// Gate runs "gpufleet gate --wave wave" against the world's clusters.
func (w *Play) Gate(wave string) (string, int) {
	w.T.Helper()
	return w.Gpufleet("gate", "--wave", wave, "-f", w.FleetFile, "--kubeconfig", w.Testbed.Kubeconfig, "--timeout", "20s")
}

// Git runs the real git in the fleet work tree and returns its output.
func (w *Play) Git(args ...string) string {
	w.T.Helper()
	out, err := w.git(args...)
	if err != nil {
		w.T.Fatal(err)
	}
	return out
}

// Push pushes the work tree's HEAD to the git server and returns the
// revision Flux will report for it.
func (w *Play) Push() string {
	w.T.Helper()
	w.Git("push", "-q", "origin", "HEAD:main")
	return "main@sha1:" + w.Git("rev-parse", "HEAD")
}

// WaitApplied waits until cluster's Kustomizations steps (operators,
// config and lifecycle when none are named) are Ready at revision, each
// within two minutes. On a cluster on Argo CD, whose steps are the sync
// waves of one Application, it waits until Argo CD has synced that
// Application (gpu-stack) to revision, whatever the steps.
func (w *Play) WaitApplied(cluster, revision string, steps ...string) {
	w.T.Helper()
	if w.ArgoCD(cluster) {
		if err := w.Testbed.Cluster(cluster).WaitSynced(w.Context(), render.ArgoCDStackApp, revision, false, applyTimeout); err != nil {
			w.T.Fatal(err)
		}
		return
	}
	if len(steps) == 0 {
		steps = []string{"operators", "config", "lifecycle"}
	}
	for _, s := range steps {
		if err := w.Testbed.Cluster(cluster).WaitApplied(w.Context(), s, revision, applyTimeout); err != nil {
			w.T.Fatal(err)
		}
	}
}

// Rollout returns cluster's DriverRollout name, or nil.
func (w *Play) Rollout(cluster, name string) *v1alpha1.DriverRollout {
	dr := &v1alpha1.DriverRollout{}
	if err := w.Client(cluster).Get(w.Context(), client.ObjectKey{Name: name}, dr); err != nil {
		return nil
	}
	return dr
}

// WaitRollout waits until the DriverRollout's phase is one of phases and
// the controller observed its latest spec.
func (w *Play) WaitRollout(cluster, name string, timeout time.Duration, phases ...v1alpha1.RolloutPhase) *v1alpha1.DriverRollout {
	w.T.Helper()
	var dr *v1alpha1.DriverRollout
	var last string
	err := wait.PollUntilContextTimeout(w.Context(), poll, timeout, true, func(ctx context.Context) (bool, error) {
		got := &v1alpha1.DriverRollout{}
		if err := w.Client(cluster).Get(ctx, client.ObjectKey{Name: name}, got); err != nil {
			last = err.Error()
			return false, nil
		}
		dr = got
		for _, ph := range phases {
			if dr.Status.Phase == ph && dr.Status.ObservedGeneration == dr.Generation {
				return true, nil
			}
		}
		msg := ""
		if c := apimeta.FindStatusCondition(dr.Status.Conditions, v1alpha1.ConditionReady); c != nil {
			msg = c.Reason + ": " + c.Message
		}
		last = fmt.Sprintf("phase %q progress %s generation %d observed %d (%s)", dr.Status.Phase, dr.Status.Progress, dr.Generation, dr.Status.ObservedGeneration, msg)
		return false, nil
	})
	if err != nil {
		w.T.Fatalf("%s: DriverRollout %s not in phase %v after %s: %v; last seen: %s", cluster, name, phases, timeout, err, last)
	}
	return dr
}

// drivers returns each GPU node's installed driver (GFD's label).
func (w *World) drivers(ctx context.Context, cluster string) (map[string]string, error) {
	var nodes corev1.NodeList
	if err := w.Client(cluster).List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("%s: list nodes: %w", cluster, err)
	}
	out := map[string]string{}
	for _, n := range nodes.Items {
		if n.Labels[v1alpha1.LabelGPUPresent] == "true" {
			out[n.Name] = n.Labels[v1alpha1.LabelGFDDriverFull]
		}
	}
	return out, nil
}

// Drivers returns each GPU node's installed driver (GFD's label).
func (w *Play) Drivers(cluster string) map[string]string {
	w.T.Helper()
	got, err := w.drivers(w.Context(), cluster)
	if err != nil {
		w.T.Fatal(err)
	}
	return got
}

// WaitDrivers waits until every GPU node of cluster (all of its pool)
// reports version.
func (w *Play) WaitDrivers(cluster, version string, timeout time.Duration) {
	w.T.Helper()
	var last string
	err := wait.PollUntilContextTimeout(w.Context(), poll, timeout, true, func(ctx context.Context) (bool, error) {
		got, err := w.drivers(ctx, cluster)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprint(got)
		if len(got) != w.poolNodes {
			return false, nil
		}
		for _, v := range got {
			if v != version {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		w.T.Fatalf("%s: every node on driver %s: not after %s: %v; last seen: %s", cluster, version, timeout, err, last)
	}
}

// AssertDrivers checks that every GPU node of cluster reports version now.
func (w *Play) AssertDrivers(cluster, version string) {
	w.T.Helper()
	got := w.Drivers(cluster)
	for n, v := range got {
		if v != version {
			w.T.Errorf("%s: node %s on driver %s, want %s (all: %v)", cluster, n, v, version, got)
		}
	}
	if len(got) != w.poolNodes {
		w.T.Errorf("%s: %d GPU nodes, want %d", cluster, len(got), w.poolNodes)
	}
}

// OperatorChart returns the helm.sh/chart label of the GPU Operator's
// Deployment, which says which chart version Flux applied.
func (w *Play) OperatorChart(cluster string) string {
	dep := &appsv1.Deployment{}
	if err := w.Client(cluster).Get(w.Context(), client.ObjectKey{Namespace: "gpu-operator", Name: "gpu-operator"}, dep); err != nil {
		return "missing: " + err.Error()
	}
	return dep.Labels["helm.sh/chart"]
}

// Exists reports whether the object exists in cluster.
func (w *Play) Exists(cluster, apiVersion, kind, ns, name string) bool {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	return w.Client(cluster).Get(w.Context(), client.ObjectKey{Namespace: ns, Name: name}, u) == nil
}

// Eventually polls cond until it holds or timeout passes, then fails the
// step with what cond last said.
func (w *Play) Eventually(timeout time.Duration, what string, cond func() (bool, string)) {
	w.T.Helper()
	var last string
	err := wait.PollUntilContextTimeout(w.Context(), poll, timeout, true, func(context.Context) (bool, error) {
		ok, msg := cond()
		last = msg
		return ok, nil
	})
	if err != nil {
		w.T.Fatalf("timed out after %s waiting for %s; last seen: %s", timeout, what, last)
	}
}

// shortRev is the first 12 digits of a revision Flux reports
// (main@sha1:…).
func shortRev(rev string) string {
	if i := strings.LastIndex(rev, ":"); i >= 0 && len(rev) > i+13 {
		return rev[i+1 : i+13]
	}
	return rev
}

// Since formats the time since t0 for logs.
func Since(t0 time.Time) string { return time.Since(t0).Round(10 * time.Millisecond).String() }
