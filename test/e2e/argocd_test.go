package e2e

import (
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/internal/testworld/lab"
)

// TestArgoCDStory plays lab's ArgoCDStory: staging on the real Argo CD
// (application-controller, repo-server, redis) and prod on Flux, the real
// GPU Operator in both. Render and bootstrap, the steps applied by sync
// waves, drift repaired by self-heal, a good release started, reverted with
// git, approved into prod and made stable, the drill stopped at staging's
// canary and rolled back, aborted; the gate judging both clusters with the
// same checks. Each step is a subtest of its name.
func TestArgoCDStory(t *testing.T) {
	t.Parallel()
	began := time.Now()
	w := newWorld(t, lab.ArgoCDStoryOptions())
	t.Logf("testbed, Argo CD, Flux, controllers and node agents up in %s", since(began))
	s := &story{t: t, w: w}
	s.play(lab.ArgoCDStory())
	t.Logf("the story took %s", since(began))
}
