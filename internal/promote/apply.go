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

// Options control Apply.
type Options struct {
	FleetFile string
	Mutation  Mutation
	// Gate runs when the step names clusters to check, unless SkipGate.
	Gate GateFunc
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
// and one commit. Any failure leaves fleet.toml, the rendered files and the
// git index as they were.
func Apply(ctx context.Context, o Options) (*Result, error) {
	f, err := fleet.Load(o.FleetFile)
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
	gateLine := ""
	if len(step.Gate) > 0 {
		switch {
		case o.SkipGate:
			if strings.TrimSpace(o.Reason) == "" {
				return nil, fmt.Errorf("%w: --skip-gate needs --reason", ErrRefused)
			}
			gateLine = fmt.Sprintf("Gate SKIPPED for %s. Reason: %s", strings.Join(step.Gate, ", "), o.Reason)
		case o.Gate == nil:
			return nil, fmt.Errorf("%w: no gate to check %s with", ErrRefused, strings.Join(step.Gate, ", "))
		default:
			passed, summary, err := o.Gate(ctx, f, step.Gate)
			if err != nil {
				return nil, fmt.Errorf("%w: gate: %w", ErrRefused, err)
			}
			if !passed {
				return nil, fmt.Errorf("%w: the gate did not pass for %s: %s", ErrRefused, strings.Join(step.Gate, ", "), summary)
			}
			gateLine = "Gate passed: " + summary
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

	// From here on files change: undo everything on any failure.
	undo := func() {
		_ = fsutil.WriteFileAtomic(o.FleetFile, f.Source)
		_, _ = render.Write(prevOut, dir)
		_ = git(dir, nil, "reset", "-q", "--", ".")
	}
	if err := fsutil.WriteFileAtomic(o.FleetFile, newSrc); err != nil {
		undo()
		return nil, err
	}
	if res.Changes, err = render.Write(out, dir); err != nil {
		undo()
		return nil, fmt.Errorf("render: %w (nothing was changed)", err)
	}
	paths := []string{filepath.Base(o.FleetFile)}
	for _, c := range res.Changes {
		paths = append(paths, c.Path)
	}
	if err := git(dir, nil, append([]string{"add", "-A", "--"}, paths...)...); err != nil {
		undo()
		return nil, err
	}
	if o.NoCommit {
		return res, nil
	}
	if err := git(dir, []byte(msg), "commit", "-q", "-F", "-"); err != nil {
		undo()
		return nil, fmt.Errorf("%w (nothing was changed)", err)
	}
	res.Committed = true
	return res, nil
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
	return step, newSrc, next, nil
}

func message(step Step, gateLine string) string {
	var b strings.Builder
	b.WriteString("gpufleet: " + step.Summary + "\n\n")
	for _, d := range step.Details {
		b.WriteString(d + "\n")
	}
	if gateLine != "" {
		b.WriteString(gateLine + "\n")
	}
	return b.String()
}

// checkClean refuses to run over uncommitted edits of the fleet file: the
// commit would carry them without saying so.
func checkClean(dir, file string) error {
	var out bytes.Buffer
	cmd := exec.Command("git", "-C", dir, "status", "--porcelain", "--", file)
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s is not in a git repository: promotion commands commit their change (%w)", dir, err)
	}
	if out.Len() > 0 {
		return fmt.Errorf("%s has uncommitted changes: commit or stash them first", file)
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
