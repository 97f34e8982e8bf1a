package testbed

import (
	"slices"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestRegistryPushTags needs no programs: the registry runs in the test.
func TestRegistryPushTags(t *testing.T) {
	reg := StartRegistry()
	defer reg.Close()
	if err := reg.PushTags("vllm/vllm-openai", "0.8.4", "0.9.0-rc.1"); err != nil {
		t.Fatal(err)
	}
	repo, err := name.NewRepository(reg.Image("vllm/vllm-openai"), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	tags, err := remote.List(repo)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(tags)
	if want := []string{"0.8.4", "0.9.0-rc.1"}; !slices.Equal(tags, want) {
		t.Errorf("tags %v, want %v", tags, want)
	}
}
