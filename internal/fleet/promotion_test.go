package fleet

import (
	"strings"
	"testing"
)

// TestWaveAndClusterNamesMustDiffer: approvals are RELEASE/WAVE and
// RELEASE/CLUSTER, so a wave named like a cluster would make one approval
// name two things. Parse refuses it, giving both positions.
func TestWaveAndClusterNamesMustDiffer(t *testing.T) {
	src := strings.Replace(mustRead(t, "testdata/minimal.toml"), `name = "staging"`, `name = "stg"`, 1)
	_, err := Parse("f.toml", []byte(src))
	want := `f.toml:38:1: waves[0].name: wave "stg" has the name of cluster "stg" (f.toml:11:2): an approval RELEASE/stg would name both; rename the wave or the cluster`
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}
