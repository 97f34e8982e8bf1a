package e2e

import (
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/internal/testworld/lab"
)

// TestFleetStory plays a release's whole life on two clusters (lab's
// FleetStory, the story gpufleet-lab demo plays): render and first sync,
// drift repair, a good release promoted from staging to prod (with a git
// revert on the way), and a drill release that fails at the staging canary
// node, is refused promotion and is aborted; then the serving stack with
// its SOPS-encrypted Secrets. Each step is a subtest of its name.
func TestFleetStory(t *testing.T) {
	t.Parallel()
	began := time.Now()
	o := lab.StoryOptions()
	o.StackCRDs = true
	w := newWorld(t, o)
	t.Logf("testbed, controllers and node agents up in %s", since(began))
	if !w.StackCRDs {
		t.Logf("serving stack skipped: the Flux image automation and notification CRDs are not in the testbed folder (make testbin)")
	}
	s := &story{t: t, w: w}
	s.play(lab.FleetStory(w.StackCRDs))
	t.Logf("the story took %s", since(began))
}
