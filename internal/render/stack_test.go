package render

import (
	"path"
	"strings"
	"testing"
)

// TestOverlayFileCount checks the point of base + overlays: for N services
// and M environments the stack is N×k base files plus N×M overlay files
// (each holding only its patches), not N×M×k copies.
func TestOverlayFileCount(t *testing.T) {
	out := renderFile(t, exampleFleet)
	const services, envs, k = 8, 2, 3 // k: at most kustomization + deployment + service
	var base, overlays int
	for p := range out.Files {
		switch {
		case strings.HasPrefix(p, "apps/base/"):
			base++
		case strings.HasPrefix(p, "apps/"):
			overlays++
		}
	}
	if base > services*k {
		t.Errorf("base files: %d, want at most %d", base, services*k)
	}
	if overlays != services*envs {
		t.Errorf("overlay files: %d, want exactly %d (one per service and environment)", overlays, services*envs)
	}
	if copies := services * envs * k; base+overlays >= copies {
		t.Errorf("%d files is no better than %d full copies", base+overlays, copies)
	}
}

func TestStackKustomizationsFollowDependencies(t *testing.T) {
	out := renderFile(t, exampleFleet)
	// The gateway waits for the engines placed on its own cluster: vllm on
	// the H100 clusters, the MIG embedders on the A100 one.
	for cluster, deps := range map[string][]string{
		"prod-h100-a": {"app-vllm", "app-qdrant", "infra-configs"},
		"prod-a100":   {"app-tei-embed", "app-tei-rerank", "app-qdrant", "infra-configs"},
	} {
		litellm := string(out.Files["clusters/"+cluster+"/flux-app-litellm.yaml"])
		for _, dep := range deps {
			if !strings.Contains(litellm, "- name: "+dep+"\n") {
				t.Errorf("%s: app-litellm does not depend on %s:\n%s", cluster, dep, litellm)
			}
		}
	}
	// vllm loads a 70B model for 15 minutes: Flux must wait longer than that.
	if vllm := string(out.Files["clusters/prod-h100-a/flux-app-vllm.yaml"]); !strings.Contains(vllm, "timeout: 23m0s") || !strings.Contains(vllm, "- name: config\n") {
		t.Errorf("app-vllm: want timeout 23m (15m start-up + half) and a dependency on the GPU config step:\n%s", vllm)
	}
	// Image automation runs in one cluster per environment.
	var automation []string
	for p := range out.Files {
		if path.Base(p) == "flux-image-automation.yaml" {
			automation = append(automation, path.Dir(p))
		}
	}
	if len(automation) != 2 {
		t.Errorf("image automation in %v, want one cluster per environment (2)", automation)
	}
}

func TestImagePolicyMarkers(t *testing.T) {
	out := renderFile(t, exampleFleet)
	overlay := string(out.Files["apps/staging/vllm/kustomization.yaml"])
	if !strings.Contains(overlay, `newTag: 0.8.4 # {"$imagepolicy": "flux-system:vllm-staging:tag"}`) {
		t.Errorf("the staging overlay lacks the image policy marker:\n%s", overlay)
	}
	policy := string(out.Files["infrastructure/image-automation/staging/imagepolicy-vllm.yaml"])
	if !strings.Contains(policy, "name: vllm-staging") || !strings.Contains(policy, "range: '>=0.8.0 <0.9.0'") {
		t.Errorf("image policy:\n%s", policy)
	}
	auto := string(out.Files["infrastructure/image-automation/prod/imageupdateautomation.yaml"])
	for _, want := range []string{"branch: image-updates/prod", "path: ./apps/prod", "gpufleet.io/environment: prod"} {
		if !strings.Contains(auto, want) {
			t.Errorf("image update automation lacks %q:\n%s", want, auto)
		}
	}
}

// TestNoPlaintextSecret fails if any rendered file is a Secret with data:
// secrets only ever enter the repository encrypted.
func TestNoPlaintextSecret(t *testing.T) {
	for p, b := range renderFile(t, exampleFleet).Files {
		if strings.Contains(string(b), "\nkind: Secret\n") {
			t.Errorf("%s is a Secret written by render", p)
		}
	}
}

// TestAlertSourcesNameNamespaces guards against a wildcard namespace:
// notification-controller compares an event source's namespace with the
// event's exactly, so `namespace: '*'` silently matches no HelmRelease. Each
// namespace that holds HelmReleases must be named (proved against the real
// controller in test/imageautomation).
func TestAlertSourcesNameNamespaces(t *testing.T) {
	alert := string(renderFile(t, exampleFleet).Files["infrastructure/configs/alert.yaml"])
	if strings.Contains(alert, "namespace: '*'") {
		t.Errorf("alert has a wildcard namespace, which matches nothing:\n%s", alert)
	}
	for _, ns := range []string{GPUOperatorNamespace, NetworkOperatorNamespace, "llm-data", "observability"} {
		if !strings.Contains(alert, "  - kind: HelmRelease\n    name: '*'\n    namespace: "+ns+"\n") {
			t.Errorf("alert does not watch the HelmReleases of namespace %s:\n%s", ns, alert)
		}
	}
	if !strings.Contains(alert, "  - kind: Kustomization\n    name: '*'\n") {
		t.Errorf("alert does not watch Kustomizations:\n%s", alert)
	}
}

// TestStackPlacementByGPUNeeds is the class of issue 17: a service is
// rendered only to the clusters of its environment whose pools give it what
// it asks for (GPU product, MIG slice, whole GPUs); elsewhere a Kustomization
// with wait = true would never become Ready.
func TestStackPlacementByGPUNeeds(t *testing.T) {
	out := renderFile(t, exampleFleet)
	for _, tc := range []struct {
		cluster, service string
		placed           bool
	}{
		{"prod-h100-a", "vllm", true},       // H100 whole GPUs
		{"prod-a100", "vllm", false},        // A100 only: no H100
		{"prod-a100", "tei-embed", true},    // all-1g.10gb pool
		{"prod-h100-a", "tei-embed", false}, // no MIG pool
		{"prod-h100-b", "tei-rerank", false},
		{"prod-a100", "qdrant", true}, // no GPU: everywhere
		{"stg-h100", "tei-embed", true},
	} {
		_, got := out.Files["clusters/"+tc.cluster+"/flux-"+AppKustomization(tc.service)+".yaml"]
		if got != tc.placed {
			t.Errorf("%s on %s: placed %v, want %v", tc.service, tc.cluster, got, tc.placed)
		}
	}
}
