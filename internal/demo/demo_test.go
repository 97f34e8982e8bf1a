package demo

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/lab"
)

func TestEmbeddedFleetIsValid(t *testing.T) {
	fleetTOML := lab.StoryFleet()
	if !bytes.Contains(fleetTOML, []byte(lab.PlaceholderCharts)) {
		t.Fatalf("the fleet file lacks the chart repository placeholder %s that Run replaces", lab.PlaceholderCharts)
	}
	f, err := fleet.Parse("fleet.toml", fleetTOML)
	if err != nil {
		t.Fatal(err)
	}
	if r := f.Releases[relDrill]; r == nil || !r.ExpectFailure || r.Driver != drvDrill {
		t.Errorf("release %s: %+v, want the drill with driver %s", relDrill, r, drvDrill)
	}
	if r := f.Releases[relGood]; r == nil || r.Driver != drvGood {
		t.Errorf("release %s: %+v, want driver %s", relGood, r, drvGood)
	}
	if got := f.ClusterNames(); !slices.Equal(got, []string{prod, stg}) {
		t.Errorf("clusters %v", got)
	}
	for _, c := range clusterNames {
		if p := f.Clusters[c].Pools; len(p) != 1 || p[0].Nodes != poolNodes || p[0].Product != product {
			t.Errorf("cluster %s pools %+v", c, p)
		}
	}
}

func TestSummary(t *testing.T) {
	s := &Summary{Took: time.Minute, Repo: "/x/fleet", Steps: []Step{
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
