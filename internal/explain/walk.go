package explain

import (
	"cmp"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
)

// Walk judges what was read from a cluster against what it should run, link
// by link, and names the link that decides. It is pure: the answer comes
// from its arguments. A link the gate passes (gate.Evaluate) is ok here.
func Walk(f *fleet.Fleet, e gate.Expected, o Observed) *Answer {
	w := &walker{f: f, e: e, o: o, checks: map[gate.CheckID]gate.Check{}}
	w.list = gate.Evaluate(e, o.Observed)
	for _, c := range w.list {
		w.checks[c.Name] = c
	}
	a := &Answer{APIVersion: APIVersion, Kind: Kind, Cluster: e.Cluster, Revision: e.Revision, Chain: []Link{}, Nodes: []Node{}}
	if e.Release != nil {
		a.Release, a.Driver = e.Release.Name, e.Release.Driver
	}
	w.a = a
	gitopsLinksFor(e).links(w)
	w.operators()
	w.controllerLink()
	w.gpuOperator()
	w.driverPods()
	w.rollout()
	w.nodes()
	w.uncovered()
	a.decide()
	return a
}

type walker struct {
	f      *fleet.Fleet
	e      gate.Expected
	o      Observed
	checks map[gate.CheckID]gate.Check
	list   []gate.Check
	a      *Answer
}

func (w *walker) add(l Link) { w.a.Chain = append(w.a.Chain, l) }

// context is the kubeconfig context of the cluster, as the fleet file says.
func (w *walker) context() string {
	if c := w.f.Clusters[w.e.Cluster]; c != nil && c.Context != "" {
		return c.Context
	}
	return w.e.Cluster
}

// stepNotOK says the chain's link of Kustomization name is there and not
// ok: what that step applies (its HelmReleases, NVIDIADrivers, the
// DriverRollout) missing or out of date is then only its consequence.
func (w *walker) stepNotOK(name string) bool {
	for _, l := range w.a.Chain {
		if l.Object.Kind == "Kustomization" && l.Object.Name == name && l.Object.Namespace == fluxNamespace {
			return l.State != OK
		}
	}
	return false
}

// blockedBy marks l blocked when the GitOps engine's object that applies
// its object (the step's Kustomization on Flux, Application gpu-stack on
// Argo CD) has not applied it, saying so.
func (w *walker) blockedBy(l *Link, step string) {
	if l.State != BrokenState {
		return
	}
	if why, ok := gitopsLinksFor(w.e).notApplied(w, step); ok {
		l.State = Blocked
		l.Message += " (" + why + ")"
	}
}

// applyCommand is the command that has the cluster's GitOps engine apply
// step now.
func (w *walker) applyCommand(step string) string { return gitopsLinksFor(w.e).applyCommand(step) }

// passed says whether the gate passed check id.
func (w *walker) passed(id gate.CheckID) (gate.Check, bool) {
	c, ok := w.checks[id]
	return c, ok && c.Status == gate.Pass
}

// failed says the gate made check id and did not pass it.
func (w *walker) failed(id gate.CheckID) bool {
	c, ok := w.checks[id]
	return ok && c.Status != gate.Pass
}

// uncovered adds a link for each check the gate did not pass that no link
// of the chain answers for: explain then never calls converged a cluster
// the gate fails. It is a safety net, not an answer: every kind of check
// has a link of its own (TestEveryFailedCheckHasALink names a kind that
// only this catches).
func (w *walker) uncovered() {
	covered := map[gate.CheckID]bool{}
	for _, l := range w.a.Chain {
		for _, id := range l.Checks {
			covered[id] = true
		}
	}
	for _, c := range w.list {
		if c.Status == gate.Pass || covered[c.Name] {
			continue
		}
		w.add(Link{Step: StepCheck, Object: objectOf(APIVersion, "GateCheck", "", c.Name.String()), State: BrokenState,
			Expected: c.Expected, Observed: c.Observed, Checks: []gate.CheckID{c.Name},
			Message: "the gate fails " + c.Name.String() + ": " + cmp.Or(c.Message, c.Observed),
			Next:    "gpufleet gate --cluster " + w.e.Cluster})
	}
}

// decide sets the verdict, the deciding link and the summary.
func (a *Answer) decide() {
	a.Verdict, a.At = Converged, nil
	if b := a.Broken(); b != nil {
		a.Verdict, a.At = Broken, b
	} else {
		for i := range a.Chain {
			if a.Chain[i].State == InProgress {
				a.Verdict, a.At = Progressing, &a.Chain[i]
				break
			}
		}
	}
	if a.At == nil {
		a.Summary = fmt.Sprintf("%s runs %s (driver %s)%s: every link holds", a.Cluster, a.Release, a.Driver, atRevision(a.Revision))
		return
	}
	what := "broken"
	if a.Verdict == Progressing {
		what = "still progressing"
	}
	a.Summary = fmt.Sprintf("%s: %s at %s %s: %s", a.Cluster, what, a.At.Object.Kind, a.At.Object.ref(), a.At.Message)
}

func atRevision(rev string) string {
	if rev == "" {
		return ""
	}
	return " at " + short(rev)
}

func (o Object) ref() string {
	if o.Namespace != "" {
		return o.Namespace + "/" + o.Name
	}
	return o.Name
}

// condition returns the condition of type t of an unstructured object.
func condition(u *unstructured.Unstructured, t string) *Condition {
	if u == nil {
		return nil
	}
	list, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok || m["type"] != t {
			continue
		}
		c := &Condition{Type: t}
		c.Status, _ = m["status"].(string)
		c.Reason, _ = m["reason"].(string)
		c.Message, _ = m["message"].(string)
		return c
	}
	return nil
}

func suspended(u *unstructured.Unstructured) bool {
	s, _, _ := unstructured.NestedBool(u.Object, "spec", "suspend")
	return s
}

// inProgress says a Flux object is still being reconciled rather than
// failed: Flux marks work under way with Reconciling=True (or has not
// written Ready, or not for this generation yet). A Ready=False without it
// is a failure Flux only retries. kstatus would call both InProgress.
func inProgress(u *unstructured.Unstructured) bool {
	if c := condition(u, "Reconciling"); c != nil && c.Status == "True" {
		return true
	}
	if c := condition(u, "Ready"); c == nil || c.Status == "Unknown" {
		return true
	}
	observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	return observed != u.GetGeneration()
}

func objectOf(apiVersion, kind, ns, name string) Object {
	return Object{APIVersion: apiVersion, Kind: kind, Namespace: ns, Name: name}
}

// objectOfKind names a cluster-scoped object of a kind the gate reads.
func objectOfKind(k gate.ReadKind, name string) Object {
	return objectOf(k.GVK.GroupVersion().String(), k.GVK.Kind, "", name)
}

// short is a revision cut to its commit's first 12 hex digits.
func short(rev string) string {
	if i := strings.LastIndex(rev, ":"); i >= 0 {
		rev = rev[i+1:]
	}
	return rev[:min(12, len(rev))]
}
