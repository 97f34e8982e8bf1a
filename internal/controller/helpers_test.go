package controller

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
)

var t0 = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

func rollout(name string) *v1alpha1.DriverRollout {
	return &v1alpha1.DriverRollout{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.DriverRolloutSpec{TargetVersion: "580.95.05", PreviousVersion: "570.172.08"},
	}
}

func TestTransitionNode(t *testing.T) {
	ro := rollout("r1")
	base := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{
		v1alpha1.LabelDriver: "570.172.08", v1alpha1.LabelRollout: "old", v1alpha1.LabelPhase: "Done",
	}, Annotations: map[string]string{v1alpha1.AnnotationFailed: "true"}}}
	tests := []struct {
		name string
		in   func(n *corev1.Node) // changes to base for this case
		tr   planner.Transition
		want func(n *corev1.Node)
	}{
		{
			name: "an earlier rollout's admin-cordon mark stays: it is a fact about the node",
			in: func(n *corev1.Node) {
				n.Spec.Unschedulable = true
				n.Annotations[v1alpha1.AnnotationAdminCordoned] = "true"
			},
			tr: planner.Transition{Node: "n1", From: v1alpha1.NodePending, To: v1alpha1.NodeDraining},
			want: func(n *corev1.Node) {
				delete(n.Annotations, v1alpha1.AnnotationFailed)
			},
		},
		{
			name: "a cordon of the rollout's own drops a stale admin-cordon mark",
			in:   func(n *corev1.Node) { n.Annotations[v1alpha1.AnnotationAdminCordoned] = "true" },
			tr:   planner.Transition{Node: "n1", From: v1alpha1.NodePending, To: v1alpha1.NodeDraining, Cordon: true},
			want: func(n *corev1.Node) {
				n.Spec.Unschedulable = true
				delete(n.Annotations, v1alpha1.AnnotationFailed)
				delete(n.Annotations, v1alpha1.AnnotationAdminCordoned)
			},
		},
		{
			name: "start cordons and forgets another rollout's failure",
			tr:   planner.Transition{Node: "n1", From: v1alpha1.NodePending, To: v1alpha1.NodeDraining, Cordon: true},
			want: func(n *corev1.Node) {
				n.Spec.Unschedulable = true
				delete(n.Annotations, v1alpha1.AnnotationFailed)
			},
		},
		{
			name: "admin cordon is recorded, not cordoned again",
			tr:   planner.Transition{Node: "n1", To: v1alpha1.NodeDraining, RecordAdminCordon: true},
			want: func(n *corev1.Node) {
				delete(n.Annotations, v1alpha1.AnnotationFailed)
				n.Annotations[v1alpha1.AnnotationAdminCordoned] = "true"
			},
		},
		{
			name: "install flips the driver label",
			tr:   planner.Transition{Node: "n1", To: v1alpha1.NodeInstalling, Driver: "580.95.05"},
			want: func(n *corev1.Node) {
				delete(n.Annotations, v1alpha1.AnnotationFailed)
				n.Labels[v1alpha1.LabelDriver] = "580.95.05"
			},
		},
		{
			name: "quarantine adds label and taint",
			tr:   planner.Transition{Node: "n1", To: v1alpha1.NodeQuarantined, Quarantine: true, Failure: true},
			want: func(n *corev1.Node) {
				n.Annotations[v1alpha1.AnnotationFailed] = "true"
				n.Labels[v1alpha1.LabelQuarantined] = "true"
				n.Spec.Taints = []corev1.Taint{defaultQuarantineTaint()}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := base.DeepCopy()
			if tt.in != nil {
				tt.in(in)
			}
			got := transitionNode(in, ro, tt.tr, t0)
			want := in.DeepCopy()
			want.Labels[v1alpha1.LabelRollout] = "r1"
			want.Labels[v1alpha1.LabelPhase] = string(tt.tr.To)
			want.Annotations[v1alpha1.AnnotationSince] = t0.Format(time.RFC3339Nano)
			tt.want(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("transitionNode (-want +got):\n%s", diff)
			}
			if in.Labels[v1alpha1.LabelRollout] != "old" {
				t.Errorf("transitionNode changed its input")
			}
		})
	}
}

func TestReleaseNode(t *testing.T) {
	node := func(phase string, cordoned, admin bool) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{v1alpha1.LabelRollout: "r", v1alpha1.LabelPhase: phase},
			Annotations: map[string]string{v1alpha1.AnnotationSince: t0.Format(time.RFC3339)}}}
		n.Spec.Unschedulable = cordoned
		if admin {
			n.Annotations[v1alpha1.AnnotationAdminCordoned] = "true"
		}
		return n
	}
	// Note: releasing never uncordons. A Done or rolled-back node was
	// uncordoned by its rollout in the move that finished it, so a cordon
	// on it now is someone else's (issue 16: deleting the rollout of an
	// admin-cordoned node settled Done lifted the admin's cordon).
	tests := []struct {
		name         string
		in           *corev1.Node
		wantCordoned bool
		wantMark     bool
	}{
		{"a Done node cordoned by someone else stays cordoned", node("Done", true, false), true, false},
		{"admin's cordon and its mark stay", node("Done", true, true), true, true},
		{"a rolled-back node's admin cordon stays", node("RolledBack", true, true), true, true},
		{"a stale mark on a schedulable node goes", node("Done", false, true), false, false},
		{"quarantined stays cordoned", node("Quarantined", true, false), true, false},
		{"node in flight stays cordoned", node("Installing", true, false), true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed := releaseNode(tt.in)
			if !changed {
				t.Fatal("releaseNode reported no change")
			}
			if got.Spec.Unschedulable != tt.wantCordoned {
				t.Errorf("unschedulable = %t, want %t", got.Spec.Unschedulable, tt.wantCordoned)
			}
			if mark := got.Annotations[v1alpha1.AnnotationAdminCordoned] == "true"; mark != tt.wantMark {
				t.Errorf("admin-cordon mark = %t, want %t", mark, tt.wantMark)
			}
			delete(got.Annotations, v1alpha1.AnnotationAdminCordoned)
			if len(got.Labels)+len(got.Annotations) != 0 {
				t.Errorf("marks left: %v %v", got.Labels, got.Annotations)
			}
		})
	}
}

func TestObserveNode(t *testing.T) {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{v1alpha1.LabelRollout: "r1", v1alpha1.LabelPhase: "Soaking"},
			Annotations: map[string]string{v1alpha1.AnnotationSince: t0.Format(time.RFC3339Nano), v1alpha1.AnnotationAdminCordoned: "true", v1alpha1.AnnotationFailed: "true"}},
		Spec:   corev1.NodeSpec{Unschedulable: true},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	now := t0.Add(time.Hour)
	got := observeNode(n, "r1", now)
	want := planner.Node{Name: "n1", Labels: n.Labels, Unschedulable: true, Ready: true, AdminCordoned: true, Failed: true,
		Owner: "r1", Phase: v1alpha1.NodeSoaking, Since: t0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("same rollout (-want +got):\n%s", diff)
	}
	// Another rollout sees whose node it is and the admin's cordon, not
	// the owner's progress.
	got = observeNode(n, "other", now)
	want = planner.Node{Name: "n1", Labels: n.Labels, Unschedulable: true, Ready: true, AdminCordoned: true, Owner: "r1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("other rollout (-want +got):\n%s", diff)
	}
	delete(n.Annotations, v1alpha1.AnnotationSince)
	if got := observeNode(n, "r1", now); !got.Since.Equal(now) {
		t.Errorf("since without annotation = %v, want now", got.Since)
	}
}

func pod(name string, mut func(*corev1.Pod)) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if mut != nil {
		mut(&p)
	}
	return p
}

func TestPodsToDrain(t *testing.T) {
	gpu := func(resource string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceName(resource): resource1}}}}
		}
	}
	pods := []corev1.Pod{
		pod("app", nil),
		pod("ds", func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "x", Controller: new(true)}}
			gpu(v1alpha1.ResourceGPU)(p)
		}),
		pod("mirror", func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} }),
		pod("done", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
		pod("terminating", func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: t0}; gpu(v1alpha1.ResourceGPU)(p) }),
		pod("rs", func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "x", Controller: new(true)}}
		}),
		pod("trainer", gpu(v1alpha1.ResourceGPU)),
		pod("shared", gpu(v1alpha1.ResourceGPU+".shared")),
		pod("mig", gpu(v1alpha1.ResourceMIGPrefix+"1g.10gb")),
		pod("init", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{v1alpha1.ResourceGPU: resource1}}}}
		}),
		pod("dra", func(p *corev1.Pod) {
			p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: new("gpu-claim")}}
		}),
		pod("dra-nic", func(p *corev1.Pod) {
			p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "nic", ResourceClaimName: new("nic-claim")}}
		}),
		pod("mounts-devices", func(p *corev1.Pod) { p.Labels = map[string]string{"uses": "nvidia-devices"} }),
		pod("nic", gpu("nvidia.com/hostdev")),
	}
	for _, tt := range []struct {
		name  string
		evict v1alpha1.EvictSpec
		want  []string
	}{
		{"unset: the GPU pods", v1alpha1.EvictSpec{}, []string{"terminating", "trainer", "shared", "mig", "init", "dra"}},
		{"GPUPods and a selector", v1alpha1.EvictSpec{Mode: v1alpha1.EvictGPUPods, GPUPodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"uses": "nvidia-devices"}}},
			[]string{"terminating", "trainer", "shared", "mig", "init", "dra", "mounts-devices"}},
		{"All", v1alpha1.EvictSpec{Mode: v1alpha1.EvictAll}, []string{"app", "terminating", "rs", "trainer", "shared", "mig", "init", "dra", "dra-nic", "mounts-devices", "nic"}},
	} {
		// The claims as read: gpu-claim holds a GPU, nic-claim a NIC.
		claims := &claimView{gpus: map[string]int{"ns/gpu-claim": 1}}
		var got []string
		for _, p := range podsToDrain(pods, &v1alpha1.DriverRolloutSpec{Evict: tt.evict}, claims) {
			got = append(got, p.Name)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: podsToDrain (-want +got):\n%s", tt.name, diff)
		}
	}
}

// resource1 is a quantity of one (a GPU).
var resource1, resource8 = resource.MustParse("1"), resource.MustParse("8")

func TestDriverState(t *testing.T) {
	sel := labels.SelectorFromSet(labels.Set{"app.kubernetes.io/component": "nvidia-driver"})
	driver := func(image string, mut func(*corev1.Pod)) corev1.Pod {
		return pod("d", func(p *corev1.Pod) {
			p.Labels = map[string]string{"app.kubernetes.io/component": "nvidia-driver"}
			p.Spec.Containers = []corev1.Container{{Name: "driver", Image: image}}
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
			if mut != nil {
				mut(p)
			}
		})
	}
	crashing := func(p *corev1.Pod) {
		p.Status.Conditions = nil
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}
	}
	tests := []struct {
		name              string
		pods              []corev1.Pod
		wantReady, wantFa bool
	}{
		{"ready pod of the version", []corev1.Pod{driver("nvcr.io/nvidia/driver:580.95.05-ubuntu22.04", nil)}, true, false},
		{"old version's pod does not count", []corev1.Pod{driver("nvcr.io/nvidia/driver:570.172.08-ubuntu22.04", nil)}, false, false},
		{"tag without a version counts", []corev1.Pod{driver("registry:5000/driver:570-5.15.0-generic", nil)}, true, false},
		{"node selector of another version", []corev1.Pod{driver("driver", func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{v1alpha1.LabelDriver: "570.172.08"}
		})}, false, false},
		{"crash loop fails", []corev1.Pod{driver("driver:580.95.05", crashing)}, false, true},
		{"terminating pod ignored", []corev1.Pod{driver("driver:580.95.05", func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: t0} })}, false, false},
		{"other pods ignored", []corev1.Pod{pod("app", nil)}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ready, failed := driverState(tt.pods, sel, "580.95.05")
			if ready != tt.wantReady || failed != tt.wantFa {
				t.Errorf("driverState = ready %t failed %t, want %t %t", ready, failed, tt.wantReady, tt.wantFa)
			}
		})
	}
}

func TestSignals(t *testing.T) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
		{Type: "GpuXidError", Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0), Message: "Xid 79"},
		{Type: "GpuEccError", Status: corev1.ConditionFalse},
		{Type: "Other", Status: corev1.ConditionTrue},
	}}}
	got := conditionSignals(n, []string{"GpuXidError", "GpuEccError"})
	want := []planner.Signal{{At: t0.Add(time.Second - time.Nanosecond), Source: "condition", Reason: "GpuXidError", Message: "Xid 79"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("conditionSignals (-want +got):\n%s", diff)
	}
	ev := func(node, reason string, at time.Time) corev1.Event {
		return corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: node}, Reason: reason,
			Message: "m", LastTimestamp: metav1.NewTime(at)}
	}
	events := []corev1.Event{ev("n1", "XidError", t0), ev("n2", "XidError", t0), ev("n1", "Started", t0)}
	got = eventSignals(events, "n1", []string{"XidError"})
	want = []planner.Signal{{At: t0.Add(time.Second - time.Nanosecond), Source: "event", Reason: "XidError", Message: "m"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("eventSignals (-want +got):\n%s", diff)
	}
	micro := corev1.Event{EventTime: metav1.NewMicroTime(t0.Add(123 * time.Microsecond))}
	if got := eventTime(&micro); !got.Equal(t0.Add(123 * time.Microsecond)) {
		t.Errorf("eventTime(eventTime) = %v", got)
	}
}

func TestExpandQuery(t *testing.T) {
	got := expandQuery(`changes(DCGM_FI_DEV_XID_ERRORS{Hostname="$node"}[$soak])`, "gpu-1", 90*time.Second+300*time.Millisecond)
	if want := `changes(DCGM_FI_DEV_XID_ERRORS{Hostname="gpu-1"}[90s])`; got != want {
		t.Errorf("expandQuery = %s, want %s", got, want)
	}
	if got := expandQuery("x[$soak]", "n", 0); got != "x[1s]" {
		t.Errorf("expandQuery at zero soak = %s", got)
	}
}

func TestPrometheusHTTP(t *testing.T) {
	var gotQuery string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/query" {
			http.NotFound(w, r)
			return
		}
		gotQuery = r.URL.Query().Get("query")
		var body string
		switch gotQuery {
		case "bad":
			w.WriteHeader(http.StatusBadRequest)
			body = `{"status":"error","errorType":"bad_data","error":"parse error"}`
		case "matrix":
			body = `{"status":"success","data":{"resultType":"matrix","result":[]}}`
		default:
			body = `{"status":"success","data":{"resultType":"vector","result":[` +
				`{"metric":{"Hostname":"gpu-1"},"value":[1700000000.1,"0"]},` +
				`{"metric":{"Hostname":"gpu-1","gpu":"3"},"value":[1700000000.1,"2"]}]}}`
		}
		if _, err := io.WriteString(w, body); err != nil {
			t.Errorf("write the answer to %q: %v", gotQuery, err)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	got, err := PrometheusHTTP{}.Query(ctx, srv.URL+"/", "changes(x[60s])", t0)
	if err != nil {
		t.Fatal(err)
	}
	want := []Sample{{Labels: map[string]string{"Hostname": "gpu-1"}, Value: 0}, {Labels: map[string]string{"Hostname": "gpu-1", "gpu": "3"}, Value: 2}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Query (-want +got):\n%s", diff)
	}
	if gotQuery != "changes(x[60s])" {
		t.Errorf("server saw query %q", gotQuery)
	}
	sigs := promSignals(got, "q", t0)
	if len(sigs) != 1 || sigs[0].Source != "prometheus" || !sigs[0].At.Equal(t0) {
		t.Errorf("promSignals = %+v", sigs)
	}
	for _, q := range []string{"bad", "matrix"} {
		if _, err := (PrometheusHTTP{}).Query(ctx, srv.URL, q, t0); err == nil {
			t.Errorf("query %q: no error", q)
		}
	}
}

func TestWakeAfter(t *testing.T) {
	if got := wakeAfter(time.Time{}, t0); got != 0 {
		t.Errorf("no next check: %v", got)
	}
	if got := wakeAfter(t0.Add(time.Minute), t0); got != time.Minute+50*time.Millisecond {
		t.Errorf("next check in a minute: %v", got)
	}
	if got := sooner(0, 5*time.Second); got != 5*time.Second {
		t.Errorf("sooner(0, 5s) = %v", got)
	}
	if got := sooner(3*time.Second, 5*time.Second); got != 3*time.Second {
		t.Errorf("sooner(3s, 5s) = %v", got)
	}
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewMetrics(reg); err != nil {
		t.Fatalf("second registration: %v", err)
	}
	ro := rollout("r1")
	m.observeStatus(ro, &v1alpha1.DriverRolloutStatus{Phase: v1alpha1.PhaseStalled, BudgetUsed: 2, Nodes: v1alpha1.NodeCounts{Done: 3}}, 1)
	m.transition("r1", planner.Transition{To: v1alpha1.NodeRollingBack, Failure: true})
	checks := map[string]float64{
		`gpufleet_rollout_nodes{phase="Done",rollout="r1"}`:                 3,
		`gpufleet_rollout_phase{phase="Stalled",rollout="r1"}`:              1,
		`gpufleet_rollout_failure_budget_remaining{rollout="r1"}`:           -1,
		`gpufleet_rollout_node_failures_total{rollout="r1"}`:                1,
		`gpufleet_rollout_transitions_total{rollout="r1",to="RollingBack"}`: 1,
	}
	for name, want := range checks {
		if got := metricValue(t, reg, name); got != want {
			t.Errorf("%s = %g, want %g", name, got, want)
		}
	}
	m.forget("r1")
	if n := testutil.CollectAndCount(m.nodes); n != 0 {
		t.Errorf("after forget, %d node series left", n)
	}
	var nilMetrics *Metrics
	nilMetrics.transition("r", planner.Transition{})
}

func TestExpectations(t *testing.T) {
	node := func(stamp string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.AnnotationSince: stamp}}}
	}
	var e expectations
	if got := e.stale(map[string]*corev1.Node{"a": node("1")}, t0); got != "" {
		t.Errorf("no writes: stale %q", got)
	}
	e.wrote("a", "2", t0)
	e.wrote("b", "2", t0)
	nodes := map[string]*corev1.Node{"a": node("1"), "b": node("2")}
	if got := e.stale(nodes, t0.Add(time.Second)); got != "a" {
		t.Errorf("cache behind on a: stale %q", got)
	}
	nodes["a"] = node("2")
	if got := e.stale(nodes, t0.Add(time.Second)); got != "" {
		t.Errorf("cache caught up: stale %q", got)
	}
	e.wrote("c", "3", t0)
	if got := e.stale(map[string]*corev1.Node{"c": node("1")}, t0.Add(expectTimeout+time.Second)); got != "" {
		t.Errorf("expired expectation still waited on: %q", got)
	}
	e.wrote("d", "3", t0)
	if got := e.stale(map[string]*corev1.Node{}, t0); got != "" {
		t.Errorf("deleted node waited on: %q", got)
	}
}
