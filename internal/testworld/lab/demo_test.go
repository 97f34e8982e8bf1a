package lab

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/internal/fleet"
)

func TestEmbeddedFleetIsValid(t *testing.T) {
	fleetTOML := StoryFleet()
	if !bytes.Contains(fleetTOML, []byte(PlaceholderCharts)) {
		t.Fatalf("the fleet file lacks the chart repository placeholder %s that Start replaces", PlaceholderCharts)
	}
	f, err := fleet.Parse("fleet.toml", fleetTOML)
	if err != nil {
		t.Fatal(err)
	}
	if r := f.Releases[ReleaseDrill]; r == nil || !r.ExpectFailure || r.Driver != DriverDrill {
		t.Errorf("release %s: %+v, want the drill with driver %s", ReleaseDrill, r, DriverDrill)
	}
	if r := f.Releases[ReleaseGood]; r == nil || r.Driver != DriverGood {
		t.Errorf("release %s: %+v, want driver %s", ReleaseGood, r, DriverGood)
	}
	if got := f.ClusterNames(); !slices.Equal(got, []string{Prod, Staging}) {
		t.Errorf("clusters %v", got)
	}
	for _, c := range StoryClusters() {
		if p := f.Clusters[c].Pools; len(p) != 1 || p[0].Nodes != PoolNodes || p[0].Product != Product {
			t.Errorf("cluster %s pools %+v", c, p)
		}
	}
}

func TestSummary(t *testing.T) {
	s := &Summary{Took: time.Minute, Repo: "/x/fleet", Steps: []StepResult{
		{Name: "render", Took: time.Second},
		{Name: "start", Took: 2 * time.Second, Err: errors.New("boom")},
	}}
	if !s.Failed() {
		t.Error("a summary with a failed step does not say it failed")
	}
	var b bytes.Buffer
	printSummary(&b, s)
	if out := b.String(); !strings.Contains(out, "render") || !strings.Contains(out, "FAILED") || !strings.Contains(out, "2 steps") {
		t.Errorf("summary:\n%s", out)
	}
}
