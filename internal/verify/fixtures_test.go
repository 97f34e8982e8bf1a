package verify

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/fleet/fleettest"
	"github.com/gpufleet/gpufleet/internal/promote"
	"github.com/gpufleet/gpufleet/internal/render"
)

// fleetRepo is a fleet repository in a temporary folder: the example
// fleet, rendered and committed on branch main.
type fleetRepo struct {
	t         *testing.T
	dir, file string
}

func newFleetRepo(t *testing.T) *fleetRepo {
	t.Helper()
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com", "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.com", "GIT_CONFIG_GLOBAL": os.DevNull, "GIT_CONFIG_NOSYSTEM": "1"} {
		t.Setenv(k, v)
	}
	r := &fleetRepo{t: t, dir: t.TempDir()}
	r.file = filepath.Join(r.dir, "fleet.toml")
	if err := os.WriteFile(r.file, fleettest.ExampleWithoutStack(t), 0o644); err != nil {
		t.Fatal(err)
	}
	r.render()
	r.git("init", "-q", "-b", "main")
	r.git("add", "-A")
	r.git("commit", "-q", "-m", "fleet")
	return r
}

func (r *fleetRepo) git(args ...string) string {
	r.t.Helper()
	out, err := exec.Command("git", append([]string{"-C", r.dir}, args...)...).CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// render writes what the fleet file renders, as `gpufleet render` does.
func (r *fleetRepo) render() {
	r.t.Helper()
	f, err := fleet.Load(r.file)
	if err != nil {
		r.t.Fatal(err)
	}
	out, err := render.RenderWith(f, render.Options{})
	if err != nil {
		r.t.Fatal(err)
	}
	if _, err := render.Write(out, r.dir); err != nil {
		r.t.Fatal(err)
	}
}

// passingGate is a gate that passes, for steps made by the commands
// before the live check is the subject.
func passingGate(context.Context, *fleet.Fleet, []string) (bool, string, error) {
	return true, "checked by the test", nil
}

// apply makes one commit by the promotion commands' own code path.
func (r *fleetRepo) apply(m promote.Mutation, skipGate string) {
	r.t.Helper()
	r.applyWith(nil, m, skipGate)
}

// applyWith is apply, rendering with opts (the charts, in the manifests
// mode).
func (r *fleetRepo) applyWith(opts func(*fleet.Fleet) (render.Options, error), m promote.Mutation, skipGate string) {
	r.t.Helper()
	_, err := promote.Apply(context.Background(), promote.Options{
		FleetFile: r.file, Mutation: m, Gate: passingGate, SkipGate: skipGate != "", Reason: skipGate, Render: opts,
		Canary: func(context.Context, *fleet.Fleet, string) (bool, string, error) { return true, "waits", nil },
	})
	if err != nil {
		r.t.Fatal(err)
	}
}

func approve(name string) promote.Mutation {
	return func(f *fleet.Fleet) (promote.Step, error) { return promote.Approve(f, name) }
}

func start(release string) promote.Mutation {
	return func(f *fleet.Fleet) (promote.Step, error) { return promote.Start(f, release) }
}

// handEdit changes [promotion] as a person would in an editor, re-renders
// (so that only the promotion check can object) and commits.
func (r *fleetRepo) handEdit(edit func(p *fleet.Promotion)) {
	r.t.Helper()
	f, err := fleet.Load(r.file)
	if err != nil {
		r.t.Fatal(err)
	}
	p := f.Promotion
	p.Approved = append([]string(nil), p.Approved...)
	if p.Rollout != nil {
		ro := *p.Rollout
		p.Rollout = &ro
	}
	edit(&p)
	src, err := promote.Edit(f.Source, f.Promotion, p)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(r.file, src, 0o644); err != nil {
		r.t.Fatal(err)
	}
	r.render()
	r.git("add", "-A")
	r.git("commit", "-q", "-m", "edit [promotion] by hand")
}

// branch starts a case's branch from main.
func (r *fleetRepo) branch(name string) {
	r.t.Helper()
	r.git("checkout", "-q", "-B", name, "main")
}

// verify runs verify against main, without charts or live clusters
// unless o says otherwise.
func (r *fleetRepo) verify(o Options) *Report {
	r.t.Helper()
	o.FleetFile = r.file
	if o.Base == "" {
		o.Base = "main"
	}
	if o.Gate == nil {
		o.NoGate = true
	}
	o.NoValidate = o.Validate == nil
	rep, err := Run(context.Background(), o)
	if err != nil {
		r.t.Fatal(err)
	}
	return rep
}
