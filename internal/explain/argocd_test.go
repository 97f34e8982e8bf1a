package explain

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/gate/argotest"
)

// TestWalkArgoCD: on a cluster on Argo CD the chain starts at its
// Applications, and explain names the first broken link with Argo CD's
// words and the command that moves it.
func TestWalkArgoCD(t *testing.T) {
	f := fleetVariant(t, argoFleet, false, true)
	e := gate.Expect(f, "stg", rev)
	other := "fedcba9876543210fedcba9876543210fedcba98"
	tests := []struct {
		name string
		app  *unstructured.Unstructured
		// stalled: the DriverRollout is Stalled.
		stalled bool
		verdict Verdict
		step    Step
		msg     string
		next    string
	}{
		{
			name:    "not synced: Argo CD is at an older revision",
			app:     argotest.Application("gpu-stack", other),
			verdict: Broken, step: StepRevision,
			msg:  "Argo CD has synced fedcba987654, not the expected 0123456789ab",
			next: "kubectl -n argocd annotate application gpu-stack argocd.argoproj.io/refresh=normal --overwrite",
		},
		{
			name: "a health check fails on the DriverRollout, its health in status.resources",
			app: argotest.Application("gpu-stack", rev, argotest.Health("Degraded", ""),
				argotest.Resource("apps", "Deployment", "gpu-operator", "gpu-operator", "Synced", "Healthy", "", 0),
				argotest.Resource("gpufleet.io", "DriverRollout", "", e.Rollout, "Synced", "Degraded", "Stalled: the canary node h100-0 failed", 2)),
			verdict: Broken, step: StepHealthCheck,
			msg:  "health Degraded: DriverRollout/r2 is Degraded: Stalled: the canary node h100-0 failed",
			next: "kubectl describe driverrollout.gpufleet.io r2",
		},
		{
			// Argo CD's default: resource health is kept out of
			// status.resources; the message names the cause, and explain
			// says what the DriverRollout it read says.
			name: "a health check fails on the DriverRollout, named by the health message",
			app: argotest.Application("gpu-stack", rev, argotest.Health("Degraded", "Caused by gpufleet.io/DriverRollout:r2"),
				argotest.Resource("gpufleet.io", "DriverRollout", "", e.Rollout, "Synced", "", "", 2)),
			stalled: true,
			verdict: Broken, step: StepHealthCheck,
			msg:  "health Degraded: DriverRollout/r2 is Degraded: Stalled: 1 node failed, more than the failure budget of 0",
			next: "kubectl describe driverrollout.gpufleet.io r2",
		},
		{
			name: "a sync failed on an invalid object",
			app: argotest.Application("gpu-stack", rev, argotest.Sync("OutOfSync", rev),
				argotest.Operation("Running", "one or more objects failed to apply, reason: NVIDIADriver.nvidia.com \"h100-580-95-05\" is invalid. Retrying attempt #3 at 10:01:05.", rev, 3, true,
					[5]string{"NVIDIADriver", "", "h100-580-95-05", "SyncFailed", `NVIDIADriver.nvidia.com "h100-580-95-05" is invalid: spec.driverType: Unsupported value: "gpu"`})),
			verdict: Broken, step: StepSync,
			msg:  `a sync of 0123456789ab failed and Argo CD retries it (attempt 3, each with the branch's latest commit): one or more objects failed to apply`,
			next: "kubectl -n argocd get application gpu-stack -o yaml",
		},
		{
			name: "a sync waits on a wave",
			app: argotest.Application("gpu-stack", rev, argotest.Sync("OutOfSync", rev), argotest.Health("Progressing", ""),
				argotest.Operation("Running", "waiting for healthy state of nvidia.com/NVIDIADriver/h100-580-95-05", rev, 0, false),
				argotest.Resource("nvidia.com", "NVIDIADriver", "", "h100-580-95-05", "Synced", "Progressing", "waiting for the GPU Operator to reconcile it", 1)),
			verdict: Progressing, step: StepSync,
			msg:  "waiting for NVIDIADriver/h100-580-95-05 (Progressing: waiting for the GPU Operator to reconcile it)",
			next: "argocd app wait argocd/gpu-stack",
		},
		{
			name:    "the root Application was never applied",
			app:     nil,
			verdict: Broken, step: StepApplication,
			msg:  "the root Application gpufleet does not exist",
			next: "gpufleet bootstrap stg | kubectl -n argocd apply -f -",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := convergedOn(e)
			if tt.stalled {
				o.Rollout.Status.Conditions = append(o.Rollout.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: "BudgetExhausted", Message: "1 node failed, more than the failure budget of 0"})
			}
			if tt.app == nil {
				o.Applications["gpufleet"] = nil
			} else {
				o.Applications[tt.app.GetName()] = tt.app
			}
			a := Walk(f, e, o)
			if a.Verdict != tt.verdict || a.At == nil {
				t.Fatalf("verdict %s at %+v, want %s", a.Verdict, a.At, tt.verdict)
			}
			if a.At.Object.Kind != "Application" || a.At.Step != tt.step || !strings.Contains(a.At.Message, tt.msg) || a.At.Next != tt.next {
				t.Errorf("first link not ok: %s %s/%s (%s): %s\nnext: %s\nwant step %s, a message with %q, next %q",
					a.At.Object.Kind, a.At.Object.Namespace, a.At.Object.Name, a.At.Step, a.At.Message, a.At.Next, tt.step, tt.msg, tt.next)
			}
		})
	}
}

// TestWalkArgoCDConverged: a converged Argo CD cluster reads no Flux
// source, and its Next commands for a missing NVIDIADriver name Argo CD.
func TestWalkArgoCDConverged(t *testing.T) {
	f := fleetVariant(t, argoFleet, false, true)
	e := gate.Expect(f, "stg", rev)
	o := convergedOn(e)
	a := Walk(f, e, o)
	if a.Verdict != Converged {
		t.Fatalf("%s", a.Summary)
	}
	for _, l := range a.Chain {
		if l.Object.Kind == "GitRepository" || l.Object.Kind == "Kustomization" {
			t.Errorf("a Flux link on an Argo CD cluster: %+v", l)
		}
	}
	name := e.NVIDIADrivers[0]
	o.NVIDIADrivers[name] = nil
	a = Walk(f, e, o)
	if a.At == nil || a.At.Object.Name != name || !strings.Contains(a.At.Next, "annotate application gpu-stack") {
		t.Errorf("missing NVIDIADriver: %+v", a.At)
	}
	// While gpu-stack has not applied the revision, the missing object is
	// only its consequence.
	o.Applications["gpu-stack"] = argotest.Application("gpu-stack", "fedcba9876543210fedcba9876543210fedcba98")
	a = Walk(f, e, o)
	for _, l := range a.Chain {
		if l.Object.Name == name && l.State != Blocked {
			t.Errorf("the NVIDIADriver's link is %s while gpu-stack is at an old revision: %s", l.State, l.Message)
		}
	}
}
