package controller

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// cordon cordons a node as an admin would, with kubectl cordon.
func cordon(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	for range 10 {
		n := getNode(t, name)
		n.Spec.Unschedulable = true
		err := suite.c.Update(ctx, n)
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) {
			t.Fatal(err)
		}
	}
	t.Fatalf("cordon %s: too many conflicts", name)
}

// TestAdminCordonSurvivesSettleAndDelete reproduces issue 16's first
// defect: a node already on the target driver and cordoned by an admin was
// settled Done without the admin's cordon being recorded, and deleting the
// rollout (what Flux does when the release changes) uncordoned it; a
// second rollout touching the node dropped the mark the first recorded.
func TestAdminCordonSurvivesSettleAndDelete(t *testing.T) {
	env(t)
	nodes, _ := pool(t, "settled", 3, newDriver)
	admin := nodes[1]
	cordon(t, admin)
	startController(t, RealClock{}, nil)

	ro := newRollout("settled", "settled", oldDriver, newDriver)
	create(t, ro)
	waitPhase(t, "settled", v1alpha1.PhaseCompleted, 30*time.Second)
	n := getNode(t, admin)
	if n.Labels[v1alpha1.LabelPhase] != string(v1alpha1.NodeDone) || !n.Spec.Unschedulable {
		t.Fatalf("admin's node after settling: phase %q unschedulable %t", n.Labels[v1alpha1.LabelPhase], n.Spec.Unschedulable)
	}
	if n.Annotations[v1alpha1.AnnotationAdminCordoned] != "true" {
		t.Errorf("settled Done without recording the admin's cordon: annotations %v", n.Annotations)
	}

	deleteRollout(t, "settled")
	n = getNode(t, admin)
	if !n.Spec.Unschedulable {
		t.Fatalf("deleting the rollout uncordoned %s, which an admin had cordoned", admin)
	}
	if n.Annotations[v1alpha1.AnnotationAdminCordoned] != "true" || n.Labels[v1alpha1.LabelRollout] != "" {
		t.Errorf("released node %s: mark %q, owner %q; want the mark kept and no owner", admin, n.Annotations[v1alpha1.AnnotationAdminCordoned], n.Labels[v1alpha1.LabelRollout])
	}
	for _, name := range []string{nodes[0], nodes[2]} {
		if n := getNode(t, name); n.Spec.Unschedulable || n.Labels[v1alpha1.LabelRollout] != "" {
			t.Errorf("node %s after release: unschedulable %t owner %q", name, n.Spec.Unschedulable, n.Labels[v1alpha1.LabelRollout])
		}
	}

	// The next release's rollout takes the node, installs on it (it is out
	// of service anyway, so it goes first) and leaves it cordoned; deleting
	// that one too leaves it cordoned and marked.
	const next = "581.4.4"
	ro2 := newRollout("settled-next", "settled", newDriver, next)
	ro2.Spec.MaxUnavailable = new(intstr.FromInt32(2))
	create(t, ro2)
	waitPhase(t, "settled-next", v1alpha1.PhaseCompleted, 60*time.Second)
	assertDone(t, nodes, next, admin)
	if n := getNode(t, admin); n.Annotations[v1alpha1.AnnotationAdminCordoned] != "true" {
		t.Errorf("a second rollout dropped the admin-cordon mark: %v", n.Annotations)
	}
	deleteRollout(t, "settled-next")
	if n := getNode(t, admin); !n.Spec.Unschedulable || n.Annotations[v1alpha1.AnnotationAdminCordoned] != "true" {
		t.Errorf("after the second rollout's deletion: unschedulable %t, mark %q", n.Spec.Unschedulable, n.Annotations[v1alpha1.AnnotationAdminCordoned])
	}
}

// ownerWatch watches every node of a pool and records each change of owner
// and of driver label, to prove a node is never moved from one rollout to
// another and its driver is flipped only by its owner. It watches rather
// than polls: a release and the next rollout's claim may come within
// milliseconds, and every write must be seen.
type ownerWatch struct {
	mu      sync.Mutex
	owners  map[string][]string // distinct owners in order, "" included
	drivers map[string][]string
	cancel  context.CancelFunc
	done    chan struct{}
}

func watchOwners(t *testing.T, nodes []string) *ownerWatch {
	t.Helper()
	wc, err := client.NewWithWatch(suite.cfg.Config, client.Options{Scheme: testScheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &ownerWatch{owners: map[string][]string{}, drivers: map[string][]string{}, cancel: cancel, done: make(chan struct{})}
	record := func(n *corev1.Node) {
		if !contains(nodes, n.Name) {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		add := func(list []string, v string) []string {
			if len(list) > 0 && list[len(list)-1] == v {
				return list
			}
			return append(list, v)
		}
		w.owners[n.Name] = add(w.owners[n.Name], n.Labels[v1alpha1.LabelRollout])
		w.drivers[n.Name] = add(w.drivers[n.Name], n.Labels[v1alpha1.LabelDriver])
	}
	var list corev1.NodeList
	if err := wc.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		record(&list.Items[i])
	}
	rv := list.ResourceVersion
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			wi, err := wc.Watch(ctx, &corev1.NodeList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			for ev := range wi.ResultChan() {
				if n, ok := ev.Object.(*corev1.Node); ok {
					record(n)
					rv = n.ResourceVersion
				}
			}
			wi.Stop()
		}
	}()
	t.Cleanup(w.halt)
	return w
}

func (w *ownerWatch) halt() {
	w.cancel()
	<-w.done
}

// TestOverlappingRolloutsOneOwner reproduces issue 16's second defect: two
// DriverRollouts over the same nodes, created a few seconds apart, each took
// the other's nodes in flight for Pending and "cordoned by an admin", and
// they fought. Now each node belongs to one rollout; the second leaves the
// first's nodes alone, starts none, and reports the overlap naming the
// first; once the first is deleted (its nodes released), the second takes
// them and completes.
func TestOverlappingRolloutsOneOwner(t *testing.T) {
	env(t)
	nodes, cpu := pool(t, "overlap", 4, oldDriver)
	w := watchOwners(t, nodes)
	startController(t, RealClock{}, nil)

	first := newRollout("overlap-a", "overlap", oldDriver, newDriver)
	first.Spec.ParallelNodes = 2
	first.Spec.MaxUnavailable = new(intstr.FromInt32(2))
	first.Spec.Soak = metav1.Duration{Duration: 3 * time.Second}
	create(t, first)
	waitFor(t, 20*time.Second, "overlap-a started", func() (bool, string) {
		ph := getNode(t, nodes[0]).Labels[v1alpha1.LabelPhase]
		return ph != "", "phase " + ph
	})
	time.Sleep(2 * time.Second)

	const other = "581.5.5"
	second := newRollout("overlap-b", "overlap", oldDriver, other)
	second.Spec.ParallelNodes = 2
	second.Spec.MaxUnavailable = new(intstr.FromInt32(2))
	create(t, second)

	t.Run("the second reports the overlap and starts nothing", func(t *testing.T) {
		waitFor(t, 20*time.Second, "Overlap condition on overlap-b", func() (bool, string) {
			c := findCondition(getRollout(t, "overlap-b"), v1alpha1.ConditionOverlap)
			if c == nil {
				return false, "no condition"
			}
			return c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "DriverRollout overlap-a"), c.Message
		})
		waitPhase(t, "overlap-a", v1alpha1.PhaseCompleted, 60*time.Second)
		assertDone(t, nodes, newDriver)
		for _, name := range nodes {
			if n := getNode(t, name); n.Labels[v1alpha1.LabelRollout] != "overlap-a" || n.Annotations[v1alpha1.AnnotationAdminCordoned] != "" {
				t.Errorf("node %s: owner %q, admin mark %q", name, n.Labels[v1alpha1.LabelRollout], n.Annotations[v1alpha1.AnnotationAdminCordoned])
			}
		}
		ro := getRollout(t, "overlap-b")
		if ro.Status.Phase == v1alpha1.PhaseCompleted || ro.Status.Nodes.Elsewhere != 4 {
			t.Errorf("overlap-b: phase %s, nodes %+v; want 4 nodes elsewhere", ro.Status.Phase, ro.Status.Nodes)
		}
		if c := findCondition(getRollout(t, "overlap-a"), v1alpha1.ConditionOverlap); c == nil || c.Status != metav1.ConditionFalse {
			t.Errorf("overlap-a's Overlap condition %+v: it owns every node", c)
		}
	})
	t.Run("released by the first's deletion, the nodes go to the second", func(t *testing.T) {
		deleteRollout(t, "overlap-a")
		waitPhase(t, "overlap-b", v1alpha1.PhaseCompleted, 60*time.Second)
		assertDone(t, nodes, other)
		assertUntouched(t, []string{cpu}, "")
		if c := findCondition(getRollout(t, "overlap-b"), v1alpha1.ConditionOverlap); c == nil || c.Status != metav1.ConditionFalse {
			t.Errorf("Overlap after the release: %+v", c)
		}
	})
	w.halt()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, name := range nodes {
		// One owner at a time: a, released (""), then b. Never a → b.
		owners := w.owners[name]
		for i := 1; i < len(owners); i++ {
			if owners[i-1] != "" && owners[i] != "" {
				t.Errorf("node %s moved from %s to %s without being released; %d owner changes, the first: %v", name, owners[i-1], owners[i], len(owners)-1, owners[:min(len(owners), 8)])
				break
			}
		}
		// Each driver flipped once per rollout: old → new → other.
		if got := w.drivers[name]; len(got) > 3 {
			t.Errorf("node %s driver label flipped %d times, the first: %v", name, len(got)-1, got[:8])
		}
	}
	t.Logf("owners seen: %v", w.owners)
}

// TestAdmissionPolicy proves config/admission refuses, on the real API
// server, what the contract forbids: moving a node from one rollout to
// another (anyone), writing the labels only the controller writes (anyone
// else), and, for the controller's service account, lifting or dropping
// the mark of an admin's cordon. The controller's ordinary writes pass,
// under its own RBAC (config/rbac). internal/render's
// TestNodePolicyOnTheAPIServer plays every label's every case.
func TestAdmissionPolicy(t *testing.T) {
	env(t)
	ctx := context.Background()
	name := "admission-node"
	// An admin's cordoned node, which the controller's rollout a took.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
		Annotations: map[string]string{v1alpha1.AnnotationAdminCordoned: "true"}},
		Spec: corev1.NodeSpec{Unschedulable: true}}
	if err := suite.c.Create(ctx, node); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = suite.c.Delete(ctx, node) })
	sa := controllerClient(t)
	// The node lifecycle controller taints the node (no kubelet reports
	// it): a conflict is its write, not a refusal, and is tried again.
	patch := func(c client.Client, edit func(*corev1.Node)) (err error) {
		for range 10 {
			cur := getNode(t, name)
			want := cur.DeepCopy()
			edit(want)
			err = c.Patch(ctx, want, client.MergeFromWithOptions(cur, client.MergeFromWithOptimisticLock{}))
			if !apierrors.IsConflict(err) {
				return err
			}
		}
		return err
	}
	refused := func(err error) bool { return apierrors.IsForbidden(err) || apierrors.IsInvalid(err) }
	if err := patch(sa, func(n *corev1.Node) {
		n.Labels = map[string]string{v1alpha1.LabelRollout: "a", v1alpha1.LabelPhase: string(v1alpha1.NodeDone)}
	}); err != nil {
		t.Fatalf("the controller takes the node: %v", err)
	}
	tests := []struct {
		name    string
		c       client.Client
		edit    func(*corev1.Node)
		refused string // part of the refusal; empty: allowed
	}{
		{"an admin moves the node to another rollout", suite.c, func(n *corev1.Node) { n.Labels[v1alpha1.LabelRollout] = "b" }, "never moved to b"},
		{"an admin sets the node's phase", suite.c, func(n *corev1.Node) { n.Labels[v1alpha1.LabelPhase] = "Soaking" }, "may not write node label " + v1alpha1.LabelPhase},
		{"an admin releases the node", suite.c, func(n *corev1.Node) { delete(n.Labels, v1alpha1.LabelRollout) }, "may not write node label " + v1alpha1.LabelRollout},
		{"an admin flips the node's driver", suite.c, func(n *corev1.Node) { n.Labels[v1alpha1.LabelDriver] = "580.95.05" }, "may not write node label " + v1alpha1.LabelDriver},
		{"an admin labels the node's pool", suite.c, func(n *corev1.Node) { n.Labels[v1alpha1.LabelPool] = "h100" }, ""},
		{"the controller moves the node to another rollout", sa, func(n *corev1.Node) { n.Labels[v1alpha1.LabelRollout] = "b" }, "never moved to b"},
		{"the controller uncordons an admin's node", sa, func(n *corev1.Node) { n.Spec.Unschedulable = false }, "never uncordons it"},
		{"the controller drops the mark of a cordoned node", sa, func(n *corev1.Node) { delete(n.Annotations, v1alpha1.AnnotationAdminCordoned) }, "never drops"},
		{"the controller moves the node on in its rollout", sa, func(n *corev1.Node) { n.Labels[v1alpha1.LabelPhase] = "RollingBack" }, ""},
		{"the controller releases the node, keeping the mark", sa, func(n *corev1.Node) { delete(n.Labels, v1alpha1.LabelRollout); delete(n.Labels, v1alpha1.LabelPhase) }, ""},
		{"the controller takes the free node", sa, func(n *corev1.Node) { n.Labels = map[string]string{v1alpha1.LabelRollout: "b"} }, ""},
		{"an admin lifts the cordon", suite.c, func(n *corev1.Node) { n.Spec.Unschedulable = false }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := patch(tt.c, tt.edit)
			switch {
			case tt.refused == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.refused != "" && (!refused(err) || !strings.Contains(err.Error(), tt.refused)):
				t.Errorf("got %v, want a refusal saying %q", err, tt.refused)
			}
		})
	}
}
