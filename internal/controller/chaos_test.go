//go:build linux

package controller

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	"github.com/gpufleet/gpufleet/internal/testworld/nodesim"
	"github.com/gpufleet/gpufleet/internal/testworld/nodesim/nodesimtest"
	"github.com/gpufleet/gpufleet/internal/testworld/testbed"
)

// chaosSettings are how many runs TestControllerChaos makes and how hard
// each is hit: one run of 10 kills in `make test`, more with
// GPUFLEET_CHAOS_SEEDS and GPUFLEET_CHAOS_KILLS (`make chaos`).
func chaosSettings(t *testing.T) (first uint64, seeds, kills int) {
	get := func(name string, def int) int {
		v := os.Getenv(name)
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q is not a positive count", name, v)
		}
		return n
	}
	return uint64(get("GPUFLEET_CHAOS_SEED", 1)), get("GPUFLEET_CHAOS_SEEDS", 1), get("GPUFLEET_CHAOS_KILLS", 10)
}

// chaosCluster is a fresh testbed cluster for one run: the CRD, the
// controller's RBAC and the admission policy installed, kwok the kubelet,
// the driver DaemonSets of both versions, and a node simulator playing
// the driver install.
type chaosCluster struct {
	cl  *testbed.Cluster
	c   client.WithWatch
	sim *nodesim.Sim
	// xidRaised: steer raised its one XID, on xidNode.
	xidRaised bool
	xidNode   string
}

func newChaosCluster(t *testing.T) *chaosCluster {
	t.Helper()
	tb := testbed.New(t, testbed.Options{CRDDirs: []string{"../../config/crd/bases"}, Scheme: testScheme(), Kube: true, Kwok: true})
	cl := tb.Clusters()[0]
	ctx := t.Context()
	if err := installAdmission(ctx, cl.Client); err != nil {
		t.Fatal(err)
	}
	c, err := client.NewWithWatch(cl.Config, client.Options{Scheme: testScheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := nodesimtest.DriverDaemonSets(ctx, cl.Client, driverNamespace, oldDriver, newDriver); err != nil {
		t.Fatal(err)
	}
	sim := nodesim.New(cl.Client, nodesim.Options{DriverNamespace: driverNamespace, InstallTime: 500 * time.Millisecond, Resync: 200 * time.Millisecond})
	simCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = sim.Run(simCtx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return &chaosCluster{cl: cl, c: c, sim: sim}
}

// update gets a node or rollout, lets edit change it and writes it back,
// retrying on conflicts and while the API server is away.
func (cc *chaosCluster) update(t *testing.T, obj client.Object, edit func()) {
	t.Helper()
	ctx := t.Context()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := cc.c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if err == nil {
			edit()
			if err = cc.c.Update(ctx, obj); err == nil {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("update %s: %v", obj.GetName(), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestControllerChaos kills the controller, a separate process under its
// own RBAC and the admission policy, with SIGKILL at seeded random moments
// during a 24-node rollout over two pools (two nodes cordoned by an admin,
// one under remediation, two NotReady until every other node is through,
// an XID during one soak), and restarts the kube-apiserver once, while a
// watcher samples every node every 150 ms and watches every phase change: no start with more unavailable than allowed
// (nodes the world takes out, NotReady after the API server's restart,
// may exceed it; the controller must then start nothing), no node
// drained twice, nothing past the canary before the approval, never past
// the failure budget, an admin's cordon never lifted, no phase outside the
// state graph. It then deletes the rollout, which must leave the admins'
// cordons in place.
func TestControllerChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: skipped under -short (needs the testbed)")
	}
	first, seeds, kills := chaosSettings(t)
	bin := buildController(t)
	for seed := first; seed < first+uint64(seeds); seed++ {
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) { runChaos(t, bin, seed, kills) })
	}
}

func runChaos(t *testing.T, bin string, seed uint64, kills int) {
	start := time.Now()
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(seed, 16))
	cc := newChaosCluster(t)
	var nodes []string
	for _, p := range []nodesim.Pool{
		{Name: "chaos-h100", Product: "NVIDIA-H100-80GB-HBM3", Nodes: 12, Driver: oldDriver},
		{Name: "chaos-a100", Product: "NVIDIA-A100-SXM4-80GB", Nodes: 12, Driver: oldDriver},
	} {
		names, err := nodesimtest.AddPool(ctx, cc.cl.Client, cc.sim, driverNamespace, p)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, names...)
	}
	if err := nodesimtest.WaitReady(ctx, cc.cl.Client, driverNamespace, oldDriver, nodes, nil); err != nil {
		t.Fatal(err)
	}
	slices.Sort(nodes)
	// Two nodes cordoned by an admin, one under remediation and two whose
	// kubelets stop, chosen by the seed among the nodes after the first
	// (the canary).
	picks := rng.Perm(len(nodes) - 1)
	admins := []string{nodes[1+picks[0]], nodes[1+picks[1]]}
	remediated := nodes[1+picks[2]]
	lost := []string{nodes[1+picks[3]], nodes[1+picks[4]]}
	for _, name := range lost {
		if err := cc.sim.SetNotReady(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range admins {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		cc.update(t, n, func() { n.Spec.Unschedulable = true })
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: remediated}}
	cc.update(t, n, func() { n.Labels["gpufleet.io/remediation"] = "true" })

	ro := &v1alpha1.DriverRollout{
		ObjectMeta: metav1.ObjectMeta{Name: "chaos"},
		Spec: v1alpha1.DriverRolloutSpec{
			TargetVersion: newDriver, PreviousVersion: oldDriver,
			NodeSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: "gpufleet.io/pool", Operator: metav1.LabelSelectorOpIn, Values: []string{"chaos-h100", "chaos-a100"},
			}}},
			Canary:         v1alpha1.CanarySpec{Count: ptr.To[int32](1)},
			ParallelNodes:  4,
			MaxUnavailable: new(intstr.FromInt32(7)),
			FailureBudget:  1,
			Soak:           metav1.Duration{Duration: 2 * time.Second},
			// Timeouts well past the API server's restart on a busy
			// machine (it has taken 20s): nodes in flight across it must
			// not all fail for want of it.
			Timeouts: v1alpha1.StepTimeouts{
				Drain: metav1.Duration{Duration: 90 * time.Second}, Install: metav1.Duration{Duration: 90 * time.Second},
				Validate: metav1.Duration{Duration: 90 * time.Second},
			},
			Health:       v1alpha1.HealthSources{EventReasons: []string{nodesim.ReasonXID}},
			OutOfService: []metav1.LabelSelector{{MatchLabels: map[string]string{"gpufleet.io/remediation": "true"}}},
		},
	}
	// The stopped kubelets' nodes are NotReady before the rollout starts
	// (the node lifecycle controller's grace) and stay so until every
	// other node is through: they count against maxUnavailable at every
	// start of the chaos.
	cc.waitReady(t, lost, false)
	w, err := newInvariantWatch(cc.c, ro, admins)
	if err != nil {
		t.Fatal(err)
	}
	w.start(150 * time.Millisecond)
	defer w.stop()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d: "+format+"\nviolations: %v", append([]any{seed}, append(args, w.Violations())...)...)
	}

	ctrl := newReplica(t, "controller", bin, serviceAccountKubeconfig(t, cc.cl.Config))
	if err := ctrl.start(); err != nil {
		t.Fatal(err)
	}
	if err := cc.c.Create(ctx, ro); err != nil {
		t.Fatal(err)
	}

	// The chaos: SIGKILL at random moments, each replacement started at
	// once; the API server restarted once along the way. A process that
	// exits by itself (it lost the lease while the API server was away)
	// is restarted too.
	restartAt := 2 + rng.IntN(max(kills-3, 1))
	killed, exits, restarted := 0, 0, false
	for killed < kills {
		wait := time.Duration(300+rng.IntN(1700)) * time.Millisecond
		for end := time.Now().Add(wait); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			if !ctrl.running() {
				exits++
				if err := ctrl.start(); err != nil {
					t.Fatal(err)
				}
			}
			cc.steer(t, w, ro.Name)
		}
		if ctrl.kill() {
			killed++
		}
		if err := ctrl.start(); err != nil {
			t.Fatal(err)
		}
		if killed == restartAt && !restarted {
			restarted = true
			w.apiDown(true)
			if err := cc.cl.RestartAPIServer(); err != nil {
				t.Fatal(err)
			}
			w.apiDown(false)
			t.Logf("seed %d: kube-apiserver restarted after kill %d", seed, killed)
		}
		if v := w.Violations(); len(v) > 0 {
			fail("after %d kills: %s", killed, v[0])
		}
	}
	t.Logf("seed %d: %d kills, %d exits on their own, %s", seed, killed, exits, time.Since(start).Round(time.Second))

	// Calm: let it finish, still steering (approval, XID, remediation).
	cc.unremediate(t, remediated)
	deadline := time.Now().Add(3 * time.Minute)
	var got *v1alpha1.DriverRollout
	back := false
	for {
		if !ctrl.running() {
			exits++
			if err := ctrl.start(); err != nil {
				t.Fatal(err)
			}
		}
		cc.steer(t, w, ro.Name)
		got = &v1alpha1.DriverRollout{}
		err := cc.c.Get(ctx, client.ObjectKey{Name: ro.Name}, got)
		if err == nil && (got.Status.Phase == v1alpha1.PhaseCompleted || got.Status.Phase == v1alpha1.PhaseCompletedWithFailures) {
			break
		}
		if c := got.Status.Nodes; err == nil && !back && int(c.Pending) <= len(lost) &&
			c.Draining+c.Installing+c.Validating+c.Soaking+c.RollingBack == 0 {
			// Every other node is through: the kubelets come back.
			back = true
			w.mu.Lock()
			held := w.notReadyAtStart
			w.mu.Unlock()
			// Not a failure: on a loaded machine the watch has been seen
			// to count none of them (cause not found yet); the log says.
			if held < len(lost) {
				t.Logf("seed %d: the stopped kubelets' nodes were counted at %d of %d at the starts seen", seed, held, len(lost))
			}
			for _, name := range lost {
				if err := cc.sim.SetReady(ctx, name); err != nil {
					t.Fatal(err)
				}
			}
		}
		if time.Now().After(deadline) {
			fail("rollout not finished: phase %s, nodes %+v\n%s", got.Status.Phase, got.Status.Nodes, ctrl.tail(30))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if v := w.Violations(); len(v) > 0 {
		fail("%d violations, first: %s", len(v), v[0])
	}
	cc.checkEnd(t, got, nodes, admins, seed)

	// Deleting the rollout releases its nodes and lifts no admin's cordon.
	if err := cc.c.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	waitGone(t, cc.c, got.Name)
	for _, name := range admins {
		n := &corev1.Node{}
		if err := cc.c.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			t.Fatal(err)
		}
		if !n.Spec.Unschedulable || n.Annotations[v1alpha1.AnnotationAdminCordoned] != "true" || n.Labels[v1alpha1.LabelRollout] != "" {
			fail("admin's node %s after the deletion: unschedulable %t, mark %q, owner %q", name, n.Spec.Unschedulable, n.Annotations[v1alpha1.AnnotationAdminCordoned], n.Labels[v1alpha1.LabelRollout])
		}
	}
	w.stop()
	if v := w.Violations(); len(v) > 0 {
		fail("%d violations, first: %s", len(v), v[0])
	}
	w.mu.Lock()
	t.Logf("seed %d: %s, %d kills, %d self-exits, %d samples, longest gap between samples %s and %d over 250ms (the API server's restart and warm-up excluded), at most %d unavailable at a start (%d of them NotReady) and %d at any time, maxUnavailable %d, in %s",
		seed, got.Status.Phase, killed, exits, w.samples, w.maxGap.Round(time.Millisecond), w.slow, w.startOut, w.notReadyAtStart, w.maxOut, w.maxU, time.Since(start).Round(time.Second))
	w.mu.Unlock()
}

// steer plays the operator and the world: it approves the rollout once the
// canary passed, and raises one XID on the first node seen soaking after
// the approval.
func (cc *chaosCluster) steer(t *testing.T, w *invariantWatch, name string) {
	t.Helper()
	ctx := t.Context()
	ro := &v1alpha1.DriverRollout{}
	if err := cc.c.Get(ctx, client.ObjectKey{Name: name}, ro); err != nil {
		return
	}
	w.mu.Lock()
	approved := !w.approvedAt.IsZero()
	w.mu.Unlock()
	if !approved && ro.Status.Phase == v1alpha1.PhaseWaitingForApproval {
		// Record first: a node may start the moment the write lands.
		w.approved()
		cc.update(t, ro, func() { ro.Spec.Approval = ro.Name })
		return
	}
	if !approved || cc.xidRaised {
		return
	}
	var list corev1.NodeList
	if err := cc.c.List(ctx, &list, client.MatchingLabels{v1alpha1.LabelPhase: string(v1alpha1.NodeSoaking)}); err != nil || len(list.Items) == 0 {
		return
	}
	if err := cc.sim.RaiseXID(ctx, list.Items[0].Name, 79); err == nil {
		cc.xidRaised = true
		cc.xidNode = list.Items[0].Name
	}
}

// waitReady waits until every one of nodes is Ready (ready) or not.
func (cc *chaosCluster) waitReady(t *testing.T, nodes []string, ready bool) {
	t.Helper()
	deadline := time.Now().Add(testbed.NodeMonitorGracePeriod + 30*time.Second)
	for _, name := range nodes {
		for {
			n := &corev1.Node{}
			if err := cc.c.Get(t.Context(), client.ObjectKey{Name: name}, n); err == nil && planner.NodeReady(n) == ready {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %s not ready=%t after %s", name, ready, testbed.NodeMonitorGracePeriod+30*time.Second)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// unremediate clears the remediation mark, so the last node may start.
func (cc *chaosCluster) unremediate(t *testing.T, name string) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	cc.update(t, n, func() { delete(n.Labels, "gpufleet.io/remediation") })
}

// checkEnd checks the finished rollout: every node Done on the target but
// a node that failed, which is rolled back (and then the rollout says
// CompletedWithFailures); the admins' nodes cordoned and marked, every
// other node schedulable.
func (cc *chaosCluster) checkEnd(t *testing.T, ro *v1alpha1.DriverRollout, nodes, admins []string, seed uint64) {
	t.Helper()
	var list corev1.NodeList
	if err := cc.c.List(t.Context(), &list); err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, n := range list.Items {
		if !slices.Contains(nodes, n.Name) {
			continue
		}
		phase := v1alpha1.NodePhase(n.Labels[v1alpha1.LabelPhase])
		admin := slices.Contains(admins, n.Name)
		switch {
		case n.Annotations[v1alpha1.AnnotationFailed] == "true":
			failed++
			if phase != v1alpha1.NodeRolledBack && phase != v1alpha1.NodeQuarantined {
				t.Errorf("seed %d: failed node %s ended %s", seed, n.Name, phase)
			}
		case phase != v1alpha1.NodeDone || n.Labels[v1alpha1.LabelGFDDriverFull] != newDriver:
			t.Errorf("seed %d: node %s ended %s on %s", seed, n.Name, phase, n.Labels[v1alpha1.LabelGFDDriverFull])
		}
		if n.Spec.Unschedulable != admin && phase != v1alpha1.NodeQuarantined {
			t.Errorf("seed %d: node %s unschedulable %t, admin-cordoned %t", seed, n.Name, n.Spec.Unschedulable, admin)
		}
		if admin && n.Annotations[v1alpha1.AnnotationAdminCordoned] != "true" {
			t.Errorf("seed %d: admin's node %s lost its mark", seed, n.Name)
		}
	}
	want := v1alpha1.PhaseCompleted
	if failed > 0 {
		want = v1alpha1.PhaseCompletedWithFailures
	}
	if ro.Status.Phase != want {
		t.Errorf("seed %d: %d failed nodes (XID raised on %q) but phase %s, want %s", seed, failed, cc.xidNode, ro.Status.Phase, want)
	}
}

// waitGone waits for a deleted rollout's finalizer to let it go.
func waitGone(t *testing.T, c client.Client, name string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := c.Get(t.Context(), client.ObjectKey{Name: name}, &v1alpha1.DriverRollout{})
		if apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("rollout %s still there 30s after its deletion: %v", name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestLeaderElectionHandover runs two replicas of the controller, as
// config/manager does, kills the leader with SIGKILL while a node is in
// flight, and checks that the other takes over and finishes the rollout
// without a double start: every node enters Draining exactly once and goes
// through its phases in order.
func TestLeaderElectionHandover(t *testing.T) {
	if testing.Short() {
		t.Skip("leader election: skipped under -short (needs the testbed)")
	}
	bin := buildController(t)
	ctx := t.Context()
	cc := newChaosCluster(t)
	nodes, err := nodesimtest.AddPool(ctx, cc.cl.Client, cc.sim, driverNamespace, nodesim.Pool{Name: "ha", Product: "NVIDIA-H100-80GB-HBM3", Nodes: 5, Driver: oldDriver})
	if err != nil {
		t.Fatal(err)
	}
	if err := nodesimtest.WaitReady(ctx, cc.cl.Client, driverNamespace, oldDriver, nodes, nil); err != nil {
		t.Fatal(err)
	}
	kubeconfig := serviceAccountKubeconfig(t, cc.cl.Config)
	a, b := newReplica(t, "replica-a", bin, kubeconfig), newReplica(t, "replica-b", bin, kubeconfig)
	for _, r := range []*replica{a, b} {
		if err := r.start(); err != nil {
			t.Fatal(err)
		}
	}
	leader, err := waitLeading(ctx, 30*time.Second, a, b)
	if err != nil {
		t.Fatal(err)
	}
	other := a
	if leader == a {
		other = b
	}
	if other.leading() {
		t.Fatalf("both replicas lead")
	}

	ro := &v1alpha1.DriverRollout{
		ObjectMeta: metav1.ObjectMeta{Name: "ha"},
		Spec: v1alpha1.DriverRolloutSpec{
			TargetVersion: newDriver, PreviousVersion: oldDriver,
			NodeSelector:  metav1.LabelSelector{MatchLabels: map[string]string{"gpufleet.io/pool": "ha"}},
			ParallelNodes: 1, MaxUnavailable: new(intstr.FromInt32(1)),
			Soak: metav1.Duration{Duration: 2 * time.Second},
		},
	}
	w, err := newInvariantWatch(cc.c, ro, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.start(150 * time.Millisecond)
	defer w.stop()
	if err := cc.c.Create(ctx, ro); err != nil {
		t.Fatal(err)
	}
	// Kill the leader while the third node is in flight.
	inFlight := func(name string) bool {
		n := &corev1.Node{}
		return cc.c.Get(ctx, client.ObjectKey{Name: name}, n) == nil && n.Labels[v1alpha1.LabelPhase] != "" && n.Labels[v1alpha1.LabelPhase] != string(v1alpha1.NodeDone)
	}
	deadline := time.Now().Add(60 * time.Second)
	for !inFlight(nodes[2]) {
		if time.Now().After(deadline) {
			t.Fatalf("node %s never started:\n%s", nodes[2], leader.tail(20))
		}
		time.Sleep(20 * time.Millisecond)
	}
	killedAt := time.Now()
	leader.kill()
	if _, err := waitLeading(ctx, 30*time.Second, other); err != nil {
		t.Fatal(err)
	}
	takeover := time.Since(killedAt)
	// The killed replica comes back as a standby.
	if err := leader.start(); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(90 * time.Second)
	for {
		got := &v1alpha1.DriverRollout{}
		if err := cc.c.Get(ctx, client.ObjectKey{Name: ro.Name}, got); err == nil && got.Status.Phase == v1alpha1.PhaseCompleted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rollout not completed after the hand-over: %+v\n%s", got.Status, other.tail(30))
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // let the watch see the last write
	w.stop()
	if v := w.Violations(); len(v) > 0 {
		t.Fatalf("%d violations, first: %s", len(v), v[0])
	}
	if leader.leading() {
		t.Errorf("the restarted replica leads beside the new leader")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	happy := []v1alpha1.NodePhase{v1alpha1.NodeDraining, v1alpha1.NodeInstalling, v1alpha1.NodeValidating, v1alpha1.NodeSoaking, v1alpha1.NodeDone}
	for _, name := range nodes {
		got := slices.DeleteFunc(slices.Clone(w.phases[name]), func(p v1alpha1.NodePhase) bool { return p == "" })
		if !slices.Equal(got, happy) {
			t.Errorf("node %s went %v, want %v once", name, got, happy)
		}
	}
	t.Logf("leader %s killed with %s in flight; %s took over in %s; every node drained once", leader.name, nodes[2], other.name, takeover.Round(10*time.Millisecond))
}
