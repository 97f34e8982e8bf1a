package rehearse

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// TestRehearsalMeasuresWhatItDestroys: with a utilization the nodes run
// jobs and the report says what the rollout destroyed of them, the same
// for the same seed; without one they run none, as before.
func TestRehearsalMeasuresWhatItDestroys(t *testing.T) {
	o := Options{Fleet: example(t, nil), Cluster: "prod-h100-b", Release: "r2026-10", Start: start, Seed: 1, Utilization: 0.85}
	busy, err := o.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	r := busy[0]
	if w := r.Report.Workload; w == nil || w.GPUHoursDestroyed <= 0 || w.JobsInterrupted == 0 || w.Interruptions < w.JobsInterrupted {
		t.Fatalf("workload result %+v: want GPU-hours destroyed and jobs interrupted", w)
	}
	if !strings.HasPrefix(r.Workload, "85% of 8 GPUs a node busy") {
		t.Errorf("workload %q, want the description of the jobs", r.Workload)
	}
	again, err := o.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r.Report, again[0].Report); diff != "" {
		t.Errorf("same seed, another rehearsal (-first +second):\n%s", diff)
	}
	o.Utilization = 0
	idle, err := o.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if idle[0].Report.Workload != nil || idle[0].Workload != "" {
		t.Errorf("utilization 0 ran jobs: %+v, %q", idle[0].Report.Workload, idle[0].Workload)
	}
}

// TestCompareOrdersOnTheSameJobs: with jobs, a comparison has three runs
// on the same nodes and jobs (gpufleet cheapest first, gpufleet in name
// order, the operator), and starting the cheapest nodes first destroys
// less than the fixed order on the example's largest cluster: at seed 1,
// and summed over ten seeds, at about the same makespan.
func TestCompareOrdersOnTheSameJobs(t *testing.T) {
	f := example(t, nil)
	var cheapSum, fixedSum float64
	for seed := uint64(1); seed <= 10; seed++ {
		all, err := Options{Fleet: f, Cluster: "prod-h100-b", Release: "r2026-10", Start: start, Seed: seed, Utilization: 0.85}.Compare(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		type column struct {
			Actuator v1alpha1.Actuator
			Order    Order
			Title    string
		}
		var got []column
		for _, r := range actuatorRuns(all[0]) {
			got = append(got, column{r.Actuator, r.Order, r.Title})
			if r.Rehearsal.Report.Workload == nil || r.Rehearsal.Workload != all[0].Runs[0].Rehearsal.Workload {
				t.Fatalf("seed %d, %s: workload %q %+v, want the same jobs as the first run", seed, r.Title, r.Rehearsal.Workload, r.Rehearsal.Report.Workload)
			}
		}
		want := []column{
			{v1alpha1.ActuatorGPUFleet, OrderCheapestFirst, "gpufleet"},
			{v1alpha1.ActuatorGPUFleet, OrderNodeName, "gpufleet, name order"},
			{v1alpha1.ActuatorGPUOperator, OrderNodeName, "gpu-operator"},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("runs (-want +got):\n%s", diff)
		}
		cheap, fixed := all[0].run(OrderCheapestFirst), all[0].run(OrderNodeName)
		c, x := cheap.Report.Workload.GPUHoursDestroyed, fixed.Report.Workload.GPUHoursDestroyed
		if seed == 1 {
			if c >= x {
				t.Errorf("seed 1: cheapest first destroyed %.1f GPU-hours, the name order %.1f: want less", c, x)
			}
			var b bytes.Buffer
			if err := WriteComparisons(&b, all); err != nil {
				t.Fatal(err)
			}
			for _, s := range []string{"gpufleet, name order", "node order", "cheapest first", "GPU-hours destroyed", "jobs interrupted",
				"most interruptions of a multi-node job", "cheapest first destroys", "of the GPU-hours that name order destroys", "of its makespan"} {
				if !strings.Contains(b.String(), s) {
					t.Errorf("the table does not say %q:\n%s", s, b.String())
				}
			}
		}
		if m, n := cheap.Report.Makespan, fixed.Report.Makespan; m > n*11/10 {
			t.Errorf("seed %d: cheapest first took %v, the name order %v: want about as long", seed, m, n)
		}
		cheapSum += c
		fixedSum += x
	}
	if cheapSum >= fixedSum {
		t.Errorf("over ten seeds cheapest first destroyed %.1f GPU-hours, the name order %.1f: want less", cheapSum, fixedSum)
	}
}

// TestCompareWithoutJobsHasTwoColumns: at zero utilization both orders are
// one (no GPU pod anywhere), so only the two actuators are compared, as
// before the workload, and the table says nothing of jobs.
func TestCompareWithoutJobsHasTwoColumns(t *testing.T) {
	all, err := Options{Fleet: example(t, nil), Cluster: "prod-h100-b", Release: "r2026-10", Start: start, Seed: 1}.Compare(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	runs := actuatorRuns(all[0])
	if len(runs) != 2 || runs[0].Title != "gpufleet" || runs[1].Title != "gpu-operator" {
		t.Fatalf("runs %+v, want gpufleet and gpu-operator", runs)
	}
	for _, r := range runs {
		if r.Order != OrderNodeName || r.Rehearsal.Report.Workload != nil {
			t.Errorf("%s: order %q, workload %+v; want the nodes' own order and no jobs", r.Title, r.Order, r.Rehearsal.Report.Workload)
		}
	}
	var b bytes.Buffer
	if err := WriteComparisons(&b, all); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"workload", "node order", "GPU-hours", "cheapest first"} {
		if strings.Contains(b.String(), s) {
			t.Errorf("the table says %q without jobs:\n%s", s, b.String())
		}
	}
}

// TestOrderSavingWhenRunsDiffer: the line under the table does not
// compare makespans of rollouts that stopped with different nodes done,
// and says so when neither order destroyed anything.
func TestOrderSavingWhenRunsDiffer(t *testing.T) {
	all, err := Options{Fleet: example(t, nil), Cluster: "stg-h100", Release: "r2026-10", Start: start, Seed: 1, Utilization: 0.85}.Compare(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	c := all[0]
	cheap, fixed := c.run(OrderCheapestFirst), c.run(OrderNodeName)
	cheap.Report.Workload.GPUHoursDestroyed, fixed.Report.Workload.GPUHoursDestroyed = 0, 0
	if got := orderSaving(c); !strings.HasPrefix(got, "neither order destroys any GPU work, in ") {
		t.Errorf("nothing destroyed: %q", got)
	}
	cheap.Report.Done = fixed.Report.Done - 1
	if got := orderSaving(c); !strings.Contains(got, "so they did not do the same work") || strings.Contains(got, "makespan") {
		t.Errorf("different nodes done: %q", got)
	}
}
