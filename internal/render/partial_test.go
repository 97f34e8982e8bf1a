package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/fleet/fleettest"
)

// TestSamePlanMeansTheSameFiles: between two promotion states of one fleet
// file, a cluster SamePlan calls the same renders byte for byte the same,
// and so does everything outside clusters/: rendering only the other
// clusters (as `plan` does) misses nothing.
func TestSamePlanMeansTheSameFiles(t *testing.T) {
	f, err := fleet.Parse("fleet.toml", fleettest.Fleet(t, fleettest.Options{Clusters: 12, WaveSize: 3}))
	if err != nil {
		t.Fatal(err)
	}
	next, last := fleettest.Next, fleettest.WaveName(len(f.Waves)-1)
	w1, w2 := f.Waves[1], f.Waves[2]
	roll := func(wave, stage string) *fleet.Rollout {
		return &fleet.Rollout{Release: next, Wave: wave, Stage: stage}
	}
	states := []fleet.Promotion{
		{Stable: fleettest.Stable},
		{Stable: fleettest.Stable, Rollout: roll(f.Waves[0].Name, fleet.StageAll)},
		{Stable: fleettest.Stable, Rollout: roll(w1.Name, fleet.StageCanary)},
		{Stable: fleettest.Stable, Rollout: roll(w1.Name, fleet.StageCanary), Approved: []string{next + "/" + w1.Canary}},
		{Stable: fleettest.Stable, Rollout: roll(w2.Name, fleet.StageAll), Approved: []string{next + "/" + w1.Name, next + "/" + w2.Name}},
		{Stable: fleettest.Stable, Rollout: roll(w2.Name, fleet.StageAll), Paused: true},
		{Stable: fleettest.Stable, Rollout: &fleet.Rollout{Release: next, Wave: w2.Name, Stage: fleet.StageAll, Aborted: true}},
		{Stable: fleettest.Stable, Rollout: roll(last, fleet.StageAll)},
		{Stable: next},
	}
	renders := make([]*Output, len(states))
	fleets := make([]*fleet.Fleet, len(states))
	for i, p := range states {
		fleets[i] = f.WithPromotion(p)
		if renders[i], err = Render(fleets[i]); err != nil {
			t.Fatalf("state %d: %v", i, err)
		}
	}
	reached := 0
	for i := range states {
		for j := range states {
			for _, c := range f.ClusterNames() {
				same := SamePlan(fleets[i], fleets[j], c)
				if !same {
					reached++
					continue
				}
				if diff := differing(renders[i], renders[j], ClusterDir(c)+"/"); diff != "" {
					t.Errorf("states %d and %d: SamePlan says %s renders the same, but %s differs", i, j, c, diff)
				}
			}
			if diff := differingOutside(renders[i], renders[j], "clusters/"); diff != "" {
				t.Errorf("states %d and %d: %s differs outside clusters/", i, j, diff)
			}
		}
	}
	if reached == 0 {
		t.Fatal("no promotion step reached any cluster: the test compares nothing")
	}
}

// differing names a file under prefix that a and b render differently.
func differing(a, b *Output, prefix string) string {
	for p, x := range a.Files {
		if strings.HasPrefix(p, prefix) && !bytes.Equal(x, b.Files[p]) {
			return p
		}
	}
	for p := range b.Files {
		if _, ok := a.Files[p]; strings.HasPrefix(p, prefix) && !ok {
			return p
		}
	}
	return ""
}

func differingOutside(a, b *Output, prefix string) string {
	for p, x := range a.Files {
		if !strings.HasPrefix(p, prefix) && !bytes.Equal(x, b.Files[p]) {
			return p
		}
	}
	for p := range b.Files {
		if _, ok := a.Files[p]; !strings.HasPrefix(p, prefix) && !ok {
			return p
		}
	}
	return ""
}
