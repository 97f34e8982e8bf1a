package dashboard

import (
	"cmp"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/gitops"
	"github.com/gpufleet/gpufleet/internal/planner"
	"github.com/gpufleet/gpufleet/internal/promote"
)

// ClusterView is what the page shows of one cluster.
type ClusterView struct {
	Name    string `json:"name"`
	Wave    string `json:"wave"`
	Context string `json:"context"`
	// Engine is the cluster's GitOps engine, as the fleet file says: its
	// name there (gitops.Engine.Name).
	Engine string `json:"engine"`
	// Release and State are promote's (`gpufleet status`): the release
	// the fleet file gives the cluster and where the promotion has it.
	Release string `json:"release"`
	State   string `json:"state"`
	// Waiting are the promotion's waits that name this cluster (the
	// approval of its canary nodes), in status's words.
	Waiting []string `json:"waiting,omitempty"`
	// Reachable is false when the cluster could not be read: Error says
	// why, and nothing below is current.
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	// Warning says the view may be stale although the cluster answers.
	Warning string `json:"warning,omitempty"`
	// Read is when the view was built from the cluster; Since is when the
	// cluster was last reachable (zero: never).
	Read      time.Time `json:"read"`
	LastReach time.Time `json:"lastReachable,omitzero"`
	// Verdict and Gate are the gate's: its verdict and status's GATE
	// column ("fail (nodes/h100/driver, ...)").
	Verdict gate.Status  `json:"verdict"`
	Gate    string       `json:"gate"`
	Checks  []gate.Check `json:"checks,omitempty"`
	// Adoption is where the cluster stands in coming under gpufleet (who
	// runs its driver, how many GPU nodes gpufleet moves), as `gpufleet
	// status --live` shows it.
	Adoption *gate.Adoption `json:"adoption,omitempty"`
	Rollout  *RolloutView   `json:"rollout,omitempty"`
	// Explanation is the explain library's answer for a cluster that has
	// not converged, when the dashboard has one.
	Explanation *Explanation `json:"explanation,omitempty"`
	ExplainErr  string       `json:"explainError,omitempty"`
}

// Converged says the gate passes the cluster.
func (v *ClusterView) Converged() bool { return v.Reachable && v.Verdict == gate.Pass }

// EngineName is the cluster's GitOps engine as the page heads its checks.
func (v *ClusterView) EngineName() string {
	return gitops.Or(gitops.For(v.Engine)).Title()
}

// GitOpsChecks are the gate's checks of the GitOps engine's objects (Flux
// Kustomizations and HelmReleases, Argo CD Applications): their readiness
// at the expected revision.
func (v *ClusterView) GitOpsChecks() []gate.Check {
	return v.checksWhere(func(k gate.CheckKind) bool { return k.GitOps() })
}

// OtherChecks are the rest of the gate's checks: every kind the page has
// no place of its own for shows here, so a new kind is never left out.
func (v *ClusterView) OtherChecks() []gate.Check {
	return v.checksWhere(func(k gate.CheckKind) bool { return !k.GitOps() })
}

func (v *ClusterView) checksWhere(in func(gate.CheckKind) bool) []gate.Check {
	var out []gate.Check
	for _, c := range v.Checks {
		if in(c.Name.Kind) {
			out = append(out, c)
		}
	}
	return out
}

// RolloutView is the cluster's DriverRollout.
type RolloutView struct {
	Name string `json:"name"`
	// Found is false when the cluster has no such DriverRollout (yet).
	Found        bool   `json:"found"`
	Target       string `json:"target"`
	Phase        string `json:"phase"`
	Done         int32  `json:"done"`
	Total        int32  `json:"total"`
	BudgetUsed   int32  `json:"budgetUsed"`
	BudgetTotal  int32  `json:"budgetTotal"`
	Canary       string `json:"canary,omitempty"`
	Paused       bool   `json:"paused,omitempty"`
	Aborted      bool   `json:"abort,omitempty"`
	Approval     string `json:"approval,omitempty"`
	WindowOpen   bool   `json:"windowOpen"`
	WindowReason string `json:"windowReason,omitempty"`
	// WindowChange is when the window next opens (closed) or closes
	// (open); zero when it never changes (no windows, no freezes).
	WindowChange time.Time `json:"windowChange,omitzero"`
	// Conditions are the rollout's True conditions but Ready, each
	// "Type: message".
	Conditions []string   `json:"conditions,omitempty"`
	Nodes      []NodeView `json:"nodes"`
}

// NodeView is one node of the rollout and the phases it went through
// while the dashboard watched.
type NodeView struct {
	Name          string    `json:"name"`
	Phase         string    `json:"phase"`
	Since         time.Time `json:"since,omitzero"`
	Failed        bool      `json:"failed,omitempty"`
	AdminCordoned bool      `json:"adminCordoned,omitempty"`
	Ready         bool      `json:"ready"`
	Driver        string    `json:"driver,omitempty"`
	History       []Segment `json:"history"`
}

// Segment is one phase of a node's timeline.
type Segment struct {
	Phase  string    `json:"phase"`
	Start  time.Time `json:"start"`
	Failed bool      `json:"failed,omitempty"`
}

// phaseNotStarted names a selected node the rollout has not touched.
const phaseNotStarted = "Pending"

// maxSegments bounds each node's remembered timeline.
const maxSegments = 24

// timelines are one cluster's node timelines, in the rollout they were
// drawn for: a new rollout (the next release) starts every timeline
// afresh, so that the Done of the last one does not read as a phase of
// this one. The rebuild loop owns them and no other goroutine touches
// them; views get copies (rolloutView clones each timeline).
type timelines struct {
	rollout string
	nodes   map[string][]Segment
}

// of returns the timelines of rollout, for rolloutView to update in place.
func (t *timelines) of(rollout string) map[string][]Segment {
	if t.nodes == nil || t.rollout != rollout {
		t.rollout, t.nodes = rollout, map[string][]Segment{}
	}
	return t.nodes
}

// rolloutView builds the rollout part of a view from what the gate
// observed. hist is the cluster's node history, updated in place with
// what this read shows; now is the clock for the window.
func rolloutView(e gate.Expected, o gate.Observed, hist map[string][]Segment, now time.Time) *RolloutView {
	rv := &RolloutView{Name: e.Rollout}
	dr := o.Rollout
	if dr == nil {
		return rv
	}
	rv.Found = true
	rv.Target = dr.Spec.TargetVersion
	rv.Phase = string(dr.Status.Phase)
	rv.Done, rv.Total = dr.Status.Nodes.Done, dr.Status.Total
	rv.BudgetUsed, rv.BudgetTotal = dr.Status.BudgetUsed, dr.Spec.FailureBudget
	rv.Canary = string(dr.Status.Canary.Result)
	rv.Paused, rv.Aborted, rv.Approval = dr.Spec.Paused, dr.Spec.Abort, dr.Spec.Approval
	// The planner's own calendar: the window the controller obeys.
	cal := planner.NewCalendar(&dr.Spec)
	rv.WindowOpen, rv.WindowReason = cal.Allowed(now)
	if rv.WindowOpen {
		rv.WindowChange = cal.NextClose(now)
	} else if next := cal.NextAllowed(now); next.After(now) {
		rv.WindowChange = next
	}
	for _, c := range dr.Status.Conditions {
		if c.Status == "True" && c.Type != v1alpha1.ConditionReady {
			rv.Conditions = append(rv.Conditions, c.Type+": "+c.Message)
		}
	}
	// The rollout's nodes: those it owns, and those its selector picks
	// that no rollout has taken yet (not started). Nodes another rollout
	// owns are its, not this one's.
	sel, selErr := metav1.LabelSelectorAsSelector(&dr.Spec.NodeSelector)
	seen := map[string]bool{}
	for i := range o.Nodes {
		n := &o.Nodes[i]
		st := v1alpha1.NodeStateOf(n.Labels, n.Annotations)
		if st.Rollout != dr.Name && (st.Rollout != "" || selErr != nil || !sel.Matches(labels.Set(n.Labels))) {
			continue
		}
		seen[n.Name] = true
		phase := cmp.Or(string(st.Phase), phaseNotStarted)
		start := st.Since
		if start.IsZero() {
			start = now
		}
		h := hist[n.Name]
		if len(h) == 0 || h[len(h)-1].Phase != phase || !h[len(h)-1].Start.Equal(start) {
			h = append(h, Segment{Phase: phase, Start: start, Failed: st.Failed})
			if len(h) > maxSegments {
				h = slices.Delete(h, 0, len(h)-maxSegments)
			}
			hist[n.Name] = h
		}
		rv.Nodes = append(rv.Nodes, NodeView{
			Name: n.Name, Phase: phase, Since: st.Since, Failed: st.Failed, AdminCordoned: st.AdminCordoned,
			Ready: planner.NodeReady(n), Driver: n.Labels[v1alpha1.LabelGFDDriverFull], History: slices.Clone(h),
		})
	}
	for name := range hist {
		if !seen[name] {
			delete(hist, name)
		}
	}
	slices.SortFunc(rv.Nodes, func(a, b NodeView) int { return strings.Compare(a.Name, b.Name) })
	return rv
}

// gateSummary is the GATE column `gpufleet status --live` prints for the
// cluster, by status's own code (promote.Status.AddGate).
func gateSummary(cs promote.ClusterStatus, checks []gate.Check) string {
	st := &promote.Status{Clusters: []promote.ClusterStatus{cs}}
	st.AddGate(&gate.Report{Checks: checks})
	return st.Clusters[0].Gate
}
