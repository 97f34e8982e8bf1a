package promote

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/render"
)

// gateOutcome is what a gated step meets: the gate passes, fails, or the
// person skips it (--skip-gate --reason).
type gateOutcome int

const (
	gatePasses gateOutcome = iota
	gateFails
	gateSkipped
)

func (g gateOutcome) String() string { return [...]string{"passes", "fails", "skipped"}[g] }

// world follows, for each cluster, every driver a node there could be on:
// the drivers each render let the DriverRollout move nodes to or back to,
// since the gate last saw every node of the cluster on one driver.
type world struct {
	f     *fleet.Fleet
	could map[string]map[string]bool
	log   []string
	// seen counts the kinds of step taken or refused, to show the random
	// walks reach the steps that matter.
	seen map[string]int
}

// try takes one step as Apply would (gate, then edit and render), without
// git: a refused step changes nothing.
func (w *world) try(name string, m Mutation, outcome gateOutcome) error {
	step, _, next, err := stepFleet(w.f, m)
	if err != nil {
		return err
	}
	if len(step.Gate) > 0 {
		switch {
		case outcome == gateFails:
			return errors.New("gate failed")
		case outcome == gateSkipped && step.GateRequired != "":
			w.seen["--skip-gate refused"]++
			return errors.New("skip refused: " + step.GateRequired)
		case outcome == gatePasses:
			// The gate saw every node of these clusters on the driver the
			// fleet file gives them now.
			for _, c := range step.Gate {
				w.could[c] = map[string]bool{w.f.ReleaseFor(c).Driver: true}
			}
		}
	}
	w.f = next
	w.log = append(w.log, fmt.Sprintf("%s (gate %v) → %s", name, outcome, step.Summary))
	switch {
	case strings.Contains(step.Summary, "is stable"):
		w.seen["a release became stable"]++
	case strings.HasPrefix(step.Summary, "end the abort"):
		w.seen["an abort ended"]++
	case strings.HasPrefix(step.Summary, "abort"):
		w.seen["an abort"]++
	case len(step.Gate) > 0 && outcome == gateSkipped:
		w.seen["a step with --skip-gate"]++
	}
	return nil
}

// check renders the fleet and fails unless every driver a node could be on
// has an NVIDIADriver in each pool and is one of the two drivers of the
// cluster's DriverRollout; then nodes may move to either of those.
func (w *world) check(t *testing.T) {
	t.Helper()
	out, err := render.Render(w.f)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range w.f.ClusterNames() {
		var dr v1alpha1.DriverRollout
		if err := yaml.Unmarshal(out.Files[render.ClusterDir(name)+"/lifecycle/driverrollout.yaml"], &dr); err != nil {
			t.Fatal(err)
		}
		moves := []string{dr.Spec.TargetVersion, dr.Spec.PreviousVersion}
		for _, d := range slices.Sorted(maps.Keys(w.could[name])) {
			for _, pool := range w.f.Clusters[name].Pools {
				file := render.ClusterDir(name) + "/config/nvidiadriver-" + render.NVIDIADriverName(pool.Name, d) + ".yaml"
				if _, ok := out.Files[file]; !ok {
					t.Fatalf("cluster %s: a node of pool %s could be on driver %s, but no NVIDIADriver selects it after:\n  %s", name, pool.Name, d, strings.Join(w.log, "\n  "))
				}
			}
			if !slices.Contains(moves, d) {
				t.Fatalf("cluster %s: a node could be on driver %s, but the DriverRollout %s moves only between %v after:\n  %s", name, d, dr.Name, moves, strings.Join(w.log, "\n  "))
			}
		}
		for _, d := range moves {
			w.could[name][d] = true
		}
	}
}

// TestPromotionNeverTakesAwayWhatNodesStillNeed drives the example fleet
// through random sequences of promotion commands and gate outcomes. After
// every step, every driver version a node could be on must still have its
// NVIDIADriver rendered (and a DriverRollout that knows it): a render may
// drop a driver only after the gate has seen no node run it.
func TestPromotionNeverTakesAwayWhatNodesStillNeed(t *testing.T) {
	src, err := os.ReadFile("../../examples/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	seeds, steps := 300, 40
	if testing.Short() {
		seeds = 60
	}
	base, err := fleet.Parse("fleet.toml", src)
	if err != nil {
		t.Fatal(err)
	}
	releases := base.ReleaseNames()
	seen := map[string]int{}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 15))
		w := &world{f: base, could: map[string]map[string]bool{}, seen: seen}
		for _, c := range base.ClusterNames() {
			w.could[c] = map[string]bool{base.ReleaseFor(c).Driver: true}
		}
		w.check(t)
		for range steps {
			var name string
			var m Mutation
			switch k := rng.IntN(20); {
			case k < 9:
				name, m = "promote", Promote
			case k < 15:
				// Approve what waits, now and then something that does not.
				waits := Waits(w.f)
				a := "r2026-10/nothing"
				if len(waits) > 0 && rng.IntN(8) > 0 {
					a = waits[rng.IntN(len(waits))].Approval
				}
				name, m = "approve "+a, func(f *fleet.Fleet) (Step, error) { return Approve(f, a) }
			case k < 17:
				r := releases[rng.IntN(len(releases))]
				name, m = "start "+r, func(f *fleet.Fleet) (Step, error) { return Start(f, r) }
			case k < 18:
				name, m = "abort", Abort
			case k < 19:
				name, m = "pause", Pause
			default:
				name, m = "resume", Resume
			}
			outcome := []gateOutcome{gatePasses, gatePasses, gateFails, gateSkipped}[rng.IntN(4)]
			if err := w.try(name, m, outcome); err != nil {
				continue
			}
			w.check(t)
		}
	}
	for _, kind := range []string{"a release became stable", "an abort", "an abort ended", "a step with --skip-gate", "--skip-gate refused"} {
		if seen[kind] == 0 {
			t.Errorf("no walk reached %s: %v", kind, seen)
		}
	}
	t.Logf("steps reached: %v", seen)
}

// TestAbortStaysInForceUntilEveryClusterIsBack walks an abort through the
// real Apply: status shows it, start is refused, the step that ends it
// cannot skip the gate, a failing gate keeps it, and a passing gate on
// every cluster the rollout reached ends it, and only then are the aborted
// DriverRollout and its driver's NVIDIADrivers removed.
func TestAbortStaysInForceUntilEveryClusterIsBack(t *testing.T) {
	path := fleetRepo(t)
	dir := filepath.Dir(path)
	gate := &fakeGate{}
	for _, m := range []Mutation{startR, approveEnter, Promote, Abort} {
		if _, err := Apply(t.Context(), Options{FleetFile: path, Mutation: m, Gate: gate.check}); err != nil {
			t.Fatal(err)
		}
	}
	newDriver := filepath.Join(dir, "clusters/prod-h100-a/config/nvidiadriver-h100-580-95-05.yaml")
	f, err := fleet.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	st := StatusOf(f)
	if !strings.Contains(st.Rollout, "ABORTED") || !strings.Contains(st.Rollout, "until the gate sees stg-h100, prod-h100-a back") || !strings.HasPrefix(st.Next, "gpufleet promote (ends the abort") {
		t.Errorf("status does not show the abort in force:\nrollout: %s\nnext: %s", st.Rollout, st.Next)
	}
	refusals := []struct {
		name string
		o    Options
		want string
	}{
		{"start", Options{Mutation: func(f *fleet.Fleet) (Step, error) { return Start(f, "r2026-10-drill") }}, "the abort of r2026-10 is in force until every cluster it reached (stg-h100, prod-h100-a) is back on r2026-06"},
		{"abort again", Options{Mutation: Abort}, "aborted already"},
		{"end it with --skip-gate", Options{Mutation: Promote, SkipGate: true, Reason: "in a hurry"}, "--skip-gate cannot be used for this step: ending the abort of r2026-10 stops rendering driver 580.95.05"},
		{"end it with a failing gate", Options{Mutation: Promote, Gate: (&fakeGate{fail: true}).check}, "the gate did not pass for stg-h100, prod-h100-a"},
	}
	for _, r := range refusals {
		r.o.FleetFile = path
		if _, err := Apply(t.Context(), r.o); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), r.want) {
			t.Errorf("%s: want a refusal containing %q, got %v", r.name, r.want, err)
		}
		if _, err := os.Stat(newDriver); err != nil {
			t.Fatalf("%s: the aborted driver's NVIDIADriver is gone while nodes may still run it: %v", r.name, err)
		}
	}
	gate.checked = nil
	res, err := Apply(t.Context(), Options{FleetFile: path, Mutation: Promote, Gate: gate.check})
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"stg-h100", "prod-h100-a"}}; !slices.EqualFunc(gate.checked, want, slices.Equal) {
		t.Errorf("ending the abort gated %v, want %v", gate.checked, want)
	}
	if res.Step.Summary != "end the abort of r2026-10: every cluster is back on r2026-06" {
		t.Errorf("summary %q", res.Step.Summary)
	}
	if _, err := os.Stat(newDriver); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the gate saw the nodes back, yet the aborted driver's NVIDIADriver stays: %v", err)
	}
	if _, err := Apply(t.Context(), Options{FleetFile: path, Mutation: func(f *fleet.Fleet) (Step, error) { return Start(f, "r2026-10-drill") }}); err != nil {
		t.Errorf("start after the abort ended: %v", err)
	}
}
