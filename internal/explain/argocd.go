package explain

import (
	"cmp"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/render"
)

// A cluster on Argo CD has no GitRepository and no Kustomizations: its
// chain starts at its Applications (render.ArgoCDApps), the root one that
// a person applied (gpufleet bootstrap) and gpu-stack, which applies the
// operators, config and lifecycle steps by sync waves. Each is judged as a
// Kustomization is on Flux: there, syncing by itself, Synced at the
// expected revision with no sync running or failing, and Healthy.

var apiApplication = gate.KindApplication.GVK.GroupVersion().String()

// argoCDLinks are the links of a cluster on Argo CD: its Applications.
type argoCDLinks struct{}

// observe: the gate reads the Applications; nothing more is needed.
func (argoCDLinks) observe(*Observed, gate.Expected, getFunc) error { return nil }

func (argoCDLinks) links(w *walker) { w.applications() }

// notApplied: Application gpu-stack applies every step, each in its wave.
func (argoCDLinks) notApplied(w *walker, step string) (string, bool) {
	if !w.stackNotApplied() {
		return "", false
	}
	return "Application " + render.ArgoCDStackApp + ", which applies it in the " + step + " wave, has not applied the revision", true
}

// applyCommand: a refresh of Application gpu-stack; its automated sync
// then applies what changed.
func (argoCDLinks) applyCommand(string) string {
	return fmt.Sprintf("kubectl -n %s annotate application %s argocd.argoproj.io/refresh=normal --overwrite", gate.ArgoCDNamespace, render.ArgoCDStackApp)
}

// applications judges each Application of the cluster in chain order.
func (w *walker) applications() {
	for _, name := range w.e.Applications {
		l := w.application(name)
		l.Checks = []gate.CheckID{gate.ApplicationCheck(name)}
		w.add(l)
	}
}

func (w *walker) application(name string) Link {
	l := Link{Step: StepApplication, Object: objectOf(apiApplication, "Application", gate.ArgoCDNamespace, name), Expected: "Synced at " + cmp.Or(short(w.e.Revision), "the branch head") + ", Healthy"}
	check, ok := w.passed(gate.ApplicationCheck(name))
	l.Observed = check.Observed
	if ok {
		l.State = OK
		return l
	}
	a := gate.ReadApplication(w.o.Applications[name])
	get := fmt.Sprintf("kubectl -n %s get application %s -o yaml", gate.ArgoCDNamespace, name)
	refresh := fmt.Sprintf("kubectl -n %s annotate application %s argocd.argoproj.io/refresh=normal --overwrite", gate.ArgoCDNamespace, name)
	sync := "argocd app sync " + gate.ArgoCDNamespace + "/" + name
	switch {
	case a == nil:
		l.State, l.Observed = BrokenState, "missing"
		if name == render.ArgoCDRootApp {
			l.Message = fmt.Sprintf("the root Application %s does not exist: gpufleet is not bootstrapped on this cluster's Argo CD (it is applied once by hand, as flux bootstrap is on Flux)", name)
			l.Next = fmt.Sprintf("gpufleet bootstrap %s | kubectl -n %s apply -f -", w.e.Cluster, gate.ArgoCDNamespace)
			return l
		}
		l.Message = fmt.Sprintf("the Application does not exist: the root Application %s applies it from clusters/%s/%s", render.ArgoCDRootApp, w.e.Cluster, render.ArgoCDDir)
		l.Next = "argocd app sync " + gate.ArgoCDNamespace + "/" + render.ArgoCDRootApp
		w.blockedByApp(&l, render.ArgoCDRootApp)
		return l
	case !a.Automated:
		l.Step, l.State, l.Observed = StepSuspended, BrokenState, "automated sync off"
		l.Message = "automated sync is off: Argo CD applies no new revision of it, nor repairs drift, until someone syncs it (render writes it automated: the Application was edited by hand)"
		l.Next = "argocd app set " + gate.ArgoCDNamespace + "/" + name + " --sync-policy automated --self-heal --auto-prune"
		return l
	case comparisonError(a) != "":
		l.State = BrokenState
		l.Message = "Argo CD cannot build what git says for it: " + comparisonError(a)
		l.Next = "argocd app get " + gate.ArgoCDNamespace + "/" + name + " --hard-refresh"
		return l
	case a.InProgress() && a.Operation.Retrying():
		l.Step, l.State = StepSync, BrokenState
		l.Message = fmt.Sprintf("a sync of %s failed and Argo CD retries it (attempt %d, each with the branch's latest commit): %s", short(a.Operation.Revision), a.Operation.RetryCount, a.OperationMessage())
		l.Next = get
		return l
	case a.InProgress():
		l.Step, l.State = StepSync, InProgress
		l.Message = "Argo CD is syncing " + cmp.Or(short(a.Operation.Revision), "it") + ": " + cmp.Or(a.Operation.Message, "a sync is running")
		if r := waitingOn(a); r != "" {
			l.Message += "; waiting for " + r
		}
		l.Next = "argocd app wait " + gate.ArgoCDNamespace + "/" + name
		return l
	case a.Sync != gate.ArgoSynced:
		if a.LastSyncFailed() && gate.RevisionMatches(a.Operation.Revision, a.Revision) {
			l.Step, l.State = StepSync, BrokenState
			l.Message = fmt.Sprintf("the sync of %s failed: %s", short(a.Operation.Revision), a.OperationMessage())
			l.Next = sync
			return l
		}
		l.Step, l.State = StepSync, InProgress
		l.Message = "OutOfSync: Argo CD starts a sync of " + cmp.Or(short(a.Revision), "it") + " by itself"
		l.Next = sync
		return l
	case !gate.RevisionMatches(a.Revision, w.e.Revision):
		l.Step, l.State = StepRevision, BrokenState
		l.Message = fmt.Sprintf("Argo CD has synced %s, not the expected %s: is it pushed to the branch the Application follows? Argo CD looks at it every few minutes, at once on a refresh", cmp.Or(short(a.Revision), "nothing"), short(w.e.Revision))
		l.Next = refresh
		if name != render.ArgoCDRootApp && w.appNotOK(render.ArgoCDRootApp) {
			l.State = Blocked
		}
		return l
	default:
		l.Step = StepHealthCheck
		l.State = BrokenState
		if a.Health == gate.ArgoProgressing {
			l.State = InProgress
		}
		l.Message = "health " + cmp.Or(a.Health, "unknown")
		r, ok := firstUnhealthy(a)
		if ok {
			r.Message = cmp.Or(r.Message, w.stateOf(r))
			l.Message += ": " + r.Ref() + " is " + r.Health
			if r.Message != "" {
				l.Message += ": " + r.Message
			}
			l.Next = describe(r)
		} else {
			if a.HealthMessage != "" {
				l.Message += ": " + a.HealthMessage
			}
			l.Next = get
		}
		return l
	}
}

// blockedByApp marks l blocked when Application app, which applies its
// object, is not ok.
func (w *walker) blockedByApp(l *Link, app string) {
	if l.State == BrokenState && w.appNotOK(app) {
		l.State = Blocked
		l.Message += " (Application " + app + ", which applies it, is not ok)"
	}
}

// appNotOK says the chain's link of Application name is there and not ok.
func (w *walker) appNotOK(name string) bool {
	for _, l := range w.a.Chain {
		if l.Object.Kind == "Application" && l.Object.Name == name {
			return l.State != OK
		}
	}
	return false
}

// stackNotApplied says Application gpu-stack has not applied what git
// says: missing, not at the revision, or its sync is running or failing.
// Its health is not part of it: an object unhealthy on the cluster was
// applied, and its own link says what is wrong with it.
func (w *walker) stackNotApplied() bool {
	for _, l := range w.a.Chain {
		if l.Object.Kind == "Application" && l.Object.Name == render.ArgoCDStackApp {
			return l.State != OK && l.Step != StepHealthCheck
		}
	}
	return false
}

// comparisonError is what an Application's ComparisonError (or
// InvalidSpecError) condition says: Argo CD could not fetch the repository
// or build the folder.
func comparisonError(a *gate.Application) string {
	for _, c := range a.Conditions {
		if strings.HasPrefix(c, "ComparisonError: ") || strings.HasPrefix(c, "InvalidSpecError: ") {
			return c
		}
	}
	return ""
}

// waitingOn names the first resource a running sync waits for: not healthy
// yet, in the lowest wave.
func waitingOn(a *gate.Application) string {
	r, ok := firstUnhealthy(a)
	if !ok {
		return ""
	}
	s := r.Ref() + " (" + cmp.Or(r.Health, r.Sync)
	if r.Message != "" {
		s += ": " + r.Message
	}
	return s + ")"
}

// stateOf is what the objects explain read say of resource r, an object
// Argo CD finds unhealthy: the DriverRollout's stopping condition, the GPU
// Operator's state of an NVIDIADriver or the ClusterPolicy.
func (w *walker) stateOf(r gate.ArgoResource) string {
	switch {
	case r.Kind == "DriverRollout" && w.o.Rollout != nil && w.o.Rollout.Name == r.Name:
		for _, c := range w.o.Rollout.Status.Conditions {
			if (c.Type == v1alpha1.ConditionStalled || c.Type == v1alpha1.ConditionCompletedWithFailures) && c.Status == metav1.ConditionTrue {
				return c.Type + ": " + c.Message
			}
		}
		return "phase " + cmp.Or(string(w.o.Rollout.Status.Phase), "Pending")
	case r.Kind == "NVIDIADriver" && w.o.NVIDIADrivers[r.Name] != nil:
		return operatorState(w.o.NVIDIADrivers[r.Name])
	case r.Kind == "ClusterPolicy" && w.o.ClusterPolicy != nil:
		return operatorState(w.o.ClusterPolicy)
	}
	return ""
}

// operatorState is a GPU Operator object's state and what its conditions
// say of it.
func operatorState(u *unstructured.Unstructured) string {
	state, _, _ := unstructured.NestedString(u.Object, "status", "state")
	return "state " + cmp.Or(state, "unset") + stateDetail(stateCondition(u))
}

// firstUnhealthy is the resource of the lowest sync wave whose health is
// not Healthy, Degraded before Progressing; where Argo CD keeps resource
// health out of status.resources (its default), the first resource its
// health message names.
func firstUnhealthy(a *gate.Application) (gate.ArgoResource, bool) {
	var best gate.ArgoResource
	found := false
	rank := func(r gate.ArgoResource) int {
		if r.Health == gate.ArgoDegraded {
			return 0
		}
		return 1
	}
	for _, r := range a.Resources {
		if r.Health == "" || r.Health == gate.ArgoHealthy {
			continue
		}
		if !found || rank(r) < rank(best) || rank(r) == rank(best) && r.Wave < best.Wave {
			best, found = r, true
		}
	}
	if !found && len(a.HealthCauses) > 0 {
		return a.HealthCauses[0], true
	}
	return best, found
}

// describe is the kubectl command that shows resource r.
func describe(r gate.ArgoResource) string {
	kind := strings.ToLower(r.Kind)
	if r.Group != "" {
		kind += "." + r.Group
	}
	if r.Namespace != "" {
		return fmt.Sprintf("kubectl -n %s describe %s %s", r.Namespace, kind, r.Name)
	}
	return fmt.Sprintf("kubectl describe %s %s", kind, r.Name)
}
