package fleettest_test

import (
	"testing"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/fleet/fleettest"
)

// TestSyntheticFleetIsValid keeps the generator in step with the example
// fleet file and the validation rules: a benchmark of an invalid fleet
// would measure only the error path.
func TestSyntheticFleetIsValid(t *testing.T) {
	for _, o := range []fleettest.Options{{Clusters: 120}, {Clusters: 120, Rollout: true}, {Clusters: 7, WaveSize: 3}} {
		f, err := fleet.Parse("fleet.toml", fleettest.Fleet(t, o))
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		if len(f.Clusters) != o.Clusters {
			t.Errorf("%+v: %d clusters", o, len(f.Clusters))
		}
		pools := 0
		for _, c := range f.Clusters {
			pools += len(c.Pools)
		}
		if pools != o.Clusters*fleettest.PoolsPerCluster {
			t.Errorf("%+v: %d pools", o, pools)
		}
		if f.Stack == nil || len(f.Stack.Services) == 0 {
			t.Errorf("%+v: no serving stack", o)
		}
		if (f.Promotion.Rollout != nil) != o.Rollout {
			t.Errorf("%+v: rollout %+v", o, f.Promotion.Rollout)
		}
		size := o.WaveSize
		if size == 0 {
			size = 50
		}
		for _, w := range f.Waves {
			if len(w.Clusters) > size {
				t.Errorf("%+v: wave %s has %d clusters", o, w.Name, len(w.Clusters))
			}
		}
	}
}
