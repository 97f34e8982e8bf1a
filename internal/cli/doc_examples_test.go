package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/gate/gatetest"
	"github.com/gpufleet/gpufleet/internal/testworld/testbed"
)

// docBlock returns the lines of the first fenced block after the line that
// starts with after, in page: a path from the repository's root, such as
// "README.md" or "docs/fleet-file.md". The tests that run what the pages
// show read it through here, so a page that moves or loses its example
// fails them by name.
func docBlock(t *testing.T, page, after string) []string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(page)))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(src), "\n"+after)
	if !ok {
		t.Fatalf("%s has no line starting %q", page, after)
	}
	_, rest, ok = strings.Cut(rest, "```")
	if !ok {
		t.Fatalf("%s has no code block after %q", page, after)
	}
	_, rest, _ = strings.Cut(rest, "\n") // the fence's language
	block, _, _ := strings.Cut(rest, "```")
	return strings.Split(strings.TrimRight(block, "\n"), "\n")
}

// exampleDir is a temporary folder holding examples/fleet.toml, made the
// working directory, as a user's checkout would be.
func exampleDir(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("../../examples/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "examples"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "examples", "fleet.toml"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	return dir
}

// TestReadmeTryIt runs the README's first example as written.
func TestReadmeTryIt(t *testing.T) {
	var line string
	for _, l := range docBlock(t, "README.md", "Run the main job") {
		if strings.HasPrefix(l, "go run ./cmd/gpufleet ") {
			line = l
		}
	}
	if line == "" {
		t.Fatal("the README's first example does not run gpufleet")
	}
	dir := exampleDir(t)
	args := strings.Fields(strings.TrimPrefix(line, "go run ./cmd/gpufleet "))
	code, out, errOut := run(t, args...)
	if code != ExitOK {
		t.Fatalf("%s: exit %d\n%s%s", line, code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "clusters", "stg-h100", "flux-operators.yaml")); err != nil {
		t.Errorf("%s wrote no cluster folder: %v", line, err)
	}
}

// TestDocParseErrors makes the two mistakes docs/fleet-file.md shows (a
// misspelt key on line 54, a canary that is not in its wave on line 113 of
// the example fleet) and checks gpufleet reports them exactly as shown.
func TestDocParseErrors(t *testing.T) {
	want := docBlock(t, "docs/fleet-file.md", "Parsing is strict")
	dir := exampleDir(t)
	path := filepath.Join(dir, "examples", "fleet.toml")
	src, _ := os.ReadFile(path)
	lines := strings.Split(string(src), "\n")
	if lines[53] != "" || lines[112] != `canary = "prod-h100-a"` {
		t.Fatalf("the example fleet moved: line 54 %q, line 113 %q; update the example in docs/fleet-file.md", lines[53], lines[112])
	}
	lines[53] = `nodeSelecter = "pool=h100"`
	lines[112] = `canary = "prod-h100-c"`
	if err := os.WriteFile(filepath.Join(dir, "fleet.toml"), []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := run(t, "render", "-f", "fleet.toml", "--check")
	for _, w := range want {
		if !strings.Contains(errOut, "\n"+w+"\n") {
			t.Errorf("exit %d; the line %q of docs/fleet-file.md is not in the output:\n%s", code, w, errOut)
		}
	}
	if code != ExitFailed {
		t.Errorf("exit %d, want 1", code)
	}
}

// TestDocPromotion plays the promotion of docs/promotion-and-gate.md,
// command by command as written, against four real API servers (one per cluster of the example
// fleet). Between commands each cluster the release reached is made to
// look as Flux, helm-controller, the GPU Operator and the lifecycle
// controller leave it (gatetest.Arrange, then its revision moved on), so
// the real gate passes, and a canary waits for approval as the controller
// says once it has soaked. Every command must commit exactly one step, and
// the release must end stable.
func TestDocPromotion(t *testing.T) {
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com", "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.com"} {
		t.Setenv(k, v)
	}
	commands := docBlock(t, "docs/promotion-and-gate.md", "## Promotion")
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	f, err := fleet.Load(filepath.Join(root, "examples", "fleet.toml"))
	if err != nil {
		t.Fatal(err)
	}
	crds, err := gatetest.CRDDirs(root, f.Releases["r2026-10"].GPUOperator)
	if err != nil {
		t.Skipf("needs the real GPU Operator CRDs: %v", err)
	}
	// Started before the working directory moves: the testbed finds its
	// programs from it.
	tb := testbed.New(t, testbed.Options{Clusters: f.ClusterNames(), CRDDirs: crds, Scheme: testbed.NewScheme(), Kube: true, Kwok: true})
	t.Setenv("KUBECONFIG", tb.Kubeconfig)
	dir := exampleDir(t)
	if err := os.Rename(filepath.Join(dir, "examples", "fleet.toml"), filepath.Join(dir, "fleet.toml")); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := run(t, "render"); code != ExitOK {
		t.Fatal(errOut)
	}
	git := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("commit", "-q", "-m", "fleet")

	arranged := map[string]bool{}
	// converge makes cluster look converged on HEAD of the fleet repository.
	converge := func(cluster string) {
		t.Helper()
		f, err := fleet.Load("fleet.toml")
		if err != nil {
			t.Fatal(err)
		}
		rev := git("rev-parse", "HEAD")
		e := gate.Expect(f, cluster, rev)
		c := tb.Cluster(cluster).Client
		if !arranged[cluster] {
			if _, err := gatetest.Arrange(t.Context(), c, e); err != nil {
				t.Fatal(err)
			}
			arranged[cluster] = true
			return
		}
		for _, k := range e.Kustomizations {
			if err := testbed.Update(t.Context(), c, "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", k, true, func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, "main@sha1:"+rev, "status", "lastAppliedRevision")
			}); err != nil {
				t.Fatal(err)
			}
		}
		setRollout(t, c, e.Rollout, v1alpha1.PhaseCompleted, v1alpha1.ConditionCompleted)
	}
	for _, line := range commands {
		cmdline, comment, _ := strings.Cut(line, "#")
		args := strings.Fields(cmdline)
		if len(args) == 0 || args[0] != "gpufleet" {
			t.Fatalf("the promotion of docs/promotion-and-gate.md has a line that is not a gpufleet command: %q", line)
		}
		args = args[1:]
		f, err := fleet.Load("fleet.toml")
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case args[0] == "promote":
			for c := range f.Clusters {
				if f.Reached(c) {
					converge(c)
				}
			}
		case args[0] == "approve" && f.Clusters[strings.SplitN(args[1], "/", 2)[1]] != nil:
			// The controller says the canary soaked and waits.
			cluster := strings.SplitN(args[1], "/", 2)[1]
			converge(cluster)
			dro := f.Promotion.Rollout.Release
			setRollout(t, tb.Cluster(cluster).Client, dro, v1alpha1.PhaseWaitingForApproval, v1alpha1.ConditionWaitingForApproval)
		}
		before := git("rev-list", "--count", "HEAD")
		code, out, errOut := run(t, args...)
		if code != ExitOK || !strings.Contains(out, "committed: gpufleet: ") {
			t.Fatalf("%s\n(%s): exit %d\n%s%s", strings.TrimSpace(cmdline), strings.TrimSpace(comment), code, out, errOut)
		}
		if after := git("rev-list", "--count", "HEAD"); after == before {
			t.Errorf("%s made no commit", strings.TrimSpace(cmdline))
		}
	}
	f, err = fleet.Load("fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	if f.Promotion.Stable != "r2026-10" || f.Promotion.Rollout != nil {
		t.Errorf("after the documented promotion: stable %q, rollout %+v; want r2026-10 stable", f.Promotion.Stable, f.Promotion.Rollout)
	}

	// The same clusters through `gpufleet explain`: they were arranged
	// without a GitRepository, the first link, so it is broken (exit 1),
	// in text and in JSON.
	code, out, errOut := run(t, "explain", "stg-h100")
	if code != ExitFailed || !strings.Contains(out, "BROKEN at source: GitRepository flux-system/flux-system") || !strings.Contains(out, "next:      flux get sources git -A") {
		t.Errorf("explain: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = run(t, "explain", "stg-h100", "-o", "json")
	if code != ExitFailed || !strings.Contains(out, `"kind": "Explanation"`) || !strings.Contains(out, `"verdict": "broken"`) {
		t.Errorf("explain -o json: exit %d\n%s", code, out)
	}
}

// setRollout sets a DriverRollout's phase and one True condition, at the
// generation it has (the controller observed it).
func setRollout(t *testing.T, c client.Client, name string, phase v1alpha1.RolloutPhase, cond string) {
	t.Helper()
	var dr v1alpha1.DriverRollout
	if err := c.Get(t.Context(), client.ObjectKey{Name: name}, &dr); err != nil {
		t.Fatal(err)
	}
	dr.Status.ObservedGeneration, dr.Status.Phase = dr.Generation, phase
	dr.Status.Nodes = v1alpha1.NodeCounts{Done: dr.Status.Total}
	dr.Status.Conditions = []metav1.Condition{{Type: cond, Status: metav1.ConditionTrue, Reason: string(phase), Message: "set by the test as the controller would", LastTransitionTime: metav1.NewTime(time.Now())}}
	if err := c.Status().Update(t.Context(), &dr); err != nil {
		t.Fatal(err)
	}
}

// TestDocOperatorTables: the example of the operators as found in
// docs/fleet-file.md is a valid part of a fleet file, and says what render
// then does.
func TestDocOperatorTables(t *testing.T) {
	tables := strings.Join(docBlock(t, "docs/fleet-file.md", "A cluster that already runs the operators"), "\n")
	src := `
[releases.r]
gpu-operator = "v25.3.4"
network-operator = "v25.4.0"
driver = "570.172.08"

[clusters.prod-a]
environment = "prod"

[[clusters.prod-a.pools]]
name = "h100"
product = "NVIDIA-H100-80GB-HBM3"
nodes = 2

` + tables + `

[[waves]]
name = "prod"
clusters = ["prod-a"]

[policy.clusters.prod-a]
actuator = "gpu-operator"

[promotion]
stable = "r"
`
	f, err := fleet.Parse("fleet.toml", []byte(src))
	if err != nil {
		t.Fatalf("the tables of docs/fleet-file.md do not parse:\n%v\n%s", err, tables)
	}
	c := f.Clusters["prod-a"]
	if c.GPUOperatorRelease() != "gpu-operator-1712345678" || c.DriverManagement() != fleet.DriverManagementClusterPolicy || c.NetworkOperatorNamespace() != "nvidia-network-operator" {
		t.Errorf("the tables of docs/fleet-file.md read as %+v %+v", c.GPUOperator, c.NetworkOperator)
	}
}
