package rehearse

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// actuatorRuns are c's columns of one rollout each: without the one a
// release of both drivers adds (withSeparate).
func actuatorRuns(c Comparison) []ActuatorRun {
	var out []ActuatorRun
	for _, r := range c.Runs {
		if r.Title != separateTitle {
			out = append(out, r)
		}
	}
	return out
}

// TestCompareOFEDDrainsOncePerNode: a release of both drivers on a pool of
// managed NICs is compared with the two drivers moved by two rollouts;
// the simulation drains each node once in gpufleet's one maintenance and
// twice in two rollouts, which take longer and destroy more GPU work.
func TestCompareOFEDDrainsOncePerNode(t *testing.T) {
	all, err := Options{Fleet: example(t, nil), Cluster: "stg-h100", Release: "r2026-10", Nodes: 8, Seed: 2, Start: start, Utilization: 0.85}.Compare(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	c := all[0]
	if !strings.Contains(c.OFED, "→ doca3.2.0-25.10-1.2.8.0-2") {
		t.Fatalf("comparison OFED %q", c.OFED)
	}
	// gpufleet's first column moves both drivers, as render's rollout
	// says; the last moves them in two rollouts.
	var one, two *ActuatorRun
	for k := range c.Runs {
		switch {
		case c.Runs[k].Title == separateTitle:
			two = &c.Runs[k]
		case one == nil && c.Runs[k].Actuator == "gpufleet":
			one = &c.Runs[k]
		}
	}
	for _, r := range c.Runs {
		if r.Actuator == "gpu-operator" && !slices.Contains(r.Limits, operatorOFEDLimit) {
			t.Errorf("the gpu-operator column does not say it moves the GPU driver alone: %q", r.Limits)
		}
	}
	if one == nil || two == nil || one.Drains == nil || two.Drains == nil || len(two.Separate) != 2 {
		t.Fatalf("runs %+v: want both drivers in one maintenance and in two rollouts", c.Runs)
	}
	for _, r := range []*ActuatorRun{one, two} {
		if rep := r.Rehearsal.Report; rep.Done != rep.Nodes {
			t.Fatalf("%s: %d of %d done: %s", r.Title, rep.Done, rep.Nodes, rep.Reason)
		}
	}
	if *one.Drains != (DrainStats{Mean: 1, Max: 1}) || *two.Drains != (DrainStats{Mean: 2, Max: 2}) {
		t.Errorf("drains per node: one maintenance %+v, two rollouts %+v; want 1 and 2", *one.Drains, *two.Drains)
	}
	if one.Rehearsal.Report.Makespan >= two.Rehearsal.Report.Makespan {
		t.Errorf("makespan: one maintenance %v, two rollouts %v", time.Duration(one.Rehearsal.Report.Makespan), time.Duration(two.Rehearsal.Report.Makespan))
	}
	w1, w2 := one.Rehearsal.Report.Workload, two.Rehearsal.Report.Workload
	if w1 == nil || w2 == nil || w1.GPUHoursDestroyed >= w2.GPUHoursDestroyed || w1.JobsInterrupted > w2.JobsInterrupted {
		t.Errorf("work destroyed: one maintenance %+v, two rollouts %+v", w1, w2)
	}
	var b bytes.Buffer
	if err := WriteComparisons(&b, all); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"drains per node (mean, max)", "1.00, 1", "2.00, 2", separateTitle} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the table does not say %q:\n%s", want, b.String())
		}
	}
	t.Logf("\n%s", b.String())
	js, err := json.Marshal(all)
	if err != nil || !strings.Contains(string(js), `"drainsPerNode":{"mean":2,"max":2}`) {
		t.Errorf("json lacks the drains (%v): %s", err, js)
	}
}
