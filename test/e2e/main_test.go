package e2e

import (
	"os"
	"testing"

	"github.com/gpufleet/gpufleet/internal/secrets/sopstest"
)

// TestMain sets, once for the process, what the suite's tests would
// otherwise set each for itself: its tests run in parallel (each on a
// world of its own: the testbed gives every process its own ports and
// temporary folders), and a parallel test may not change the environment.
func TestMain(m *testing.M) {
	sopstest.Setenv()
	os.Exit(m.Run())
}
