package gate

import (
	"os"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate/argotest"
	"github.com/gpufleet/gpufleet/internal/gitops"
)

func TestApplicationReady(t *testing.T) {
	other := "fedcba9876543210fedcba9876543210fedcba98"
	tests := []struct {
		name     string
		app      *unstructured.Unstructured
		ok       bool
		observed string
		msg      string
	}{
		{"synced and healthy", argotest.Application("gpu-stack", rev), true, "Synced at 0123456789ab, Healthy", ""},
		{"missing", nil, false, "missing", "has the cluster's root Application been applied (gpufleet bootstrap)"},
		{"automated sync off", argotest.Application("gpu-stack", rev, argotest.Manual()), false, "Synced at 0123456789ab, Healthy", "automated sync is off"},
		{"synced, at another revision", argotest.Application("gpu-stack", other), false, "Synced at fedcba987654, Healthy", "Argo CD has synced fedcba987654, not the expected 0123456789ab yet"},
		{"out of sync", argotest.Application("gpu-stack", rev, argotest.Sync("OutOfSync", rev)), false, "OutOfSync at 0123456789ab, Healthy", "Argo CD finds it OutOfSync"},
		{"out of sync, the manifests cannot be built", argotest.Application("gpu-stack", rev, argotest.Sync("Unknown", rev), argotest.Condition("ComparisonError", "kustomize build failed")), false, "Unknown at 0123456789ab, Healthy", "ComparisonError: kustomize build failed"},
		{"a sync running", argotest.Application("gpu-stack", rev, argotest.Operation("Running", "waiting for healthy state of nvidia.com/NVIDIADriver/h100-580-95-05", rev, 0, false)), false, "Synced at 0123456789ab, Healthy, syncing", "a sync is in progress"},
		{"a sync failed, retried", argotest.Application("gpu-stack", rev, argotest.Sync("OutOfSync", rev), argotest.Operation("Running", "one or more objects failed to apply. Retrying attempt #2", rev, 2, true, [5]string{"NVIDIADriver", "", "h100-x", "SyncFailed", `NVIDIADriver.nvidia.com "h100-x" is invalid: spec.driverType: Unsupported value: "gpu"`})), false, "OutOfSync at 0123456789ab, Healthy, syncing", `(NVIDIADriver/h100-x: NVIDIADriver.nvidia.com "h100-x" is invalid`},
		{"out of sync after a failed sync", argotest.Application("gpu-stack", rev, argotest.Sync("OutOfSync", rev), argotest.Operation("Failed", "one or more objects failed to apply", rev, 0, true)), false, "OutOfSync at 0123456789ab, Healthy", "the last sync failed: one or more objects failed to apply"},
		{"degraded", argotest.Application("gpu-stack", rev, argotest.Health("Degraded", "DriverRollout/r2: Stalled: the canary failed")), false, "Synced at 0123456789ab, Degraded", "health Degraded: DriverRollout/r2: Stalled: the canary failed"},
		{"progressing, the resource named", argotest.Application("gpu-stack", rev, argotest.Health("Progressing", ""), argotest.Resource("apps", "Deployment", "gpu-operator", "gpu-operator", "Synced", "Progressing", "Waiting for rollout to finish", 0)), false, "Synced at 0123456789ab, Progressing", "health Progressing: Deployment/gpu-operator/gpu-operator Progressing Waiting for rollout to finish"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, observed, msg := applicationReady(tt.app, rev)
			if ok != tt.ok || observed != tt.observed || !strings.Contains(msg, tt.msg) || tt.ok && msg != "" {
				t.Errorf("got %t %q %q; want %t %q and a message with %q", ok, observed, msg, tt.ok, tt.observed, tt.msg)
			}
		})
	}
}

func TestRevisionMatches(t *testing.T) {
	for _, tt := range []struct {
		got, want string
		ok        bool
	}{
		{rev, rev, true},
		{rev, rev[:12], true},
		{rev, "main@sha1:" + rev, true},
		{rev, "", true},
		{rev, "fedcba98", false},
		{"", rev, false},
	} {
		if RevisionMatches(tt.got, tt.want) != tt.ok {
			t.Errorf("RevisionMatches(%q, %q) = %t", tt.got, tt.want, !tt.ok)
		}
	}
}

// TestExpectArgoCD: a cluster on Argo CD is judged by its Applications, not
// by Kustomizations; everything else the gate checks is the same as on a
// Flux cluster of the same fleet.
func TestExpectArgoCD(t *testing.T) {
	argo, flux := argoExpect(t, "argocd"), argoExpect(t, "flux")
	if argo.Engine != gitops.ArgoCD || flux.Engine != gitops.Flux {
		t.Errorf("engines: %v and %v, want argocd and flux as the fleet file says", argo.Engine, flux.Engine)
	}
	if len(argo.Kustomizations) != 0 || !slices.Equal(argo.Applications, []string{"gpufleet", "gpu-stack"}) {
		t.Errorf("Argo CD cluster: Kustomizations %v, Applications %v", argo.Kustomizations, argo.Applications)
	}
	if len(flux.Applications) != 0 || !slices.Equal(flux.Kustomizations, []string{"operators", "config", "lifecycle"}) {
		t.Errorf("Flux cluster: Kustomizations %v, Applications %v", flux.Kustomizations, flux.Applications)
	}
	if slices.Contains(Reads(argo), KindKustomization) || !slices.Contains(Reads(argo), KindApplication) {
		t.Errorf("reads on Argo CD: %v", Reads(argo))
	}
	if slices.Contains(Reads(flux), KindApplication) {
		t.Errorf("reads on Flux: %v", Reads(flux))
	}
	names := func(e Expected) []string {
		var out []string
		for _, c := range Evaluate(e, Observed{}) {
			if !c.Name.Kind.GitOps() {
				out = append(out, c.Name.String())
			}
		}
		return out
	}
	// The rest of the checks, named the same way on both engines.
	if a, b := names(argo), names(flux); !slices.Equal(a, b) {
		t.Errorf("the checks beside the GitOps engine's differ:\nArgo CD %v\nFlux    %v", a, b)
	}
	o := Observed{Applications: map[string]*unstructured.Unstructured{}}
	for _, a := range argo.Applications {
		o.Applications[a] = argotest.Application(a, rev)
	}
	for _, c := range Evaluate(argo, o) {
		if c.Name.Kind == CheckApplication && c.Status != Pass {
			t.Errorf("%s: %s", c.Name, c.Message)
		}
	}
}

// argoExpect is what the gate expects of cluster stg of
// render/testdata/argocd/fleet.toml with engine (argocd, as the file says,
// or flux).
func argoExpect(t *testing.T, engine string) Expected {
	t.Helper()
	b, err := os.ReadFile("../render/testdata/argocd/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(b), `engine = "argocd"`, `engine = "`+engine+`"`, 1)
	f, err := fleet.Parse("fleet.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return Expect(f, "stg", rev)
}
