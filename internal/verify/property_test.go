package verify

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/promote"
	"github.com/gpufleet/gpufleet/internal/render"
)

// genFleet is a random fleet file, kept as a model so that a test can
// change one thing and write it again.
type genFleet struct {
	charts   string
	releases []genRelease
	clusters []genCluster
	waves    []genWave
	soak     string
}

type genRelease struct{ name, gpuOperator, driver, notes string }

type genCluster struct {
	name, env string
	pools     []genPool
}

type genPool struct {
	name, product string
	nodes         int
}

type genWave struct {
	name            string
	clusters        []string
	canary          string
	pause, approval bool
}

var (
	genOperators = []string{"v24.9.2", "v25.3.4", "v25.10.1"}
	genDrivers   = []string{"550.163.01", "570.172.08", "570.195.03", "580.82.07", "580.95.05", "580.105.08"}
	genProducts  = []string{"NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-80GB", "NVIDIA-L40S", "NVIDIA-H200"}
)

func pick[T any](rng *rand.Rand, s []T) T { return s[rng.IntN(len(s))] }

func randomFleet(rng *rand.Rand) genFleet {
	g := genFleet{charts: "https://helm.ngc.nvidia.com/nvidia", soak: pick(rng, []string{"10m", "30m", "1h"})}
	for i := range 2 + rng.IntN(3) {
		g.releases = append(g.releases, genRelease{name: fmt.Sprintf("r%d", i+1), gpuOperator: pick(rng, genOperators), driver: pick(rng, genDrivers), notes: "release " + strconv.Itoa(i+1)})
	}
	n := 2 + rng.IntN(5)
	for i := range n {
		c := genCluster{name: fmt.Sprintf("c%d", i+1), env: pick(rng, []string{"staging", "prod"})}
		for j := range 1 + rng.IntN(2) {
			c.pools = append(c.pools, genPool{name: fmt.Sprintf("p%d", j+1), product: genProducts[(i+j)%len(genProducts)], nodes: 1 + rng.IntN(8)})
		}
		g.clusters = append(g.clusters, c)
	}
	// Waves cut the clusters, in order, into two or three runs.
	cuts := []int{0}
	for len(cuts) < min(n, 2+rng.IntN(2)) {
		c := 1 + rng.IntN(n-1)
		if !slices.Contains(cuts, c) {
			cuts = append(cuts, c)
		}
	}
	slices.Sort(cuts)
	cuts = append(cuts, n)
	for i := 0; i+1 < len(cuts); i++ {
		w := genWave{name: fmt.Sprintf("w%d", i+1)}
		for _, c := range g.clusters[cuts[i]:cuts[i+1]] {
			w.clusters = append(w.clusters, c.name)
		}
		if len(w.clusters) > 1 && rng.IntN(2) == 0 {
			w.canary = w.clusters[0]
			w.pause = rng.IntN(2) == 0
		}
		w.approval = i > 0 && rng.IntN(2) == 0
		g.waves = append(g.waves, w)
	}
	return g
}

func quoted(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// text writes the fleet file, with promotion state p written as the
// promotion commands write it.
func (g genFleet) text(p fleet.Promotion) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[charts]\nrepository = %q\n\n", g.charts)
	for _, r := range g.releases {
		fmt.Fprintf(&b, "[releases.%s]\ngpu-operator = %q\ndriver = %q\nnotes = %q\n\n", r.name, r.gpuOperator, r.driver, r.notes)
	}
	for _, c := range g.clusters {
		fmt.Fprintf(&b, "[clusters.%s]\nenvironment = %q\n\n", c.name, c.env)
		for _, p := range c.pools {
			fmt.Fprintf(&b, "[[clusters.%s.pools]]\nname = %q\nproduct = %q\nnodes = %d\n\n", c.name, p.name, p.product, p.nodes)
		}
	}
	for _, w := range g.waves {
		fmt.Fprintf(&b, "[[waves]]\nname = %q\nclusters = %s\n", w.name, quoted(w.clusters))
		if w.canary != "" {
			fmt.Fprintf(&b, "canary = %q\npause-after-canary = %t\n", w.canary, w.pause)
		}
		fmt.Fprintf(&b, "require-approval = %t\n\n", w.approval)
	}
	fmt.Fprintf(&b, "[policy]\nsoak = %q\n\n", g.soak)
	fmt.Fprintf(&b, "[promotion]\nstable = %q\n", p.Stable)
	if r := p.Rollout; r != nil {
		fmt.Fprintf(&b, "rollout = { release = %q, wave = %q, stage = %q, aborted = %t }\n", r.Release, r.Wave, r.Stage, r.Aborted)
	}
	fmt.Fprintf(&b, "approved = %s\npaused = %t\n", quoted(p.Approved), p.Paused)
	return b.String()
}

func (g genFleet) clone() genFleet {
	c := g
	c.releases = slices.Clone(g.releases)
	c.clusters = slices.Clone(g.clusters)
	for i := range c.clusters {
		c.clusters[i].pools = slices.Clone(g.clusters[i].pools)
	}
	c.waves = slices.Clone(g.waves)
	for i := range c.waves {
		c.waves[i].clusters = slices.Clone(g.waves[i].clusters)
	}
	return c
}

// randomStep applies one promotion command that the fleet allows now,
// chosen at random (sometimes with --skip-gate where it may be skipped),
// and returns its summary; "" when none is allowed.
func (r *fleetRepo) randomStep(rng *rand.Rand) string {
	r.t.Helper()
	f, err := fleet.Load(r.file)
	if err != nil {
		r.t.Fatal(err)
	}
	var ms []promote.Mutation
	for _, name := range f.ReleaseNames() {
		ms = append(ms, start(name))
	}
	for _, w := range promote.Waits(f) {
		if w.Approval != "" {
			ms = append(ms, approve(w.Approval))
		}
	}
	ms = append(ms, promote.Promote, promote.Promote, promote.Promote, promote.Pause, promote.Resume, promote.Abort)
	rng.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
	for _, m := range ms {
		st, err := m(f)
		if err != nil {
			continue
		}
		skip := ""
		if len(st.Gate) > 0 && st.GateRequired == "" && rng.IntN(4) == 0 {
			skip = "INC-" + strconv.Itoa(rng.IntN(1000)) + ": drill"
		}
		r.apply(m, skip)
		return st.Summary
	}
	return ""
}

// stacks renders f and returns, per cluster, its steps' files: the test's
// own reading of what a cluster runs, independent of the check's.
func stacks(t *testing.T, text string) map[string]map[string][]byte {
	t.Helper()
	f, err := fleet.Parse("fleet.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	out, err := render.Render(f)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]map[string][]byte{}
	for p, b := range out.Files {
		parts := strings.Split(p, "/")
		if len(parts) < 4 || parts[0] != "clusters" || !slices.Contains([]string{"operators", "config", "lifecycle"}, parts[2]) {
			continue
		}
		if m[parts[1]] == nil {
			m[parts[1]] = map[string][]byte{}
		}
		m[parts[1]][p] = b
	}
	return m
}

func stacksDiffer(a, b map[string]map[string][]byte) []string {
	var out []string
	for c, files := range a {
		other, ok := b[c]
		if !ok {
			continue
		}
		same := len(files) == len(other)
		for p, data := range files {
			same = same && bytes.Equal(data, other[p])
		}
		if !same {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// edits are the single edits of a fleet file the property test makes:
// each changes one thing, and the test's own render says whether it
// changed what a cluster runs.
var edits = []struct {
	name string
	do   func(rng *rand.Rand, g *genFleet) bool
}{
	{"a release's driver", func(rng *rand.Rand, g *genFleet) bool {
		r := &g.releases[rng.IntN(len(g.releases))]
		r.driver = pick(rng, genDrivers)
		return true
	}},
	{"a release's GPU Operator", func(rng *rand.Rand, g *genFleet) bool {
		r := &g.releases[rng.IntN(len(g.releases))]
		r.gpuOperator = pick(rng, genOperators)
		return true
	}},
	{"a release's notes", func(rng *rand.Rand, g *genFleet) bool {
		g.releases[rng.IntN(len(g.releases))].notes = "edited"
		return true
	}},
	{"a cluster moved to another wave", func(rng *rand.Rand, g *genFleet) bool {
		from, to := rng.IntN(len(g.waves)), rng.IntN(len(g.waves))
		w := &g.waves[from]
		if from == to || len(w.clusters) < 2 {
			return false
		}
		c := w.clusters[len(w.clusters)-1]
		if c == w.canary {
			return false
		}
		w.clusters = w.clusters[:len(w.clusters)-1]
		g.waves[to].clusters = append(g.waves[to].clusters, c)
		return true
	}},
	{"the charts' source", func(rng *rand.Rand, g *genFleet) bool {
		g.charts = "oci://registry.example.com/mirror"
		return true
	}},
	{"the policy", func(rng *rand.Rand, g *genFleet) bool {
		g.soak = pick(rng, []string{"5m", "2h", "45m"})
		return true
	}},
	{"a cluster's environment", func(rng *rand.Rand, g *genFleet) bool {
		c := &g.clusters[rng.IntN(len(g.clusters))]
		c.env = map[string]string{"staging": "prod", "prod": "staging"}[c.env]
		return true
	}},
}

// TestVerifyProperty: on random fleets, every random sequence of promotion
// commands passes verify commit by commit; and a random single edit of the
// fleet file fails verify exactly when it changes what some cluster runs
// (by the test's own render), pools and a policy at rest aside.
// GPUFLEET_VERIFY_SEEDS sets how many fleets (default 6).
func TestVerifyProperty(t *testing.T) {
	seeds := 6
	if s, err := strconv.Atoi(os.Getenv("GPUFLEET_VERIFY_SEEDS")); err == nil && s > 0 {
		seeds = s
	}
	if testing.Short() {
		seeds = 2
	}
	changed, unchanged := 0, 0
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 42))
		g := randomFleet(rng)
		r := newFleetRepo(t)
		if err := os.WriteFile(r.file, []byte(g.text(fleet.Promotion{Stable: "r1"})), 0o644); err != nil {
			t.Fatal(err)
		}
		r.render()
		r.git("add", "-A")
		r.git("commit", "-q", "-m", "a random fleet")
		for i := range 2 + rng.IntN(6) {
			prev := r.git("rev-parse", "HEAD")
			what := r.randomStep(rng)
			if what == "" {
				break
			}
			rep := r.verify(Options{Base: prev, Gate: fakeGate(gate.Pass, new([]gateCall))})
			if rep.ExitCode() != ExitOK {
				t.Fatalf("seed %d, step %d (%s): exit %d; findings:\n%s", seed, i, what, rep.ExitCode(), findingLines(rep))
			}
		}
		f, err := fleet.Load(r.file)
		if err != nil {
			t.Fatal(err)
		}
		state := r.git("rev-parse", "HEAD")
		for n := range 6 {
			e := edits[rng.IntN(len(edits))]
			h := g.clone()
			if !e.do(rng, &h) {
				continue
			}
			before, after := g.text(f.Promotion), h.text(f.Promotion)
			if _, err := fleet.Parse("fleet.toml", []byte(after)); err != nil || before == after {
				continue // not a valid or not a different fleet file
			}
			r.git("checkout", "-q", "-B", fmt.Sprintf("edit-%d-%d", seed, n), state)
			if err := os.WriteFile(r.file, []byte(after), 0o644); err != nil {
				t.Fatal(err)
			}
			r.render()
			r.git("add", "-A")
			r.git("commit", "-q", "-m", "edit: "+e.name)
			moved := stacksDiffer(stacks(t, before), stacks(t, after))
			rep := r.verify(Options{Base: state})
			atRestPolicy := e.name == "the policy" || e.name == "a cluster's environment"
			switch {
			case len(moved) > 0 && !atRestPolicy && rep.ExitCode() != ExitFailed:
				t.Errorf("seed %d, %s: it moves %v, but verify exits %d; findings:\n%s", seed, e.name, moved, rep.ExitCode(), findingLines(rep))
			case len(moved) == 0 && rep.ExitCode() != ExitOK:
				t.Errorf("seed %d, %s: it moves no cluster, but verify exits %d; findings:\n%s", seed, e.name, rep.ExitCode(), findingLines(rep))
			case atRestPolicy && len(moved) > 0:
				// A policy moves what it rolls only where a rollout is under
				// way: verify fails exactly there.
				inFlight := false
				for _, c := range moved {
					inFlight = inFlight || f.Touched(c)
				}
				if inFlight != (rep.ExitCode() == ExitFailed) {
					t.Errorf("seed %d, %s: moves %v (under a rollout: %t), verify exits %d; findings:\n%s", seed, e.name, moved, inFlight, rep.ExitCode(), findingLines(rep))
				}
			}
			if len(moved) > 0 {
				changed++
			} else {
				unchanged++
			}
		}
	}
	t.Logf("%d edits that move a cluster, %d that move none", changed, unchanged)
	if changed == 0 || unchanged == 0 {
		t.Errorf("the random edits tried only one kind (moved %d, unmoved %d): the property was not exercised", changed, unchanged)
	}
}
