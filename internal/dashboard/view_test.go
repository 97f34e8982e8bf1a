package dashboard

import (
	"bytes"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/gitops"
)

func node(name string, st v1alpha1.NodeState, extra map[string]string) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": "h100"}, Annotations: map[string]string{}}}
	maps.Copy(n.Labels, extra)
	st.Encode(n.Labels, n.Annotations)
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	return n
}

// TestRolloutViewTimeline: each read adds a segment to a node's timeline
// only when its phase (or the time it entered it) changed; a node the
// selector picks that no rollout owns is Pending, one another rollout owns
// is not shown; the window is the planner's.
func TestRolloutViewTimeline(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC) // a Tuesday
	dr := &v1alpha1.DriverRollout{ObjectMeta: metav1.ObjectMeta{Name: "r2"}}
	dr.Spec.TargetVersion = "580.95.05"
	dr.Spec.FailureBudget = 2
	dr.Spec.NodeSelector = metav1.LabelSelector{MatchLabels: map[string]string{"pool": "h100"}}
	dr.Spec.Windows = []v1alpha1.MaintenanceWindow{{Start: "12:00", End: "14:00"}}
	dr.Status.Phase = v1alpha1.PhaseOutsideWindow
	dr.Status.BudgetUsed = 1
	e := gate.Expected{Rollout: "r2"}
	hist := map[string][]Segment{}
	read := func(now time.Time, nodes ...corev1.Node) *RolloutView {
		return rolloutView(e, gate.Observed{Rollout: dr, Nodes: nodes}, hist, now)
	}
	a := func(p v1alpha1.NodePhase, at time.Time) v1alpha1.NodeState {
		return v1alpha1.NodeState{Rollout: "r2", Phase: p, Since: at}
	}
	rv := read(t0,
		node("n1", a(v1alpha1.NodeDraining, t0), nil),
		node("n2", v1alpha1.NodeState{}, nil),
		node("n3", v1alpha1.NodeState{Rollout: "other", Phase: v1alpha1.NodeDone}, nil))
	if rv.WindowOpen || !rv.WindowChange.Equal(t0.Add(2*time.Hour)) || rv.BudgetUsed != 1 || rv.BudgetTotal != 2 {
		t.Errorf("window open %v, next change %s, budget %d of %d; want closed, opening at 12:00, 1 of 2", rv.WindowOpen, rv.WindowChange, rv.BudgetUsed, rv.BudgetTotal)
	}
	var names []string
	for _, n := range rv.Nodes {
		names = append(names, n.Name+"="+n.Phase)
	}
	if diff := cmp.Diff([]string{"n1=Draining", "n2=Pending"}, names); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
	t1 := t0.Add(time.Minute)
	read(t1, node("n1", a(v1alpha1.NodeDraining, t0), nil))
	rv = read(t1.Add(time.Second), node("n1", v1alpha1.NodeState{Rollout: "r2", Phase: v1alpha1.NodeRolledBack, Since: t1, Failed: true}, nil))
	want := []Segment{{Phase: "Draining", Start: t0}, {Phase: "RolledBack", Start: t1, Failed: true}}
	if diff := cmp.Diff(want, rv.Nodes[0].History); diff != "" {
		t.Errorf("n1's timeline (-want +got):\n%s", diff)
	}
	if _, ok := hist["n2"]; ok {
		t.Error("a node no longer read keeps its timeline")
	}
	rv = read(t0.Add(2*time.Hour+time.Minute), node("n1", a(v1alpha1.NodeDone, t1), nil))
	if !rv.WindowOpen || !rv.WindowChange.Equal(t0.Add(4*time.Hour)) {
		t.Errorf("at 12:01 the window is open %v, closing %s; want open, closing at 14:00", rv.WindowOpen, rv.WindowChange)
	}
}

// TestChangedIgnoresHeartbeats: a Node update that only moves heartbeat
// times rebuilds nothing; a label, an annotation, a cordon or a condition's
// status does.
func TestChangedIgnoresHeartbeats(t *testing.T) {
	base := node("n1", v1alpha1.NodeState{Rollout: "r2", Phase: v1alpha1.NodeSoaking}, nil)
	beat := base.DeepCopy()
	beat.Status.Conditions[0].LastHeartbeatTime = metav1.Now()
	beat.ResourceVersion = "2"
	if changed(&base, beat) {
		t.Error("a heartbeat counts as a change")
	}
	for what, mutate := range map[string]func(n *corev1.Node){
		"phase":    func(n *corev1.Node) { n.Labels[v1alpha1.LabelPhase] = "Done" },
		"failed":   func(n *corev1.Node) { n.Annotations[v1alpha1.AnnotationFailed] = "true" },
		"cordon":   func(n *corev1.Node) { n.Spec.Unschedulable = true },
		"notready": func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse },
	} {
		n := base.DeepCopy()
		mutate(n)
		if !changed(&base, n) {
			t.Errorf("a change of the node's %s is ignored", what)
		}
	}
}

// TestUnreachableNeverHealthy: a cluster that could not be read renders
// as unreachable with its error, with no check and nothing that says it
// passes.
func TestUnreachableNeverHealthy(t *testing.T) {
	p, err := newPageTemplates()
	if err != nil {
		t.Fatal(err)
	}
	v := &ClusterView{Name: "lost", Context: "lost", Release: "r1", State: "stable", Error: "dial tcp 127.0.0.1:1: connect: connection refused", Verdict: gate.Unknown,
		// What the cluster showed before it went away must not show.
		Checks: []gate.Check{{Name: gate.KustomizationCheck("operators"), Status: gate.Pass}}}
	var buf bytes.Buffer
	if err := p.cluster(&buf, v); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	for _, want := range []string{"UNREACHABLE", "connection refused", `data-reachable="false"`} {
		if !strings.Contains(html, want) {
			t.Errorf("the card lacks %q:\n%s", want, html)
		}
	}
	for _, bad := range []string{"converged", "st-pass", "flux/Kustomization/operators"} {
		if strings.Contains(html, bad) {
			t.Errorf("the card of an unreachable cluster shows %q:\n%s", bad, html)
		}
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:8080": true, "localhost:1": true, "[::1]:8080": true, ":8080": false, "0.0.0.0:8080": false, "10.0.0.1:80": false, "nonsense": false} {
		if got := IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

// Every kind of the gate's checks shows on the page, in exactly one of its
// two lists: a new kind is never left out.
func TestEveryCheckKindShows(t *testing.T) {
	var checks []gate.Check
	for _, k := range gate.CheckKinds() {
		checks = append(checks, gate.Check{Name: gate.CheckID{Kind: k, Object: "x"}, Status: gate.Fail})
	}
	v := &ClusterView{Checks: checks}
	if got := len(v.GitOpsChecks()) + len(v.OtherChecks()); got != len(checks) {
		t.Errorf("%d checks shown of %d", got, len(checks))
	}
	for _, c := range v.GitOpsChecks() {
		if c.Name.Kind != gate.CheckKustomization && c.Name.Kind != gate.CheckHelmRelease && c.Name.Kind != gate.CheckApplication {
			t.Errorf("%s shown with the GitOps engine's objects", c.Name)
		}
	}
}

// TestCardShowsAdoption: a cluster's card says who runs its GPU driver
// (and that the cluster disagrees with the fleet file, when it does) and
// how many of its GPU nodes are under gpufleet of how many.
func TestCardShowsAdoption(t *testing.T) {
	p, err := newPageTemplates()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		a    gate.Adoption
		want []string
		not  string
	}{
		{gate.Adoption{DriverManagement: "clusterpolicy", LiveDriverManagement: "clusterpolicy", By: gate.AdoptedHeld, Under: 3, Nodes: 4},
			[]string{"driver managed by <b>clusterpolicy</b>;", "3 of 4 GPU nodes under gpufleet (held)", `data-adoption="3/4"`}, "on the cluster"},
		{gate.Adoption{DriverManagement: "nvidiadriver", LiveDriverManagement: "clusterpolicy", By: gate.AdoptedLabelled, Under: 0, Nodes: 6},
			[]string{"by <b class=\"error\">clusterpolicy</b> on the cluster", "0 of 6 GPU nodes under gpufleet (labelled)"}, ""},
	} {
		v := &ClusterView{Name: "c", Reachable: true, Verdict: gate.Fail, Adoption: &tt.a}
		var buf bytes.Buffer
		if err := p.cluster(&buf, v); err != nil {
			t.Fatal(err)
		}
		for _, want := range tt.want {
			if !strings.Contains(buf.String(), want) {
				t.Errorf("the card lacks %q:\n%s", want, buf.String())
			}
		}
		if tt.not != "" && strings.Contains(buf.String(), tt.not) {
			t.Errorf("the card says %q:\n%s", tt.not, buf.String())
		}
	}
}

// TestCardHeadsTheEngine: a cluster's card heads the GitOps engine's
// checks with the engine the fleet file puts it on, and lists them there.
func TestCardHeadsTheEngine(t *testing.T) {
	p, err := newPageTemplates()
	if err != nil {
		t.Fatal(err)
	}
	for engine, want := range map[string]string{gitops.NameArgoCD: "<h4>Argo CD</h4>", gitops.NameFlux: "<h4>Flux</h4>", "": "<h4>Flux</h4>"} {
		v := &ClusterView{Name: "c", Reachable: true, Verdict: gate.Fail, Engine: engine,
			Checks: []gate.Check{{Name: gate.ApplicationCheck("gpu-stack"), Status: gate.Fail, Observed: "OutOfSync"}}}
		var buf bytes.Buffer
		if err := p.cluster(&buf, v); err != nil {
			t.Fatal(err)
		}
		card := buf.String()
		heading := strings.Index(card, want)
		if heading < 0 || !strings.Contains(card[heading:], "argocd/Application/gpu-stack: OutOfSync") {
			t.Errorf("engine %q: the card lacks %q over the Application's check:\n%s", engine, want, card)
		}
	}
}
