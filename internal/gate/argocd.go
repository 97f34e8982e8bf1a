package gate

import (
	"cmp"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Argo CD's words for an Application's state (its status.sync.status,
// status.health.status and status.operationState.phase), as the
// application-controller writes them.
const (
	ArgoSynced      = "Synced"
	ArgoHealthy     = "Healthy"
	ArgoDegraded    = "Degraded"
	ArgoProgressing = "Progressing"
	ArgoRunning     = "Running"
	ArgoTerminating = "Terminating"
	ArgoFailed      = "Failed"
	ArgoError       = "Error"
)

// Application is what the gate and explain read of an Argo CD Application:
// the fields of its spec and status that say whether it applied a revision.
type Application struct {
	// Automated: spec.syncPolicy.automated is set and not disabled, so Argo
	// CD applies each new revision by itself.
	Automated bool
	// Sync is status.sync.status (Synced, OutOfSync, Unknown) and Revision
	// the commit it compared against (status.sync.revision).
	Sync, Revision string
	// Health and HealthMessage are status.health: the worst health of the
	// Application's resources, and which.
	Health, HealthMessage string
	// HealthCauses are the resources HealthMessage names ("Caused by
	// group/Kind:namespace/name, …", at most three), each with the
	// Application's health: Argo CD keeps each resource's own health out of
	// status.resources unless told to persist it.
	HealthCauses []ArgoResource
	// Operation is status.operationState: the last (or current) sync.
	Operation *ArgoOperation
	// Conditions are status.conditions: ComparisonError, SyncError,
	// InvalidSpecError…, each "Type: message".
	Conditions []string
	// Resources are the resources of status.resources that are not Synced
	// and Healthy (Health is empty for a kind Argo CD has no health for).
	Resources []ArgoResource
}

// ArgoOperation is an Application's status.operationState.
type ArgoOperation struct {
	// Phase is Running, Terminating, Succeeded, Failed or Error.
	Phase, Message string
	// Revision is the revision the operation syncs (its syncResult's, else
	// the one asked for).
	Revision   string
	RetryCount int64
	// Finished says the operation has a finishedAt: with phase Running,
	// a failed try that Argo CD retries (Retrying).
	Finished bool
	// Failed are the resources of its syncResult that did not sync.
	Failed []ArgoResource
}

// ArgoResource is one resource of an Application, as status.resources or a
// sync result names it.
type ArgoResource struct {
	Group, Kind, Namespace, Name string
	// Sync is Synced or OutOfSync (status.resources), or a sync result's
	// status (SyncFailed…); Health its health; Message what Argo CD said.
	Sync, Health, Message string
	// Wave is the resource's sync wave.
	Wave int64
}

// Ref is the resource as kubectl names it: "Kind/namespace/name".
func (r ArgoResource) Ref() string {
	if r.Namespace != "" {
		return r.Kind + "/" + r.Namespace + "/" + r.Name
	}
	return r.Kind + "/" + r.Name
}

// ReadApplication reads an Application object; nil for nil.
func ReadApplication(u *unstructured.Unstructured) *Application {
	if u == nil {
		return nil
	}
	a := &Application{}
	if auto, ok, _ := unstructured.NestedMap(u.Object, "spec", "syncPolicy", "automated"); ok && auto != nil {
		enabled, set, _ := unstructured.NestedBool(auto, "enabled")
		a.Automated = !set || enabled
	}
	a.Sync, _, _ = unstructured.NestedString(u.Object, "status", "sync", "status")
	a.Revision, _, _ = unstructured.NestedString(u.Object, "status", "sync", "revision")
	a.Health, _, _ = unstructured.NestedString(u.Object, "status", "health", "status")
	a.HealthMessage, _, _ = unstructured.NestedString(u.Object, "status", "health", "message")
	a.HealthCauses = healthCauses(a.HealthMessage, a.Health)
	if op, ok, _ := unstructured.NestedMap(u.Object, "status", "operationState"); ok {
		o := &ArgoOperation{}
		o.Phase, _, _ = unstructured.NestedString(op, "phase")
		o.Message, _, _ = unstructured.NestedString(op, "message")
		o.RetryCount, _, _ = unstructured.NestedInt64(op, "retryCount")
		finished, _, _ := unstructured.NestedString(op, "finishedAt")
		o.Finished = finished != ""
		o.Revision, _, _ = unstructured.NestedString(op, "syncResult", "revision")
		if o.Revision == "" {
			o.Revision, _, _ = unstructured.NestedString(op, "operation", "sync", "revision")
		}
		results, _, _ := unstructured.NestedSlice(op, "syncResult", "resources")
		for _, r := range results {
			res := argoResource(r)
			if res.Sync == "SyncFailed" || (res.Health != "" && res.Health != ArgoHealthy) {
				o.Failed = append(o.Failed, res)
			}
		}
		a.Operation = o
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok {
			t, _ := m["type"].(string)
			msg, _ := m["message"].(string)
			a.Conditions = append(a.Conditions, t+": "+msg)
		}
	}
	resources, _, _ := unstructured.NestedSlice(u.Object, "status", "resources")
	for _, r := range resources {
		res := argoResource(r)
		if res.Sync != ArgoSynced || (res.Health != "" && res.Health != ArgoHealthy) {
			a.Resources = append(a.Resources, res)
		}
	}
	return a
}

// healthCauses reads the resources Argo CD names in an Application's
// health message: "Caused by apps/Deployment:gpu-operator/gpu-operator,
// gpufleet.io/DriverRollout:r2 and 2 more".
func healthCauses(msg, health string) []ArgoResource {
	rest, ok := strings.CutPrefix(msg, "Caused by ")
	if !ok {
		return nil
	}
	rest, _, _ = strings.Cut(rest, " and ")
	var out []ArgoResource
	for part := range strings.SplitSeq(rest, ", ") {
		gk, name, ok := strings.Cut(part, ":")
		if !ok {
			continue
		}
		r := ArgoResource{Kind: gk, Name: name, Health: health}
		if g, k, ok := strings.Cut(gk, "/"); ok {
			r.Group, r.Kind = g, k
		}
		if ns, n, ok := strings.Cut(name, "/"); ok {
			r.Namespace, r.Name = ns, n
		}
		out = append(out, r)
	}
	return out
}

// argoResource reads one entry of status.resources or of a sync result's
// resources; the two name the same fields but for health.
func argoResource(v any) ArgoResource {
	m, _ := v.(map[string]any)
	str := func(k string) string { s, _ := m[k].(string); return s }
	r := ArgoResource{Group: str("group"), Kind: str("kind"), Namespace: str("namespace"), Name: str("name"), Sync: str("status"), Message: str("message")}
	if h, ok := m["health"].(map[string]any); ok {
		r.Health, _ = h["status"].(string)
		if msg, _ := h["message"].(string); msg != "" && r.Message == "" {
			r.Message = msg
		}
	}
	switch w := m["syncWave"].(type) {
	case int64:
		r.Wave = w
	case float64:
		r.Wave = int64(w)
	}
	return r
}

// Retrying says the operation failed and Argo CD will try it again: it
// stays Running, with the time the failed try finished.
func (o *ArgoOperation) Retrying() bool {
	return o != nil && o.Phase == ArgoRunning && o.Finished && o.RetryCount > 0
}

// InProgress says a sync is running (or being ended): Argo CD runs one
// operation at a time, so a new revision waits for it.
func (a *Application) InProgress() bool {
	return a.Operation != nil && (a.Operation.Phase == ArgoRunning || a.Operation.Phase == ArgoTerminating)
}

// LastSyncFailed says the last sync operation ended in failure (and is not
// being retried).
func (a *Application) LastSyncFailed() bool {
	return a.Operation != nil && (a.Operation.Phase == ArgoFailed || a.Operation.Phase == ArgoError)
}

// RevisionMatches says Argo CD's revision (a bare commit) is the expected
// one, which may be a bare commit, a short one or Flux's "main@sha1:…".
func RevisionMatches(got, want string) bool {
	if want == "" {
		return true
	}
	if i := strings.LastIndex(want, ":"); i >= 0 {
		want = want[i+1:]
	}
	return got != "" && strings.HasPrefix(got, want)
}

// applicationReady judges an Argo CD Application as the Kustomization
// check judges a Kustomization: it exists, Argo CD syncs it by itself, no
// sync is running, it is Synced to the expected revision and Healthy (what
// a Kustomization's Ready at that revision says on Flux).
func applicationReady(u *unstructured.Unstructured, revision string) (bool, string, string) {
	a := ReadApplication(u)
	if a == nil {
		return false, "missing", "the Application does not exist: has the cluster's root Application been applied (gpufleet bootstrap), and has Argo CD synced it?"
	}
	observed := fmt.Sprintf("%s at %s, %s", cmp.Or(a.Sync, "Unknown"), shortRev(a.Revision), cmp.Or(a.Health, "no health"))
	if a.InProgress() {
		observed += ", syncing"
	}
	switch {
	case !a.Automated:
		return false, observed, "automated sync is off: Argo CD applies no new revision until someone syncs it by hand"
	case a.InProgress():
		return false, observed, "a sync is in progress (Argo CD applies the next revision after it): " + a.OperationMessage()
	case a.Sync != ArgoSynced:
		msg := "Argo CD finds it " + cmp.Or(a.Sync, "Unknown")
		if len(a.Conditions) > 0 {
			msg += ": " + strings.Join(a.Conditions, "; ")
		} else if a.LastSyncFailed() {
			msg += "; the last sync failed: " + a.OperationMessage()
		}
		return false, observed, msg
	case !RevisionMatches(a.Revision, revision):
		return false, observed, fmt.Sprintf("Argo CD has synced %s, not the expected %s yet", shortRev(a.Revision), shortRev(revision))
	case a.Health != ArgoHealthy:
		msg := "health " + cmp.Or(a.Health, "unknown")
		if a.HealthMessage != "" {
			msg += ": " + a.HealthMessage
		} else if len(a.Resources) > 0 {
			msg += ": " + a.Resources[0].Ref() + " " + cmp.Or(a.Resources[0].Health, a.Resources[0].Sync) + " " + a.Resources[0].Message
		}
		return false, observed, strings.TrimSpace(msg)
	}
	return true, observed, ""
}

// OperationMessage is what the last sync said, with the first resource it
// failed on and why.
func (a *Application) OperationMessage() string {
	if a.Operation == nil {
		return ""
	}
	msg := a.Operation.Message
	if len(a.Operation.Failed) > 0 {
		r := a.Operation.Failed[0]
		msg += " (" + r.Ref() + ": " + cmp.Or(r.Message, cmp.Or(r.Health, r.Sync)) + ")"
	}
	return msg
}
