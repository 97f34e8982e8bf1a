package verify

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/internal/charts"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/lint"
	"github.com/gpufleet/gpufleet/internal/promote"
	"github.com/gpufleet/gpufleet/internal/render"
)

// CheckFleet is the check that the work tree's fleet file loads; when it
// does not, nothing else can be checked.
const CheckFleet = "fleet"

// GateFunc runs the gate on clusters of f, expecting Flux to have applied
// revision. It never fails: what it could not read is an Unknown check.
type GateFunc func(ctx context.Context, f *fleet.Fleet, clusters []string, revision string) *gate.Report

// LiveGate is the gate on the live clusters, each through its context of
// kubeconfig within timeout, judged as a promotion judges it (an aborted
// rollout's clusters by their nodes, see promote.JudgeAborted).
func LiveGate(kubeconfig string, timeout time.Duration) GateFunc {
	return func(ctx context.Context, f *fleet.Fleet, clusters []string, revision string) *gate.Report {
		rep := gate.Run(ctx, gate.Options{Fleet: f, Clusters: clusters, Revision: revision, Kubeconfig: kubeconfig, Timeout: timeout, Now: time.Now})
		promote.JudgeAborted(f, rep)
		return rep
	}
}

// Options are what Run compares and with what.
type Options struct {
	// FleetFile is the work tree's fleet file, in the fleet repository.
	FleetFile string
	// Base is the revision the change is compared with (a branch, a tag,
	// a commit).
	Base string
	// Revision is the commit the gate expects Flux to have applied;
	// default Base: the change is not merged, so the clusters run the base.
	Revision string
	// Render gives render what it needs beyond the fleet file, as
	// `gpufleet render` has it; nil renders with render.Options{}.
	Render func(*fleet.Fleet) (render.Options, error)
	// Validate checks the operator charts as `gpufleet validate` does; an
	// error means it could not (charts not found). Nil, or NoValidate,
	// leaves the check out.
	Validate   func(context.Context, *fleet.Fleet) (*charts.Report, error)
	NoValidate bool
	// LintApplyTime is lint's time of one apply.
	LintApplyTime time.Duration
	// Gate checks the live clusters; NoGate leaves the live check out.
	Gate   GateFunc
	NoGate bool
	// RefuseSkipGate makes a step committed with --skip-gate a failure
	// rather than a warning: the repository's setting.
	RefuseSkipGate bool
	// MaxSteps bounds the search for the promotion steps (DefaultMaxSteps).
	MaxSteps int
}

// Run compares the base revision with the work tree. An error means
// verify could not start (no git repository, no such base); everything it
// found, or could not find out, once started, is in the Report.
func Run(ctx context.Context, o Options) (*Report, error) {
	r, err := openRepo(o.FleetFile)
	if err != nil {
		return nil, err
	}
	base, err := r.resolve(o.Base)
	if err != nil {
		return nil, err
	}
	rev := base
	if o.Revision != "" {
		if rev, err = r.resolve(o.Revision); err != nil {
			return nil, err
		}
	}
	fleetPath := r.path(filepath.Base(o.FleetFile))
	rep := &Report{Base: base, Revision: rev, FleetFile: fleetPath, Steps: []StepReport{}, Checks: []Check{}, Findings: []Finding{}}
	head, err := fleet.LoadContext(ctx, o.FleetFile)
	var probs fleet.Problems
	switch {
	case errors.As(err, &probs):
		for _, p := range probs {
			rep.add(Finding{Kind: CheckFleet, File: fleetPath, Line: p.Line, Message: strings.TrimPrefix(p.Key+": ", ": ") + p.Message, Severity: SeverityError})
		}
		rep.addCheck(CheckFleet, StatusFailed, fmt.Sprintf("%d problem(s) in %s: nothing else was checked", len(probs), fleetPath))
		return rep, nil
	case err != nil:
		return nil, err
	}
	v := &run{o: o, r: r, rep: rep, head: head, fleetPath: fleetPath}
	v.rendered()
	v.validate(ctx)
	v.lint()
	b, unknown := v.loadBase(base)
	var baseFleet *fleet.Fleet
	var baseOpts render.Options
	if b != nil {
		defer b.cleanup()
		baseFleet, baseOpts = b.f, b.opts
	}
	steps, onHead := v.promotion(base, baseFleet, unknown)
	v.clusters(baseFleet, onHead, steps, baseOpts)
	v.gate(ctx, steps, baseFleet)
	return rep, nil
}

// run is one verify's state, shared by its checks.
type run struct {
	o         Options
	r         *repo
	rep       *Report
	head      *fleet.Fleet
	fleetPath string
}

// at places a finding at key of the head's fleet file.
func (v *run) at(key string) int {
	line, _ := v.head.Position(key)
	return line
}

func (v *run) rendered() {
	opts := render.Options{}
	if v.o.Render != nil {
		var err error
		if opts, err = v.o.Render(v.head); err != nil {
			v.rep.addCheck(CheckRendered, StatusUnknown, "could not render: "+err.Error())
			return
		}
	}
	out, err := render.RenderWith(v.head, opts)
	if err != nil {
		v.rep.add(Finding{Kind: CheckRendered, File: v.fleetPath, Line: 1, Message: "render: " + err.Error(), Severity: SeverityError})
		v.rep.addCheck(CheckRendered, StatusFailed, "the fleet file does not render")
		return
	}
	changes, err := render.Diff(out, v.r.dir)
	if err != nil {
		v.rep.addCheck(CheckRendered, StatusUnknown, "could not compare the rendered tree: "+err.Error())
		return
	}
	if len(changes) == 0 {
		v.rep.addCheck(CheckRendered, StatusPassed, fmt.Sprintf("the rendered tree is what %s renders", v.fleetPath))
		return
	}
	what := map[string]string{
		render.ActionAdd:    "missing: %s renders it, the tree does not have it",
		render.ActionChange: "stale: not what %s renders",
		render.ActionRemove: "extra: rendered once, %s no longer renders it",
	}
	for _, c := range changes {
		v.rep.add(Finding{Kind: CheckRendered, File: v.r.path(c.Path), Message: fmt.Sprintf(what[c.Action], v.fleetPath) + "; run `gpufleet render` and commit", Severity: SeverityError})
	}
	v.rep.addCheck(CheckRendered, StatusFailed, fmt.Sprintf("%d file(s) not up to date with %s", len(changes), v.fleetPath))
}

func (v *run) validate(ctx context.Context) {
	if v.o.NoValidate || v.o.Validate == nil {
		v.rep.addCheck(CheckValidate, StatusSkipped, "--no-validate: the operator charts were not checked")
		return
	}
	cr, err := v.o.Validate(ctx, v.head)
	if err != nil {
		v.rep.add(Finding{Kind: CheckValidate, File: v.fleetPath, Line: v.at("charts"), Message: "could not validate: " + err.Error(), Severity: SeverityError})
		v.rep.addCheck(CheckValidate, StatusUnknown, "the operator charts could not be read: give --charts DIR or --repo URL, or --no-validate to leave the check out")
		return
	}
	failed, unknown := len(cr.Findings), 0
	for _, f := range cr.Findings {
		chart := ""
		if f.Chart != "" {
			chart = fmt.Sprintf(" (%s %s)", f.Chart, f.Version)
		}
		v.rep.add(Finding{Kind: CheckValidate, File: v.fleetPath, Line: v.at("releases." + f.Release), Message: fmt.Sprintf("release %s%s: %s: %s", f.Release, chart, f.Object(), f.Message()), Severity: SeverityError})
	}
	for _, f := range cr.Failures {
		msg := fmt.Sprintf("release %s (%s %s): could not check: %s", f.Release, f.Chart, f.Version, f.Error)
		if f.ValuesRefused {
			failed++
			msg = fmt.Sprintf("release %s (%s %s): values refused: %s", f.Release, f.Chart, f.Version, f.Error)
		} else {
			unknown++
		}
		v.rep.add(Finding{Kind: CheckValidate, File: v.fleetPath, Line: v.at("releases." + f.Release), Message: msg, Severity: SeverityError})
	}
	switch {
	case failed > 0:
		v.rep.addCheck(CheckValidate, StatusFailed, fmt.Sprintf("%d problem(s) in the charts and objects of %d release(s)", failed, len(v.head.Releases)))
	case unknown > 0:
		v.rep.addCheck(CheckValidate, StatusUnknown, fmt.Sprintf("%d chart(s) could not be checked: give --charts DIR or --repo URL, or --no-validate to leave the check out", unknown))
	default:
		v.rep.addCheck(CheckValidate, StatusPassed, fmt.Sprintf("%d custom resource(s) in %d release(s) valid", cr.Objects, len(v.head.Releases)))
	}
}

func (v *run) lint() {
	lr, err := lint.Run(v.r.dir, lint.Options{ApplyTime: v.o.LintApplyTime})
	if err != nil {
		v.rep.addCheck(CheckLint, StatusUnknown, "could not lint: "+err.Error())
		return
	}
	for _, f := range lr.Findings {
		sev := SeverityWarning
		if f.Severity == lint.Error {
			sev = SeverityError
		}
		v.rep.add(Finding{Kind: CheckLint, File: v.r.path(f.File), Line: f.Line, Message: fmt.Sprintf("%s [%s]; fix: %s", f.Message, f.Rule, f.Fix), Severity: sev})
	}
	if n := lr.Errors(); n > 0 {
		v.rep.addCheck(CheckLint, StatusFailed, fmt.Sprintf("%d error(s), %d warning(s)", n, len(lr.Findings)-n))
		return
	}
	v.rep.addCheck(CheckLint, StatusPassed, fmt.Sprintf("no error, %d warning(s)", len(lr.Findings)))
}

// gatedStep is a step of the sequence found, with the state it starts from
// and the commit that recorded it.
type gatedStep struct {
	step   promote.Step
	before fleet.Promotion
	commit *commit
}

// promotion finds the steps of the change of [promotion] from base, the
// base's fleet file (nil when it could not be read, and unknown says why).
// It returns the steps, nil when there is none (the check failed or could
// not be made), and the head's fleet file in the base's promotion state,
// nil when that state does not hold there.
func (v *run) promotion(base string, baseFleet *fleet.Fleet, unknown string) ([]gatedStep, *fleet.Fleet) {
	fail := func(status, summary string) ([]gatedStep, *fleet.Fleet) {
		v.rep.addCheck(CheckPromotion, status, summary)
		return nil, nil
	}
	if baseFleet == nil {
		return fail(StatusUnknown, unknown)
	}
	// The base's [promotion] must still mean something on the head's
	// fleet (its rollout's release and wave exist, its stage does): the
	// head's fleet file, with the base's [promotion] written in, must load.
	src, err := promote.Edit(v.head.Source, v.head.Promotion, baseFleet.Promotion)
	var onHead *fleet.Fleet
	if err == nil {
		onHead, err = fleet.Parse(v.head.Path, src)
	}
	if err != nil {
		v.rep.add(Finding{Kind: CheckPromotion, File: v.fleetPath, Line: v.at("promotion"), Message: fmt.Sprintf("the base's promotion state (%s) does not hold on this fleet file: %v; change waves and releases under a rollout only once it is stable or its abort has ended", where(baseFleet, baseFleet.Promotion), oneLine(err)), Severity: SeverityError})
		return fail(StatusFailed, "the change edits what the rollout in flight stands on")
	}
	fail = func(status, summary string) ([]gatedStep, *fleet.Fleet) {
		v.rep.addCheck(CheckPromotion, status, summary)
		return nil, onHead
	}
	commits, err := v.r.commits(base)
	if err != nil {
		return fail(StatusUnknown, "could not read the commits since the base: "+err.Error())
	}
	skipped := func(st promote.Step) bool {
		c := findCommit(commits, st, nil)
		return c != nil && c.skipped != ""
	}
	s := Search{Head: v.head, Base: onHead.Promotion, MaxSteps: v.o.MaxSteps, GateSkipped: skipped}
	steps, ok := FindSteps(s)
	if !ok {
		for _, ref := range Diagnose(s) {
			v.rep.add(Finding{Kind: CheckPromotion, Step: ref.Step, File: v.fleetPath, Line: v.at(ref.Key), Message: ref.Message, Severity: SeverityError})
		}
		// What the commits say was taken without the gate is shown even
		// when the steps are not found: it is loud whatever else failed.
		for i := range commits {
			if c := &commits[i]; c.skipped != "" {
				v.skippedGate(strings.TrimPrefix(c.subject, commitPrefix), c)
			}
		}
		return fail(StatusFailed, "the change of [promotion] is not a sequence of promotion commands: it was edited by hand")
	}
	var out []gatedStep
	used := map[*commit]bool{}
	prev := onHead.Promotion
	var names []string
	for _, st := range steps {
		c := findCommit(commits, st, used)
		if c != nil {
			used[c] = true
		}
		out = append(out, gatedStep{step: st, before: prev, commit: c})
		sr := StepReport{Summary: st.Summary, Gate: st.Gate}
		if c != nil {
			sr.Commit = c.hash
		}
		v.rep.Steps = append(v.rep.Steps, sr)
		names = append(names, st.Summary)
		prev = st.Promotion
	}
	if len(steps) == 0 {
		v.rep.addCheck(CheckPromotion, StatusPassed, "[promotion] is unchanged")
	} else {
		v.rep.addCheck(CheckPromotion, StatusPassed, fmt.Sprintf("%d step(s) the promotion commands allow: %s", len(steps), strings.Join(names, "; ")))
	}
	return out, onHead
}

// findCommit returns the first commit not in used whose subject is the
// one the promotion command writes for st.
func findCommit(commits []commit, st promote.Step, used map[*commit]bool) *commit {
	for i := range commits {
		if c := &commits[i]; c.subject == commitPrefix+st.Summary && !used[c] {
			return c
		}
	}
	return nil
}

// gate gates the steps that need it, on the live clusters reached through
// the base's kubeconfig contexts: the change's own mapping is input, and a
// change that moves a cluster's context while it needs the gate there is
// refused (the gate would judge one cluster and Flux apply to another).
func (v *run) gate(ctx context.Context, steps []gatedStep, base *fleet.Fleet) {
	if v.rep.Check(CheckPromotion).Status != StatusPassed {
		v.rep.addCheck(CheckGate, StatusSkipped, "no sequence of promotion steps to gate")
		return
	}
	var gated []int
	for i, gs := range steps {
		if len(gs.step.Gate) > 0 {
			gated = append(gated, i)
		}
	}
	if len(gated) == 0 {
		v.rep.addCheck(CheckGate, StatusPassed, "no step of the change needs the gate")
		return
	}
	line := v.at("promotion.rollout")
	failed, unknown, skipped, passed := 0, 0, 0, 0
	failed += v.contextsMoved(steps, gated, base)
	for _, i := range gated {
		gs, sr := steps[i], &v.rep.Steps[i]
		if c := gs.commit; c != nil && c.skipped != "" && gs.step.GateRequired == "" {
			if v.skippedGate(gs.step.Summary, c) {
				failed++
			}
			skipped++
			sr.GateStatus = StatusSkipped
			continue
		}
		if v.o.NoGate || v.o.Gate == nil {
			sr.GateStatus = StatusSkipped
			continue
		}
		gr := v.o.Gate(ctx, v.head.WithPromotion(gs.before).WithContextsOf(base), gs.step.Gate, v.rep.Revision)
		switch gr.Verdict() {
		case gate.Pass:
			passed++
			sr.GateStatus = StatusPassed
			continue
		case gate.Fail:
			failed++
			sr.GateStatus = StatusFailed
		default:
			unknown++
			sr.GateStatus = StatusUnknown
		}
		for _, c := range gr.Failed() {
			msg := fmt.Sprintf("gate %s on cluster %s, check %s: expected %s, observed %s", c.Status, c.Cluster, c.Name, c.Expected, c.Observed)
			if c.Message != "" {
				msg += ": " + c.Message
			}
			v.rep.add(Finding{Kind: CheckGate, Step: gs.step.Summary, File: v.fleetPath, Line: line, Message: msg, Severity: SeverityError})
		}
	}
	if v.o.NoGate || v.o.Gate == nil {
		summary := fmt.Sprintf("--no-gate: the live clusters were not checked (%d step(s) need the gate)", len(gated)-skipped)
		status := StatusSkipped
		if failed > 0 {
			status = StatusFailed
		}
		v.rep.addCheck(CheckGate, status, summary)
		return
	}
	summary := fmt.Sprintf("%d step(s) gated at %s: %d passed, %d failed, %d could not be checked, %d skipped by their commit", len(gated), short(v.rep.Revision), passed, failed, unknown, skipped)
	switch {
	case failed > 0:
		v.rep.addCheck(CheckGate, StatusFailed, summary)
	case unknown > 0:
		v.rep.addCheck(CheckGate, StatusUnknown, summary)
	default:
		v.rep.addCheck(CheckGate, StatusPassed, summary)
	}
}

// contextsMoved refuses each cluster a gated step needs whose kubeconfig
// context the change moves, and returns how many it refused.
func (v *run) contextsMoved(steps []gatedStep, gated []int, base *fleet.Fleet) int {
	seen := map[string]bool{}
	n := 0
	for _, i := range gated {
		for _, name := range steps[i].step.Gate {
			was, now := base.Clusters[name], v.head.Clusters[name]
			if seen[name] || was == nil || now == nil || was.Context == now.Context {
				continue
			}
			seen[name] = true
			n++
			v.rep.add(Finding{Kind: CheckGate, Step: steps[i].step.Summary, File: v.fleetPath, Line: v.at("clusters." + name + ".context"), Severity: SeverityError,
				Message: fmt.Sprintf("the kubeconfig context of cluster %s changes (%s → %s) in a change that needs the gate there: the gate reaches it as the base says; change the context in a change of its own", name, was.Context, now.Context)})
		}
	}
	return n
}

// skippedGate reports, loudly, a step committed with --skip-gate, and
// says whether the repository refuses it.
func (v *run) skippedGate(step string, c *commit) bool {
	sev, note := SeverityWarning, "it is not gated again here"
	if v.o.RefuseSkipGate {
		sev, note = SeverityError, "this repository refuses it (--refuse-skip-gate)"
	}
	v.rep.add(Finding{Kind: KindGateSkipped, Step: step, File: v.fleetPath, Line: v.at("promotion.rollout"), Severity: sev,
		Message: fmt.Sprintf("GATE SKIPPED: `%s` was committed with --skip-gate (commit %s): %s; %s", step, short(c.hash), c.skipped, note)})
	return v.o.RefuseSkipGate
}

func short(sha string) string { return sha[:min(12, len(sha))] }

// oneLine joins a multi-line error (fleet problems) for one finding.
func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }
