package imageautomation

import (
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/internal/render"
)

// TestFleetVariantRenders checks, without the testbed, that the fleet
// variant the other tests use renders what they rely on: images in the test
// registry, per-environment markers and policies, and the alert URL.
func TestFleetVariantRenders(t *testing.T) {
	f := loadFleetVariant(t, "127.0.0.1:5000", "http://127.0.0.1:6000/flux")
	out, err := render.Render(f)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"infrastructure/image-automation/staging/imagerepository-vllm.yaml": "image: 127.0.0.1:5000/vllm/vllm-openai\n",
		"infrastructure/image-automation/prod/imagepolicy-vllm.yaml":        "range: '" + prodVLLMRange + "'",
		"infrastructure/image-automation/staging/imagepolicy-vllm.yaml":     "range: '>=0.8.0 <0.9.0'",
		"apps/prod/chat/kustomization.yaml":                                 `newTag: 0.6.5 # {"$imagepolicy": "flux-system:chat-prod:tag"}`,
		"apps/staging/tei-rerank/kustomization.yaml":                        "name: 127.0.0.1:5000/huggingface/text-embeddings-inference\n",
		"infrastructure/configs/provider.yaml":                              "address: http://127.0.0.1:6000/flux\n",
	} {
		if got := string(out.Files[path]); !strings.Contains(got, want) {
			t.Errorf("%s does not contain %q:\n%s", path, want, got)
		}
	}
}
