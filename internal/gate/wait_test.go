package gate_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/gate/gatetest"
	"github.com/gpufleet/gpufleet/internal/testworld/testbed"
)

// TestWaitOnRealClusters waits for a wave whose last node is still on the
// old driver: Wait reports what prod-h100-b waits for, returns with the
// first look after the node finishes (how long after is logged: about the
// interval at most, never asserted; BenchmarkWaitLatency measures it),
// fails closed when the wait runs out, and stops at once when cancelled
// (Ctrl-C).
func TestWaitOnRealClusters(t *testing.T) {
	tb, f, _ := startWave(t)
	ctx := t.Context()
	b := tb.Cluster("prod-h100-b").Client
	const node = "h100-3"
	unfinish, finish := lastNode(t, b, node)
	opts := func(wait time.Duration, progress func(*gate.Report, []gate.Pending)) gate.WaitOptions {
		return gate.WaitOptions{
			Options:  gate.Options{Fleet: f, Clusters: []string{"prod-h100-a", "prod-h100-b"}, Revision: rev, Kubeconfig: tb.Kubeconfig, Timeout: 10 * time.Second, Now: time.Now},
			Wait:     wait,
			Interval: 200 * time.Millisecond,
			Progress: progress,
		}
	}

	t.Run("returns once the last node finishes", func(t *testing.T) {
		unfinish(t)
		var lines []string
		finished := make(chan time.Time, 1)
		progress := func(_ *gate.Report, p []gate.Pending) {
			for _, c := range p {
				lines = append(lines, c.String())
			}
		}
		go func() {
			time.Sleep(1500 * time.Millisecond)
			finish(t)
			finished <- time.Now()
		}()
		rep, err := gate.Wait(ctx, opts(30*time.Second, progress))
		returned := time.Now()
		if err != nil || rep.Verdict() != gate.Pass {
			t.Fatalf("err %v, verdict %s, failed %+v", err, rep.Verdict(), rep.Failed())
		}
		done := <-finished
		if returned.Before(done) {
			t.Fatalf("Wait returned before the node finished")
		}
		t.Logf("returned %s after the last node finished (interval 200ms)", returned.Sub(done).Round(time.Millisecond))
		got := strings.Join(lines, "\n")
		for _, want := range []string{"prod-h100-b: rollout Progressing,", "nodes/h100/driver (on another driver: h100-3=550.54.15)", "prod-h100-a: rollout Completed,", "; converged"} {
			if !strings.Contains(got, want) {
				t.Errorf("progress lacks %q:\n%s", want, got)
			}
		}
	})

	t.Run("fails closed when the wait runs out", func(t *testing.T) {
		unfinish(t)
		defer finish(t)
		start := time.Now()
		rep, err := gate.Wait(ctx, opts(1500*time.Millisecond, nil))
		if !errors.Is(err, gate.ErrWaitTimeout) || rep.Verdict() != gate.Fail {
			t.Fatalf("err %v, verdict %s; want the timeout and the last look's failure", err, rep.Verdict())
		}
		if took := time.Since(start); took < 1500*time.Millisecond {
			t.Errorf("gave up after %s, before the wait ran out", took)
		}
	})

	t.Run("stops when cancelled", func(t *testing.T) {
		unfinish(t)
		defer finish(t)
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(700*time.Millisecond, cancel)
		rep, err := gate.Wait(cctx, opts(time.Minute, nil))
		if !errors.Is(err, context.Canceled) || rep == nil || rep.Verdict() != gate.Fail {
			t.Fatalf("err %v, report %v; want context.Canceled and the last look", err, rep)
		}
	})
}

// lastNode returns functions that put prod-h100-b's node back on the old
// driver with its DriverRollout Progressing (all but one node done), and
// that finish
// it as the controller and GPU Feature Discovery would.
func lastNode(t testing.TB, c client.Client, node string) (unfinish, finish func(testing.TB)) {
	setNode := func(t testing.TB, driver string) {
		t.Helper()
		var n corev1.Node
		if err := c.Get(context.Background(), client.ObjectKey{Name: node}, &n); err != nil {
			t.Error(err)
			return
		}
		base := n.DeepCopy()
		n.Labels[v1alpha1.LabelGFDDriverFull] = driver
		// A merge patch: kwok and the node lifecycle controller write
		// the node too, so an update could conflict.
		if err := c.Patch(context.Background(), &n, client.MergeFrom(base)); err != nil {
			t.Error(err)
		}
	}
	setRollout := func(t testing.TB, done bool) {
		t.Helper()
		var dr v1alpha1.DriverRollout
		if err := c.Get(context.Background(), client.ObjectKey{Name: "r2026-06"}, &dr); err != nil {
			t.Error(err)
			return
		}
		dr.Status.Phase, dr.Status.Nodes.Done = v1alpha1.PhaseProgressing, dr.Status.Total-1
		dr.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionCompleted, Status: metav1.ConditionFalse, Reason: "InProgress", Message: "a node is not done", LastTransitionTime: metav1.Now()}}
		if done {
			dr.Status.Phase, dr.Status.Nodes.Done = v1alpha1.PhaseCompleted, dr.Status.Total
			dr.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionCompleted, Status: metav1.ConditionTrue, Reason: "AllNodesDone", Message: "every node is on the target driver", LastTransitionTime: metav1.Now()}}
		}
		if err := c.Status().Update(context.Background(), &dr); err != nil {
			t.Error(err)
		}
	}
	return func(t testing.TB) {
			setNode(t, "550.54.15")
			setRollout(t, false)
		}, func(t testing.TB) {
			setRollout(t, true)
			setNode(t, "570.172.08")
		}
}

// BenchmarkWaitLatency measures how long after the last node of a wave
// finishes gate.Wait returns, at a 200 ms interval (the CLI's default is
// 5 s): the node is finished at a random point of the interval, as it
// would be.
func BenchmarkWaitLatency(b *testing.B) {
	f, err := fleet.Load("../../examples/fleet.toml")
	if err != nil {
		b.Fatal(err)
	}
	f.Stack = nil
	crds, err := gatetest.CRDDirs("../..", f.Releases[f.Promotion.Stable].GPUOperator)
	if err != nil {
		b.Skipf("needs the real GPU Operator CRDs: %v", err)
	}
	tb := testbed.New(b, testbed.Options{Clusters: []string{"prod-h100-b"}, CRDDirs: crds, Scheme: testbed.NewScheme(), Kube: true, Kwok: true})
	c := tb.Cluster("prod-h100-b").Client
	if _, err := gatetest.Arrange(b.Context(), c, gate.Expect(f, "prod-h100-b", rev)); err != nil {
		b.Fatal(err)
	}
	unfinish, finish := lastNode(b, c, "h100-3")
	opts := gate.WaitOptions{
		Options:  gate.Options{Fleet: f, Clusters: []string{"prod-h100-b"}, Revision: rev, Kubeconfig: tb.Kubeconfig, Timeout: 10 * time.Second, Now: time.Now},
		Wait:     time.Minute,
		Interval: 200 * time.Millisecond,
	}
	var after time.Duration
	i := 0
	for b.Loop() {
		unfinish(b)
		finished := make(chan time.Time, 1)
		go func(delay time.Duration) {
			time.Sleep(delay)
			finish(b)
			finished <- time.Now()
		}(300*time.Millisecond + time.Duration(i%7)*29*time.Millisecond)
		i++
		rep, err := gate.Wait(b.Context(), opts)
		returned := time.Now()
		if err != nil || rep.Verdict() != gate.Pass {
			b.Fatalf("err %v, verdict %s", err, rep.Verdict())
		}
		after += returned.Sub(<-finished)
	}
	b.ReportMetric(float64(after.Milliseconds())/float64(b.N), "ms-after-last-node")
}
