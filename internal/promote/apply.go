package promote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/fsutil"
	"github.com/gpufleet/gpufleet/internal/render"
)

// Mutation computes a promotion step from the fleet as it is.
type Mutation func(*fleet.Fleet) (Step, error)

// GateFunc checks clusters before a promotion; it returns whether they
// passed and a one-line summary for the commit message.
type GateFunc func(ctx context.Context, f *fleet.Fleet, clusters []string) (passed bool, summary string, err error)

// CanaryFunc reads whether cluster's DriverRollout for the rollout under
// way waits for the approval of its canary node(s); observed says what it
// saw, for the refusal when it does not.
type CanaryFunc func(ctx context.Context, f *fleet.Fleet, cluster string) (waiting bool, observed string, err error)

// Options control Apply.
type Options struct {
	FleetFile string
	Mutation  Mutation
	// Gate runs when the step names clusters to check, unless SkipGate.
	Gate GateFunc
	// Canary checks, before a cluster's canary is approved, that it waits.
	Canary CanaryFunc
	// SkipGate skips the gate in an emergency; Reason goes into the commit.
	SkipGate bool
	Reason   string
	// NoCommit leaves the change staged instead of committing it.
	NoCommit bool
	// Render gives render what it needs beyond the fleet file (the operator
	// charts in the manifests mode); nil renders with render.Options{}.
	Render func(*fleet.Fleet) (render.Options, error)
}

// renderWith renders f with the options ro builds (none when nil).
func renderWith(f *fleet.Fleet, ro func(*fleet.Fleet) (render.Options, error)) (*render.Output, error) {
	opts := render.Options{}
	if ro != nil {
		var err error
		if opts, err = ro(f); err != nil {
			return nil, err
		}
	}
	return render.RenderWith(f, opts)
}

// Result is what Apply did.
type Result struct {
	Step    Step
	Message string
	// Changes are the rendered files that changed.
	Changes   []render.Change
	Committed bool
}

// ErrRefused marks a step the state machine or the gate refused: nothing
// was changed.
var ErrRefused = errors.New("refused")

// Apply performs one promotion command: the edit of fleet.toml, the render,
// and one commit holding exactly the files gpufleet wrote. Any failure
// leaves fleet.toml, the rendered files and the git index as they were.
func Apply(ctx context.Context, o Options) (*Result, error) {
	f, err := fleet.LoadContext(ctx, o.FleetFile)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(o.FleetFile)
	if err := checkClean(dir, filepath.Base(o.FleetFile)); err != nil {
		return nil, err
	}
	step, newSrc, next, err := stepFleet(f, o.Mutation)
	if err != nil {
		return nil, err
	}
	if err := checkActuators(dir, f, next, &step); err != nil {
		return nil, err
	}
	gateLine, err := runGate(ctx, o, f, step)
	if err != nil {
		return nil, err
	}
	if step.Canary != "" {
		if err := checkCanary(ctx, o.Canary, f, step); err != nil {
			return nil, err
		}
	}
	prevOut, err := renderWith(f, o.Render)
	if err != nil {
		return nil, err
	}
	out, err := renderWith(next, o.Render)
	if err != nil {
		return nil, err
	}
	msg := message(step, gateLine)
	res := &Result{Step: step, Message: msg}

	// From here on files change: undo everything on any failure. Only the
	// files this command staged are unstaged again.
	var staged []string
	undo := func() {
		_ = fsutil.WriteFileAtomic(o.FleetFile, f.Source)
		// Going back to what was there: the driver management guard
		// judged the step's own render already.
		_, _ = render.WriteWith(prevOut, dir, render.WriteOptions{Restore: true})
		if len(staged) > 0 {
			_ = git(dir, nil, append([]string{"reset", "-q", "--"}, staged...)...)
		}
	}
	if err := fsutil.WriteFileAtomic(o.FleetFile, newSrc); err != nil {
		undo()
		return nil, err
	}
	if res.Changes, err = render.Write(out, dir); err != nil {
		undo()
		return nil, fmt.Errorf("render: %w (nothing was changed)", err)
	}
	written := []string{filepath.Base(o.FleetFile)}
	for _, c := range res.Changes {
		written = append(written, filepath.FromSlash(c.Path))
	}
	staged = written
	if err := git(dir, nil, append([]string{"add", "-A", "--"}, written...)...); err != nil {
		undo()
		return nil, err
	}
	if o.NoCommit {
		return res, nil
	}
	// The paths limit the commit to what this command wrote, even if a
	// hook staged something else meanwhile.
	if err := git(dir, []byte(msg), append([]string{"commit", "-q", "-F", "-", "--"}, written...)...); err != nil {
		undo()
		return nil, fmt.Errorf("%w (nothing was changed)", err)
	}
	res.Committed = true
	return res, nil
}

// runGate checks the step's clusters, or records why they were not, and
// returns the commit's line about it ("" when the step needs no gate).
func runGate(ctx context.Context, o Options, f *fleet.Fleet, step Step) (string, error) {
	if len(step.Gate) == 0 {
		return "", nil
	}
	clusters := strings.Join(step.Gate, ", ")
	switch {
	case o.SkipGate && step.GateRequired != "":
		return "", fmt.Errorf("%w: --skip-gate cannot be used for this step: %s", ErrRefused, step.GateRequired)
	case o.SkipGate:
		if strings.TrimSpace(o.Reason) == "" {
			return "", fmt.Errorf("%w: --skip-gate needs --reason", ErrRefused)
		}
		return fmt.Sprintf("Gate SKIPPED for %s. Reason: %s", clusters, o.Reason), nil
	case o.Gate == nil:
		return "", fmt.Errorf("%w: no gate to check %s with", ErrRefused, clusters)
	}
	passed, summary, err := o.Gate(ctx, f, step.Gate)
	if err != nil {
		return "", fmt.Errorf("%w: gate: %w", ErrRefused, err)
	}
	if !passed {
		return "", fmt.Errorf("%w: the gate did not pass for %s: %s", ErrRefused, clusters, summary)
	}
	return "Gate passed: " + summary, nil
}

// checkCanary refuses to approve a cluster's canary node(s) before its
// DriverRollout waits for that approval, naming what does wait.
func checkCanary(ctx context.Context, check CanaryFunc, f *fleet.Fleet, step Step) error {
	if check == nil {
		return fmt.Errorf("%w: no way to see whether the canary of cluster %s waits for approval", ErrRefused, step.Canary)
	}
	waiting, observed, err := check(ctx, f, step.Canary)
	if err != nil {
		return fmt.Errorf("%w: canary of cluster %s: %w", ErrRefused, step.Canary, err)
	}
	if waiting {
		return nil
	}
	var others []string
	for _, w := range Waits(f) {
		if w.Approval == "" || w.Cluster == step.Canary {
			continue
		}
		if w.Cluster != "" {
			if ok, _, err := check(ctx, f, w.Cluster); err != nil || !ok {
				continue
			}
		}
		others = append(others, w.Approval)
	}
	does := "nothing does yet"
	if len(others) > 0 {
		does = "waiting: " + strings.Join(others, ", ")
	}
	return fmt.Errorf("%w: the canary node(s) of cluster %s do not wait for approval yet (%s); %s", ErrRefused, step.Canary, observed, does)
}

// stepFleet runs the mutation on f and returns the step, the edited file
// and the fleet it parses into; nothing is written.
func stepFleet(f *fleet.Fleet, m Mutation) (Step, []byte, *fleet.Fleet, error) {
	step, err := m(f)
	if err != nil {
		return Step{}, nil, nil, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	newSrc, err := Edit(f.Source, f.Promotion, step.Promotion)
	if err != nil {
		return Step{}, nil, nil, err
	}
	next, err := fleet.Parse(f.Path, newSrc)
	if err != nil {
		return Step{}, nil, nil, fmt.Errorf("the edited fleet file is invalid (nothing was changed): %w", err)
	}
	step.Removals = Removals(f, next)
	return step, newSrc, next, nil
}

func message(step Step, gateLine string) string {
	var b strings.Builder
	b.WriteString("gpufleet: " + step.Summary + "\n\n")
	for _, d := range step.Details {
		b.WriteString(d + "\n")
	}
	for _, r := range step.Removals {
		b.WriteString("Removal: " + r.Message + ".\n")
	}
	for _, w := range step.Warnings {
		b.WriteString("Warning: " + w + ".\n")
	}
	if gateLine != "" {
		b.WriteString(gateLine + "\n")
	}
	return b.String()
}

// checkClean refuses to run over uncommitted edits of the fleet file, or
// over anything already staged: the commit would carry them without saying
// so. A promotion commit holds exactly the files gpufleet wrote.
func checkClean(dir, file string) error {
	var out bytes.Buffer
	cmd := exec.Command("git", "-C", dir, "status", "--porcelain", "--", file)
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s is not in a git repository: promotion commands commit their change (%w)", dir, err)
	}
	if out.Len() > 0 {
		// A refusal (exit 1), not "could not check": the state is known.
		return fmt.Errorf("%w: %s has uncommitted changes: commit or stash them first", ErrRefused, file)
	}
	out.Reset()
	cmd = exec.Command("git", "-C", dir, "diff", "--cached", "--name-only", "-z")
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("git diff --cached in %s: %w", dir, err)
	}
	if staged := strings.Split(strings.TrimRight(out.String(), "\x00"), "\x00"); out.Len() > 0 {
		return fmt.Errorf("%w: other changes are staged (%s): a promotion commit holds only the files gpufleet writes; commit or unstage them first (git restore --staged PATH)", ErrRefused, strings.Join(staged, ", "))
	}
	return nil
}

// git runs git in dir (so the user's hooks and signing apply).
func git(dir string, stdin []byte, args ...string) error {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Env = os.Environ()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return nil
}
