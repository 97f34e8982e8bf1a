package controller

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

const (
	oldDriver = "570.172.08"
	newDriver = "580.95.05"
)

// assertDone checks that every node runs the target, is uncordoned and Done.
func assertDone(t *testing.T, nodes []string, version string, cordoned ...string) {
	t.Helper()
	for _, name := range nodes {
		n := getNode(t, name)
		if got := n.Labels[v1alpha1.LabelPhase]; got != string(v1alpha1.NodeDone) {
			t.Errorf("node %s phase %q, want Done", name, got)
		}
		if got := n.Labels[v1alpha1.LabelGFDDriverFull]; got != version {
			t.Errorf("node %s reports driver %q, want %s", name, got, version)
		}
		if want := slices.Contains(cordoned, name); n.Spec.Unschedulable != want {
			t.Errorf("node %s unschedulable %t, want %t", name, n.Spec.Unschedulable, want)
		}
	}
}

// assertUntouched checks that the rollout never touched the nodes.
func assertUntouched(t *testing.T, nodes []string, version string) {
	t.Helper()
	for _, name := range nodes {
		n := getNode(t, name)
		if n.Labels[v1alpha1.LabelRollout] != "" || n.Spec.Unschedulable || n.Labels[v1alpha1.LabelDriver] != version && n.Labels[v1alpha1.LabelDriver] != "" {
			t.Errorf("node %s was touched: labels %v, unschedulable %t", name, n.Labels, n.Spec.Unschedulable)
		}
	}
}

func TestCanaryApprovalMetricsEvents(t *testing.T) {
	env(t)
	nodes, cpu := pool(t, "canary", 4, oldDriver)
	startController(t, RealClock{}, nil)
	ro := newRollout("canary", "canary", oldDriver, newDriver)
	ro.Spec.Canary.Count = ptr.To[int32](1)
	ro.Spec.ParallelNodes = 2
	ro.Spec.MaxUnavailable = new(intstr.FromInt32(2))
	create(t, ro)

	t.Run("canary first and alone", func(t *testing.T) {
		waitFor(t, 30*time.Second, "canary node Done", func() (bool, string) {
			ph := phases(t, nodes)
			for _, n := range nodes[1:] {
				if ph[n] != "" {
					t.Fatalf("node %s started while the canary ran: %v", n, ph)
				}
			}
			return ph[nodes[0]] == string(v1alpha1.NodeDone), fmt.Sprint(ph)
		})
		ro := waitPhase(t, "canary", v1alpha1.PhaseWaitingForApproval, 10*time.Second)
		if ro.Status.Canary.Result != v1alpha1.CanaryPassed || !slices.Equal(ro.Status.Canary.Nodes, nodes[:1]) {
			t.Errorf("canary status %+v", ro.Status.Canary)
		}
	})
	t.Run("wrong approval changes nothing and says so", func(t *testing.T) {
		edit(t, "canary", func(ro *v1alpha1.DriverRollout) { ro.Spec.Approval = "canry" })
		waitEvent(t, "canary", "ApprovalRejected", `"canry"`)
		morePasses(t, "canary", 2)
		ph := phases(t, nodes)
		for _, n := range nodes[1:] {
			if ph[n] != "" {
				t.Errorf("node %s started after a wrong approval: %v", n, ph)
			}
		}
		ro := getRollout(t, "canary")
		if ro.Status.Phase != v1alpha1.PhaseWaitingForApproval {
			t.Errorf("phase %s after a wrong approval", ro.Status.Phase)
		}
	})
	t.Run("right approval proceeds to the end", func(t *testing.T) {
		edit(t, "canary", func(ro *v1alpha1.DriverRollout) { ro.Spec.Approval = "canary" })
		ro := waitPhase(t, "canary", v1alpha1.PhaseCompleted, 60*time.Second)
		assertDone(t, nodes, newDriver)
		assertUntouched(t, []string{cpu}, "")
		if ro.Status.Progress != "4/4" || ro.Status.ObservedGeneration != ro.Generation {
			t.Errorf("status progress %s, observedGeneration %d of %d", ro.Status.Progress, ro.Status.ObservedGeneration, ro.Generation)
		}
	})
	t.Run("metrics", func(t *testing.T) {
		for series, want := range map[string]float64{
			`gpufleet_rollout_nodes{phase="Done",rollout="canary"}`:                 4,
			`gpufleet_rollout_phase{phase="Completed",rollout="canary"}`:            1,
			`gpufleet_rollout_failure_budget_remaining{rollout="canary"}`:           0,
			`gpufleet_rollout_transitions_total{rollout="canary",to="Soaking"}`:     4,
			`gpufleet_rollout_node_failures_total{rollout="canary"}`:                0,
			`gpufleet_rollout_transitions_total{rollout="canary",to="RollingBack"}`: 0,
		} {
			if got := metricValue(t, metrics.Registry, series); got != want {
				t.Errorf("%s = %g, want %g", series, got, want)
			}
		}
	})
	t.Run("status is not rewritten when nothing changes", func(t *testing.T) {
		rv := getRollout(t, "canary").ResourceVersion
		morePasses(t, "canary", 2)
		if got := getRollout(t, "canary").ResourceVersion; got != rv {
			t.Errorf("rollout rewritten while idle: resourceVersion %s → %s", rv, got)
		}
	})
	t.Run("events carry the planner's reasons", func(t *testing.T) {
		waitEvent(t, "canary", "NodeDraining", nodes[0], "canary node started")
		waitEvent(t, "canary", "NodeSoaking", "reports driver "+newDriver)
		waitEvent(t, "canary", "WaitingForApproval", `set spec.approval to "canary"`)
		waitEvent(t, "canary", "Completed")
	})
}

func TestMaxUnavailableKeepsAdminCordon(t *testing.T) {
	env(t)
	ctx := context.Background()
	nodes, _ := pool(t, "maxu", 4, oldDriver)
	admin := nodes[2]
	n := getNode(t, admin)
	base := n.DeepCopy()
	n.Spec.Unschedulable = true
	// A merge patch, as kubectl cordon sends: nothing to conflict with.
	if err := suite.c.Patch(ctx, n, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	s := sample(t, nodes)
	startController(t, RealClock{}, nil)
	ro := newRollout("maxu", "maxu", oldDriver, newDriver)
	ro.Spec.ParallelNodes = 3
	ro.Spec.MaxUnavailable = new(intstr.FromInt32(2))
	create(t, ro)
	waitPhase(t, "maxu", v1alpha1.PhaseCompleted, 90*time.Second)
	s.stop()
	if got := s.max.Load(); got > 2 {
		t.Errorf("up to %d nodes unavailable at once, maxUnavailable 2", got)
	}
	assertDone(t, nodes, newDriver, admin)
	if got := getNode(t, admin).Annotations[v1alpha1.AnnotationAdminCordoned]; got != "true" {
		t.Errorf("admin cordon not recorded: %q", got)
	}
}

func TestWindow(t *testing.T) {
	env(t)
	nodes, _ := pool(t, "window", 2, oldDriver)
	clock := &offsetClock{}
	clock.Set(6 * time.Hour)
	startController(t, clock, nil)
	now := time.Now().UTC()
	ro := newRollout("window", "window", oldDriver, newDriver)
	ro.Spec.Windows = []v1alpha1.MaintenanceWindow{{
		Start: now.Add(-time.Hour).Format("15:04"), End: now.Add(2 * time.Hour).Format("15:04"),
	}}
	create(t, ro)
	t.Run("closed window touches nothing", func(t *testing.T) {
		ro := waitPhase(t, "window", v1alpha1.PhaseOutsideWindow, 10*time.Second)
		morePasses(t, "window", 2)
		assertUntouched(t, nodes, oldDriver)
		if c := findCondition(ro, v1alpha1.ConditionOutsideWindow); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("OutsideWindow condition %+v", c)
		}
	})
	t.Run("opening it starts the rollout", func(t *testing.T) {
		clock.Set(0)
		// Moving a clock is no watched change: nudge the rollout.
		edit(t, "window", func(ro *v1alpha1.DriverRollout) {
			ro.Annotations = map[string]string{"test/nudge": "1"}
		})
		waitPhase(t, "window", v1alpha1.PhaseCompleted, 60*time.Second)
		assertDone(t, nodes, newDriver)
	})
}

func findCondition(ro *v1alpha1.DriverRollout, typ string) *metav1.Condition {
	for i := range ro.Status.Conditions {
		if ro.Status.Conditions[i].Type == typ {
			return &ro.Status.Conditions[i]
		}
	}
	return nil
}

func TestBadDriverStopsAtCanary(t *testing.T) {
	env(t)
	const bad = "581.1.1"
	suite.sim.MarkBadDriver(bad)
	nodes, _ := pool(t, "badcanary", 4, oldDriver)
	startController(t, RealClock{}, nil)
	ro := newRollout("badcanary", "badcanary", oldDriver, bad)
	ro.Spec.Canary.Count = ptr.To[int32](1)
	ro.Spec.Approval = "badcanary"
	ro.Spec.FailureBudget = 3
	create(t, ro)
	waitNodePhase(t, nodes[0], v1alpha1.NodeRolledBack, 40*time.Second)
	got := waitPhase(t, "badcanary", v1alpha1.PhaseStalled, 10*time.Second)
	c := findCondition(got, v1alpha1.ConditionStalled)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != "CanaryFailed" || !strings.Contains(c.Message, "canary") {
		t.Errorf("Stalled condition %+v", c)
	}
	n := getNode(t, nodes[0])
	if n.Labels[v1alpha1.LabelDriver] != oldDriver || n.Labels[v1alpha1.LabelGFDDriverFull] != oldDriver || n.Spec.Unschedulable {
		t.Errorf("canary not rolled back cleanly: driver %s reports %s unschedulable %t",
			n.Labels[v1alpha1.LabelDriver], n.Labels[v1alpha1.LabelGFDDriverFull], n.Spec.Unschedulable)
	}
	if n.Annotations[v1alpha1.AnnotationFailed] != "true" {
		t.Errorf("canary failure not recorded")
	}
	waitEvent(t, "badcanary", "NodeRollingBack", "failed to install")
	waitEvent(t, "badcanary", "Stalled", "canary node failed")
	if got := metricValue(t, metrics.Registry, `gpufleet_rollout_node_failures_total{rollout="badcanary"}`); got != 1 {
		t.Errorf("failures metric = %g, want 1", got)
	}
	if got := metricValue(t, metrics.Registry, `gpufleet_rollout_failure_budget_remaining{rollout="badcanary"}`); got != 2 {
		t.Errorf("budget remaining metric = %g, want 2", got)
	}
	morePasses(t, "badcanary", 2)
	assertUntouched(t, nodes[1:], oldDriver)
}

func TestXIDDuringSoakRollsBack(t *testing.T) {
	env(t)
	ctx := context.Background()
	nodes, _ := pool(t, "xid", 2, oldDriver)
	startController(t, RealClock{}, nil)
	ro := newRollout("xid", "xid", oldDriver, newDriver)
	// Long enough for the XID below to land inside the soak, short enough
	// for the second node to finish the rollout soon after.
	ro.Spec.Soak = metav1.Duration{Duration: 8 * time.Second}
	ro.Spec.FailureBudget = 1
	ro.Spec.Health.EventReasons = []string{"XidError"}
	create(t, ro)
	waitNodePhase(t, nodes[0], v1alpha1.NodeSoaking, 30*time.Second)
	time.Sleep(1100 * time.Millisecond)
	if err := suite.sim.RaiseXID(ctx, nodes[0], 79); err != nil {
		t.Fatal(err)
	}
	waitNodePhase(t, nodes[0], v1alpha1.NodeRolledBack, 30*time.Second)
	waitEvent(t, "xid", "NodeRollingBack", "event XidError", "of soak")
	n := getNode(t, nodes[0])
	if n.Labels[v1alpha1.LabelGFDDriverFull] != oldDriver || n.Annotations[v1alpha1.AnnotationFailed] != "true" || n.Spec.Unschedulable {
		t.Errorf("node after XID: reports %s, failed %q, unschedulable %t", n.Labels[v1alpha1.LabelGFDDriverFull], n.Annotations[v1alpha1.AnnotationFailed], n.Spec.Unschedulable)
	}
	// The other node finishes, within the budget of one failure: that is
	// not Completed (a node is left on the old driver) but a terminal
	// condition of its own, Stalled for kstatus and Flux (issue 16).
	ro = waitPhase(t, "xid", v1alpha1.PhaseCompletedWithFailures, 60*time.Second)
	for typ, want := range map[string]metav1.ConditionStatus{
		v1alpha1.ConditionCompletedWithFailures: metav1.ConditionTrue, v1alpha1.ConditionCompleted: metav1.ConditionFalse,
		v1alpha1.ConditionReady: metav1.ConditionFalse, v1alpha1.ConditionStalled: metav1.ConditionTrue,
	} {
		if c := findCondition(ro, typ); c == nil || c.Status != want {
			t.Errorf("condition %s = %+v, want %s", typ, c, want)
		}
	}
	if c := findCondition(ro, v1alpha1.ConditionReady); c == nil || !strings.Contains(c.Message, "1 rolled back") {
		t.Errorf("Ready condition %+v: want it to say what was rolled back", c)
	}
	waitEvent(t, "xid", "CompletedWithFailures")
}

// TestECCConditionFailsSoak watches a node condition only: the ECC error's
// condition fails the soaking node (its Event reason is not named).
func TestECCConditionFailsSoak(t *testing.T) {
	env(t)
	ctx := context.Background()
	nodes, _ := pool(t, "ecc", 2, oldDriver)
	startController(t, RealClock{}, nil)
	ro := newRollout("ecc", "ecc", oldDriver, newDriver)
	ro.Spec.Soak = metav1.Duration{Duration: 30 * time.Second}
	ro.Spec.FailureBudget = 1
	ro.Spec.Health.NodeConditions = []string{"GpuEccError"}
	create(t, ro)
	waitNodePhase(t, nodes[0], v1alpha1.NodeSoaking, 30*time.Second)
	time.Sleep(100 * time.Millisecond)
	if err := suite.sim.RaiseECC(ctx, nodes[0]); err != nil {
		t.Fatal(err)
	}
	waitNodePhase(t, nodes[0], v1alpha1.NodeRolledBack, 30*time.Second)
	waitEvent(t, "ecc", "NodeRollingBack", "condition GpuEccError")
}

func TestFailedRollbackQuarantines(t *testing.T) {
	env(t)
	const from, to = "572.2.2", "582.2.2"
	nodes, _ := pool(t, "quar", 2, from)
	suite.sim.MarkBadDriver(from)
	suite.sim.MarkBadDriver(to)
	startController(t, RealClock{}, nil)
	ro := newRollout("quar", "quar", from, to)
	ro.Spec.FailureBudget = 0
	create(t, ro)
	waitNodePhase(t, nodes[0], v1alpha1.NodeQuarantined, 40*time.Second)
	n := getNode(t, nodes[0])
	if n.Labels[v1alpha1.LabelQuarantined] != "true" {
		t.Errorf("quarantine label missing: %v", n.Labels)
	}
	if !slices.ContainsFunc(n.Spec.Taints, func(x corev1.Taint) bool {
		return x.Key == v1alpha1.TaintQuarantined && x.Effect == corev1.TaintEffectNoSchedule
	}) {
		t.Errorf("quarantine taint missing: %v", n.Spec.Taints)
	}
	if !n.Spec.Unschedulable {
		t.Errorf("quarantined node not cordoned")
	}
	waitEvent(t, "quar", "NodeQuarantined", "rollback to "+from+" failed")
	waitPhase(t, "quar", v1alpha1.PhaseStalled, 10*time.Second)
	assertUntouched(t, nodes[1:], from)
}

func TestBudgetPauseAbort(t *testing.T) {
	env(t)
	t.Run("failure budget stops the rollout", func(t *testing.T) {
		const bad = "583.3.3"
		suite.sim.MarkBadDriver(bad)
		nodes, _ := pool(t, "budget", 4, oldDriver)
		startController(t, RealClock{}, nil)
		ro := newRollout("budget", "budget", oldDriver, bad)
		ro.Spec.FailureBudget = 0
		create(t, ro)
		got := waitPhase(t, "budget", v1alpha1.PhaseStalled, 40*time.Second)
		if c := findCondition(got, v1alpha1.ConditionBudgetExhausted); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("BudgetExhausted condition %+v", c)
		}
		waitNodePhase(t, nodes[0], v1alpha1.NodeRolledBack, 30*time.Second)
		morePasses(t, "budget", 2)
		assertUntouched(t, nodes[1:], oldDriver)
	})
	t.Run("pause stops new starts", func(t *testing.T) {
		nodes, _ := pool(t, "pause", 3, oldDriver)
		startController(t, RealClock{}, nil)
		ro := newRollout("pause", "pause", oldDriver, newDriver)
		ro.Spec.Soak = metav1.Duration{Duration: 3 * time.Second}
		create(t, ro)
		waitNodePhase(t, nodes[0], v1alpha1.NodeSoaking, 30*time.Second)
		edit(t, "pause", func(ro *v1alpha1.DriverRollout) { ro.Spec.Paused = true })
		waitNodePhase(t, nodes[0], v1alpha1.NodeDone, 20*time.Second)
		waitPhase(t, "pause", v1alpha1.PhasePaused, 10*time.Second)
		morePasses(t, "pause", 2)
		assertUntouched(t, nodes[1:], oldDriver)
		edit(t, "pause", func(ro *v1alpha1.DriverRollout) { ro.Spec.Paused = false })
		waitFor(t, 10*time.Second, "next node started after unpausing", func() (bool, string) {
			ph := getNode(t, nodes[1]).Labels[v1alpha1.LabelPhase]
			return ph != "", "phase " + ph
		})
	})
	t.Run("abort rolls back upgraded nodes", func(t *testing.T) {
		nodes, _ := pool(t, "abort", 3, oldDriver)
		startController(t, RealClock{}, nil)
		ro := newRollout("abort", "abort", oldDriver, newDriver)
		create(t, ro)
		waitNodePhase(t, nodes[1], v1alpha1.NodeDone, 40*time.Second)
		edit(t, "abort", func(ro *v1alpha1.DriverRollout) { ro.Spec.Abort = true })
		waitPhase(t, "abort", v1alpha1.PhaseAborted, 40*time.Second)
		for _, name := range nodes[:2] {
			n := getNode(t, name)
			if n.Labels[v1alpha1.LabelPhase] != string(v1alpha1.NodeRolledBack) || n.Labels[v1alpha1.LabelGFDDriverFull] != oldDriver || n.Spec.Unschedulable {
				t.Errorf("node %s after abort: phase %s, reports %s, unschedulable %t", name, n.Labels[v1alpha1.LabelPhase], n.Labels[v1alpha1.LabelGFDDriverFull], n.Spec.Unschedulable)
			}
		}
		// The third node may have started before the abort; if so it is
		// rolled back too, otherwise untouched.
		if ph := getNode(t, nodes[2]).Labels[v1alpha1.LabelPhase]; ph != "" && ph != string(v1alpha1.NodeRolledBack) {
			t.Errorf("node %s phase %s after abort", nodes[2], ph)
		}
	})
}

// slowPod is a pod on node whose termination takes grace seconds. kwok
// removes a deleted pod at once, so a finalizer of the test's holds the
// pod until its grace period is over, as a container that takes its time
// to stop would.
func slowPod(t *testing.T, ns, name, node string, grace int64, labels map[string]string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: &grace,
			// It holds a GPU, so the drain evicts it (spec.evict.mode
			// GPUPods, the default).
			Containers: []corev1.Container{{Name: "app", Image: "app:1",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{v1alpha1.ResourceGPU: resource1}}}}},
	}
	if grace > 0 {
		p.Finalizers = []string{slowStop}
	}
	if err := suite.c.Create(context.Background(), p); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	if grace > 0 {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			stopSlowly(ctx, client.ObjectKeyFromObject(p), time.Duration(grace)*time.Second)
		}()
		t.Cleanup(func() { cancel(); <-done })
	}
	return p
}

// slowStop is the finalizer that keeps a slowPod until its grace period
// is over.
const slowStop = "test.gpufleet.io/slow-stop"

// stopSlowly waits for the pod to be deleted and removes its finalizer
// grace after it saw the deletion (kwok's own delete shortens the pod's
// deletionTimestamp to the moment it came), or when ctx ends, so that the
// pod never outlives its test.
func stopSlowly(ctx context.Context, key client.ObjectKey, grace time.Duration) {
	var deleted time.Time
	for {
		p := &corev1.Pod{}
		if err := suite.c.Get(context.Background(), key, p); err != nil {
			return
		}
		if p.DeletionTimestamp != nil && deleted.IsZero() {
			deleted = time.Now()
		}
		if ctx.Err() != nil || (!deleted.IsZero() && time.Since(deleted) >= grace) {
			base := p.DeepCopy()
			p.Finalizers = slices.DeleteFunc(p.Finalizers, func(f string) bool { return f == slowStop })
			if err := suite.c.Patch(context.Background(), p, client.MergeFrom(base)); err == nil || apierrors.IsNotFound(err) {
				return
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func ensureNamespace(t *testing.T, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := suite.c.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

func TestRestartMidDrain(t *testing.T) {
	env(t)
	nodes, _ := pool(t, "restart", 3, oldDriver)
	ensureNamespace(t, "restart")
	slowPod(t, "restart", "slow", nodes[0], 4, nil)
	s := sample(t, nodes)
	run := startController(t, RealClock{}, nil)
	ro := newRollout("restart", "restart", oldDriver, newDriver)
	ro.Spec.ParallelNodes = 2
	ro.Spec.MaxUnavailable = new(intstr.FromInt32(1))
	create(t, ro)
	waitNodePhase(t, nodes[0], v1alpha1.NodeDraining, 20*time.Second)
	run.stop()
	time.Sleep(2 * time.Second)
	if ph := getNode(t, nodes[0]).Labels[v1alpha1.LabelPhase]; ph != string(v1alpha1.NodeDraining) {
		t.Fatalf("node moved on without a controller: %s", ph)
	}
	startController(t, RealClock{}, nil)
	waitPhase(t, "restart", v1alpha1.PhaseCompleted, 60*time.Second)
	s.stop()
	if got := s.max.Load(); got > 1 {
		t.Errorf("up to %d nodes unavailable at once, maxUnavailable 1", got)
	}
	assertDone(t, nodes, newDriver)
	// Delete it while this controller runs: the first one's cleanup would
	// otherwise come after this one stopped, and nobody would finalize it.
	deleteRollout(t, "restart")
}

func TestPDBAndDrainTimeout(t *testing.T) {
	env(t)
	ctx := context.Background()
	nodes, _ := pool(t, "pdb", 2, oldDriver)
	ensureNamespace(t, "pdb")
	app := map[string]string{"app": "db"}
	slowPod(t, "pdb", "db-0", nodes[0], 0, app)
	slowPod(t, "pdb", "db-1", nodes[0], 0, app)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "pdb"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: new(intstr.FromInt32(1)),
			Selector:     &metav1.LabelSelector{MatchLabels: app},
		},
	}
	if err := suite.c.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	// The real disruption controller computes the budget once kwok runs
	// both pods: one disruption allowed of two healthy pods.
	waitFor(t, 20*time.Second, "the budget computed", func() (bool, string) {
		got := &policyv1.PodDisruptionBudget{}
		if err := suite.c.Get(ctx, client.ObjectKeyFromObject(pdb), got); err != nil {
			return false, err.Error()
		}
		st := got.Status
		return st.ObservedGeneration == got.Generation && st.DisruptionsAllowed == 1 && st.CurrentHealthy == 2 && st.ExpectedPods == 2,
			fmt.Sprintf("%+v", st)
	})
	startController(t, RealClock{}, nil)
	ro := newRollout("pdb", "pdb", oldDriver, newDriver)
	ro.Spec.Timeouts.Drain = metav1.Duration{Duration: 4 * time.Second}
	ro.Spec.FailureBudget = 0
	create(t, ro)
	waitNodePhase(t, nodes[0], v1alpha1.NodeRolledBack, 30*time.Second)
	var pods corev1.PodList
	if err := suite.c.List(ctx, &pods, client.InNamespace("pdb")); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Errorf("%d db pods left, want 1: the budget allowed one eviction", len(pods.Items))
	}
	waitEvent(t, "pdb", "NodeRollingBack", "drain did not finish within 4s")
	if got := metricValue(t, metrics.Registry, `gpufleet_rollout_evictions_total{result="blocked"}`); got < 1 {
		t.Errorf("blocked evictions = %g, want some", got)
	}
	n := getNode(t, nodes[0])
	if n.Spec.Unschedulable || n.Labels[v1alpha1.LabelDriver] != oldDriver {
		t.Errorf("node after drain timeout: unschedulable %t driver %s", n.Spec.Unschedulable, n.Labels[v1alpha1.LabelDriver])
	}
}

// TestDrainEvictsWhatTheSwapNeeds: by default a drain evicts the pods that
// hold a GPU and leaves the node's other pods running on the cordoned node;
// with spec.evict.mode All it evicts them too. The recorder of evictions is
// the API server itself: a pod the drain left is still there, never
// deleted, after the node's driver was swapped.
func TestDrainEvictsWhatTheSwapNeeds(t *testing.T) {
	env(t)
	ctx := context.Background()
	startController(t, RealClock{}, nil)
	for _, tt := range []struct {
		name string
		mode v1alpha1.EvictMode
		left []string
	}{
		{"gpu-pods", "", []string{"monitoring"}},
		{"all", v1alpha1.EvictAll, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ns := "evict-" + tt.name
			nodes, _ := pool(t, ns, 1, oldDriver)
			ensureNamespace(t, ns)
			slowPod(t, ns, "trainer", nodes[0], 0, nil)
			cpu := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "monitoring", Namespace: ns},
				Spec:       corev1.PodSpec{NodeName: nodes[0], Containers: []corev1.Container{{Name: "exporter", Image: "exporter:1"}}},
			}
			if err := suite.c.Create(ctx, cpu); err != nil {
				t.Fatal(err)
			}
			ro := newRollout(ns, ns, oldDriver, newDriver)
			ro.Spec.Canary.Count = new(int32(0))
			ro.Spec.Evict.Mode = tt.mode
			create(t, ro)
			waitPhase(t, ns, v1alpha1.PhaseCompleted, 60*time.Second)
			assertDone(t, nodes, newDriver)
			var pods corev1.PodList
			if err := suite.c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			var left []string
			for _, p := range pods.Items {
				if p.DeletionTimestamp != nil {
					t.Errorf("pod %s is being deleted", p.Name)
				}
				left = append(left, p.Name)
			}
			if !slices.Equal(left, tt.left) {
				t.Errorf("pods left on the node after its drain: %v, want %v", left, tt.left)
			}
		})
	}
}

// TestDrainWaitsForJobs: a job pod the wait selector names finishes on
// its cordoned node before the driver is swapped, never evicted (the
// recorder is the API server: an evicted pod is deleted); one that runs past
// the wait's timeout is evicted then, and the node goes on.
func TestDrainWaitsForJobs(t *testing.T) {
	env(t)
	ctx := context.Background()
	startController(t, RealClock{}, nil)
	job := map[string]string{"job": "train"}
	rollout := func(name string, wait time.Duration) *v1alpha1.DriverRollout {
		ro := newRollout(name, name, oldDriver, newDriver)
		ro.Spec.Canary.Count = new(int32(0))
		ro.Spec.Evict.WaitForCompletion = &v1alpha1.WaitForCompletion{PodSelector: metav1.LabelSelector{MatchLabels: job}, Timeout: metav1.Duration{Duration: wait}}
		return ro
	}
	t.Run("the job finishes first", func(t *testing.T) {
		const ns = "wait-finish"
		nodes, _ := pool(t, ns, 1, oldDriver)
		ensureNamespace(t, ns)
		pod := slowPod(t, ns, "train-0", nodes[0], 0, job)
		create(t, rollout(ns, time.Minute))
		waitNodePhase(t, nodes[0], v1alpha1.NodeDraining, 20*time.Second)
		// Several passes, each retrying the drain, while it runs: the
		// node waits, cordoned, and the job is left alone.
		morePasses(t, ns, 3)
		n := getNode(t, nodes[0])
		if ph := n.Labels[v1alpha1.LabelPhase]; ph != string(v1alpha1.NodeDraining) || !n.Spec.Unschedulable {
			t.Fatalf("while its job runs the node is %s, unschedulable %t; want Draining and cordoned", ph, n.Spec.Unschedulable)
		}
		got := &corev1.Pod{}
		if err := suite.c.Get(ctx, client.ObjectKeyFromObject(pod), got); err != nil || got.DeletionTimestamp != nil {
			t.Fatalf("the job pod during the wait: %v, deleting %v", err, got.DeletionTimestamp)
		}
		got.Status.Phase = corev1.PodSucceeded
		if err := suite.c.Status().Update(ctx, got); err != nil {
			t.Fatal(err)
		}
		waitPhase(t, ns, v1alpha1.PhaseCompleted, 60*time.Second)
		assertDone(t, nodes, newDriver)
		if err := suite.c.Get(ctx, client.ObjectKeyFromObject(pod), got); err != nil || got.DeletionTimestamp != nil || got.Status.Phase != corev1.PodSucceeded {
			t.Errorf("the job pod after the swap: %v, deleting %v, phase %s; want it finished, never evicted", err, got.DeletionTimestamp, got.Status.Phase)
		}
	})
	t.Run("the job outlasts the wait", func(t *testing.T) {
		const ns = "wait-timeout"
		const wait = 4 * time.Second
		nodes, _ := pool(t, ns, 1, oldDriver)
		ensureNamespace(t, ns)
		pod := slowPod(t, ns, "train-0", nodes[0], 0, job)
		create(t, rollout(ns, wait))
		waitNodePhase(t, nodes[0], v1alpha1.NodeDraining, 20*time.Second)
		draining := time.Now()
		waitFor(t, 30*time.Second, "the job pod evicted", func() (bool, string) {
			err := suite.c.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
		if waited := time.Since(draining); waited < wait-time.Second {
			t.Errorf("the job pod was evicted %s after the node started draining, before the wait of %s ran out", waited, wait)
		}
		waitPhase(t, ns, v1alpha1.PhaseCompleted, 60*time.Second)
		assertDone(t, nodes, newDriver)
	})
}

// TestIdleNodesFirst: of a pool's pending nodes the one with no GPU pod
// starts before the one running a GPU job, whatever their names; the
// Event of its start says why.
func TestIdleNodesFirst(t *testing.T) {
	env(t)
	ctx := context.Background()
	const ns = "idle-first"
	nodes, _ := pool(t, ns, 2, oldDriver)
	ensureNamespace(t, ns)
	slowPod(t, ns, "train-0", nodes[0], 0, nil)
	waitFor(t, 20*time.Second, "the job running", func() (bool, string) {
		p := &corev1.Pod{}
		if err := suite.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "train-0"}, p); err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodRunning && p.Status.StartTime != nil, string(p.Status.Phase)
	})
	startController(t, RealClock{}, nil)
	ro := newRollout(ns, ns, oldDriver, newDriver)
	ro.Spec.Canary.Count = new(int32(0))
	create(t, ro)
	waitFor(t, 20*time.Second, "a node to start", func() (bool, string) {
		a, b := getNode(t, nodes[0]).Labels[v1alpha1.LabelPhase], getNode(t, nodes[1]).Labels[v1alpha1.LabelPhase]
		return a != "" && a != string(v1alpha1.NodePending) || b != "" && b != string(v1alpha1.NodePending), a + " " + b
	})
	if busy, idle := getNode(t, nodes[0]).Labels[v1alpha1.LabelPhase], getNode(t, nodes[1]).Labels[v1alpha1.LabelPhase]; busy != "" && busy != string(v1alpha1.NodePending) {
		t.Errorf("the node running a GPU job (%s) started first (%s), the idle one is %q", nodes[0], busy, idle)
	}
	waitEvent(t, ns, "NodeDraining", "(idle: no GPU pod)")
	waitPhase(t, ns, v1alpha1.PhaseCompleted, 60*time.Second)
	assertDone(t, nodes, newDriver)
}

func TestCRDValidation(t *testing.T) {
	env(t)
	ctx := context.Background()
	t.Run("unknown field", func(t *testing.T) {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "gpufleet.io/v1alpha1", "kind": "DriverRollout",
			"metadata": map[string]any{"name": "unknown-field"},
			"spec": map[string]any{
				"targetVersion": newDriver, "previousVersion": oldDriver,
				"nodeSelecter": map[string]any{}, "nodeSelector": map[string]any{},
			},
		}}
		err := suite.c.Create(ctx, u, client.FieldValidation(metav1.FieldValidationStrict))
		if err == nil || !strings.Contains(err.Error(), `unknown field "spec.nodeSelecter"`) {
			t.Errorf("create with an unknown field: %v", err)
		}
	})
	t.Run("invalid plan", func(t *testing.T) {
		ro := newRollout("invalid", "x", oldDriver, newDriver)
		ro.Spec.MaxUnavailable = new(intstr.FromString("150%"))
		ro.Spec.Canary = v1alpha1.CanarySpec{Count: ptr.To[int32](1), Nodes: []string{"a"}}
		ro.Spec.TargetVersion = "latest"
		ro.Spec.MaintenanceDomain = &v1alpha1.MaintenanceDomain{NodeLabel: v1alpha1.LabelGFDClique, MaxNodes: 18}
		err := suite.c.Create(ctx, ro)
		if !apierrors.IsInvalid(err) {
			t.Fatalf("create an invalid plan: %v", err)
		}
		for _, want := range []string{
			`spec.targetVersion: Invalid value: "latest"`,
			"maxUnavailable must be a count >= 1 or a percentage",
			"canary count and canary nodes are mutually exclusive",
			"maintenanceDomain.maxNodes exceeds parallelNodes",
		} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
	})
}

// TestPrometheusSignalFailsSoak serves the Prometheus HTTP API from the
// test: the query reports an XID for the first node once it soaks.
func TestPrometheusSignalFailsSoak(t *testing.T) {
	env(t)
	nodes, _ := pool(t, "prom", 2, oldDriver)
	var queries atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		queries.Add(1)
		q := r.URL.Query().Get("query")
		v := "0"
		if strings.Contains(q, `Hostname="`+nodes[0]+`"`) {
			v = "1"
		}
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"Hostname":"x"},"value":[1,"%s"]}]}}`, v)
	}))
	defer srv.Close()
	startController(t, RealClock{}, nil)
	ro := newRollout("prom", "prom", oldDriver, newDriver)
	ro.Spec.Soak = metav1.Duration{Duration: 4 * time.Second}
	ro.Spec.FailureBudget = 1
	ro.Spec.Health.Prometheus = &v1alpha1.PrometheusCheck{URL: srv.URL, Query: `changes(DCGM_FI_DEV_XID_ERRORS{Hostname="$node"}[$soak])`}
	create(t, ro)
	waitNodePhase(t, nodes[0], v1alpha1.NodeRolledBack, 40*time.Second)
	waitEvent(t, "prom", "NodeRollingBack", "prometheus PrometheusQuery")
	waitNodePhase(t, nodes[1], v1alpha1.NodeDone, 40*time.Second)
	if queries.Load() == 0 {
		t.Error("Prometheus never queried")
	}
}
