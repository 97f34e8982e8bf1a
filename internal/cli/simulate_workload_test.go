package cli

import (
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// destroyedLine is the table's line of what a rollout destroyed.
var destroyedLine = regexp.MustCompile(`(?m)^destroyed    ([0-9.]+) GPU-hours: the work evicted jobs did since their last checkpoints \(([0-9]+) jobs? interrupted, [0-9]+ interruptions?; `)

// TestSimulateSaysWhatTheRolloutDestroys: by default the nodes run jobs,
// and the rehearsal of the example's largest cluster says the GPU work
// its rollout destroys and the jobs it interrupts.
func TestSimulateSaysWhatTheRolloutDestroys(t *testing.T) {
	fleetFile := copyExample(t)
	code, out, errOut := run(t, "simulate", "-f", fleetFile, "--cluster", "prod-h100-b", "--release", "r2026-10", simStart)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	m := destroyedLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no destroyed line:\n%s", out)
	}
	if hours, _ := strconv.ParseFloat(m[1], 64); hours <= 0 || m[2] == "0" {
		t.Errorf("destroyed %s GPU-hours, %s jobs interrupted: want some of each at 85%% utilization:\n%s", m[1], m[2], out)
	}
	if !strings.Contains(out, "workload     85% of 8 GPUs a node busy: ") || !strings.Contains(out, "4-node training") {
		t.Errorf("no workload line with the jobs of several nodes:\n%s", out)
	}

	code, out, errOut = run(t, "simulate", "-f", fleetFile, "--cluster", "prod-h100-b", "--release", "r2026-10", simStart, "-o", "json")
	if code != ExitOK {
		t.Fatalf("-o json: exit %d\n%s%s", code, out, errOut)
	}
	var doc []struct {
		Workload string
		Report   struct {
			Workload *struct {
				GPUHoursDestroyed          float64
				JobsInterrupted            int
				Interruptions              int
				MostMultiNodeInterruptions int
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if w := doc[0].Report.Workload; !strings.HasPrefix(doc[0].Workload, "85% of 8 GPUs") || w == nil || w.GPUHoursDestroyed <= 0 || w.JobsInterrupted == 0 {
		t.Errorf("-o json: workload %q, %+v; want the description and what was destroyed", doc[0].Workload, w)
	}
}

// TestSimulateUtilizationZeroKeepsIdleNodes: --utilization 0 runs no jobs,
// and the output is what it was before jobs: no workload lines, and a
// comparison of the two actuators alone.
func TestSimulateUtilizationZeroKeepsIdleNodes(t *testing.T) {
	fleetFile := copyExample(t)
	code, out, errOut := run(t, "simulate", "-f", fleetFile, "--cluster", "prod-h100-b", "--release", "r2026-10", simStart, "--utilization", "0")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, not := range []string{"workload", "destroyed", "GPU-hours"} {
		if strings.Contains(out, not) {
			t.Errorf("--utilization 0 says %q:\n%s", not, out)
		}
	}
	code, out, errOut = run(t, "simulate", "-f", fleetFile, "--cluster", "prod-h100-b", "--release", "r2026-10", simStart, "--utilization", "0", "--compare")
	if code != ExitOK {
		t.Fatalf("--compare: exit %d\n%s%s", code, out, errOut)
	}
	if !regexp.MustCompile(`(?m)^actuator +gpufleet +gpu-operator( +two rollouts \(OFED, then GPU\))?$`).MatchString(out) {
		t.Errorf("--utilization 0 --compare: want the two actuators alone:\n%s", out)
	}
	for _, not := range []string{"name order", "workload", "GPU-hours", "cheapest first"} {
		if strings.Contains(out, not) {
			t.Errorf("--utilization 0 --compare says %q:\n%s", not, out)
		}
	}
}

// TestSimulateCompareThreeWays: --compare rehearses gpufleet cheapest
// first, gpufleet in name order and the operator on the same nodes and
// jobs; on the example's largest cluster at seed 1 the fixed order
// destroys more, and the line under the table says how much less
// cheapest-first destroys.
func TestSimulateCompareThreeWays(t *testing.T) {
	fleetFile := copyExample(t)
	code, out, errOut := run(t, "simulate", "-f", fleetFile, "--cluster", "prod-h100-b", "--release", "r2026-10", simStart, "--compare")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, re := range []string{
		// The example's release moves OFED too: gpufleet's columns move
		// both drivers in one maintenance per node, the operator's the
		// GPU driver alone, and one more column moves both in two
		// rollouts.
		`(?m)^actuator +gpufleet +gpufleet, name order +gpu-operator +two rollouts \(OFED, then GPU\)$`,
		`(?m)^node order +cheapest first +node name +node name +cheapest first$`,
		`(?m)^drains per node \(mean, max\) +1\.00, 1 +1\.00, 1 +1\.00, 1 +2\.00, 2$`,
		`(?m)^GPU-hours destroyed +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+$`,
		`(?m)^jobs interrupted +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+$`,
		`(?m)^most interruptions of a multi-node job +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+$`,
		`(?m)^workload the same jobs in every run: 85% of 8 GPUs a node busy`,
		`(?m)^cheapest first destroys [0-9]+% of the GPU-hours that name order destroys \([0-9.]+ of [0-9.]+\), in [0-9]+% of its makespan\.$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("output does not match %s:\n%s", re, out)
		}
	}

	code, out, errOut = run(t, "simulate", "-f", fleetFile, "--cluster", "prod-h100-b", "--release", "r2026-10", simStart, "--compare", "-o", "json")
	if code != ExitOK {
		t.Fatalf("-o json: exit %d\n%s%s", code, out, errOut)
	}
	var doc []struct {
		Runs []struct {
			Actuator, Order, Title string
			Rehearsal              struct {
				Report struct {
					Workload struct{ GPUHoursDestroyed float64 }
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range doc[0].Runs {
		got = append(got, r.Actuator+"/"+r.Order+"/"+r.Title)
	}
	if want := "gpufleet/cheapest first/gpufleet gpufleet/node name/gpufleet, name order gpu-operator/node name/gpu-operator gpufleet/cheapest first/two rollouts (OFED, then GPU)"; strings.Join(got, " ") != want {
		t.Fatalf("runs %q, want %q", got, want)
	}
	if cheap, fixed := doc[0].Runs[0].Rehearsal.Report.Workload.GPUHoursDestroyed, doc[0].Runs[1].Rehearsal.Report.Workload.GPUHoursDestroyed; cheap >= fixed {
		t.Errorf("cheapest first destroyed %.1f GPU-hours, the name order %.1f: want less", cheap, fixed)
	}
}

// TestSimulateDRAJobsAreCostedLikeDevicePluginJobs: with --dra the same
// jobs hold their GPUs through claims of NVIDIA's DRA driver, and every
// way of --compare destroys, interrupts and takes as long as with
// nvidia.com/gpu requests: the controller sees, drains and costs them
// alike. A policy whose dra-drivers leave NVIDIA's out makes the claims
// invisible: cheapest first can no longer tell busy nodes from idle ones,
// and destroys more.
func TestSimulateDRAJobsAreCostedLikeDevicePluginJobs(t *testing.T) {
	fleetFile := copyExample(t)
	rows := func(extra ...string) string {
		t.Helper()
		args := append([]string{"simulate", "-f", fleetFile, "--cluster", "prod-h100-b", "--release", "r2026-10", simStart, "--compare"}, extra...)
		code, out, errOut := run(t, args...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d\n%s%s", extra, code, out, errOut)
		}
		var keep []string
		for l := range strings.SplitSeq(out, "\n") {
			for _, row := range []string{"makespan ", "drains per node", "GPU-hours destroyed", "jobs interrupted", "most interruptions"} {
				if strings.HasPrefix(l, row) {
					keep = append(keep, l)
				}
			}
		}
		if len(keep) != 5 {
			t.Fatalf("%v: want the five rows of what the rollout did, got %q:\n%s", extra, keep, out)
		}
		if len(extra) > 0 && !strings.Contains(out, "GPUs through DRA claims of gpu.nvidia.com") {
			t.Errorf("--dra: the workload line does not say the jobs hold claims:\n%s", out)
		}
		return strings.Join(keep, "\n")
	}
	plugin, claims := rows(), rows("--dra")
	if plugin != claims {
		t.Errorf("--dra changed what the rollout did:\nnvidia.com/gpu:\n%s\nDRA claims:\n%s", plugin, claims)
	}

	b, err := os.ReadFile(fleetFile)
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.Replace(string(b), "\n[policy]\n", "\n[policy]\ndra-drivers = [\"gpu.example.com\"]\n", 1))
	if err := os.WriteFile(fleetFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if unseen := rows("--dra"); unseen == claims {
		t.Errorf("with dra-drivers leaving NVIDIA's out, the claims still counted as GPUs:\n%s", unseen)
	}

	if code, _, errOut := run(t, "simulate", "-f", fleetFile, "--utilization", "0", "--dra"); code != ExitUsage || !strings.Contains(errOut, "--dra") {
		t.Errorf("--dra --utilization 0: exit %d, %q; want a usage error naming --dra", code, errOut)
	}
}
