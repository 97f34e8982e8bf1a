package cli

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/internal/charts"
	"github.com/gpufleet/gpufleet/internal/cilog"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/fsutil"
	"github.com/gpufleet/gpufleet/internal/render"
	"github.com/gpufleet/gpufleet/internal/verify"
)

// Annotation modes of verify: auto follows the CI system the job runs in.
const (
	annotationsAuto = "auto"
	annotationsNone = "none"
)

// defaultCodeQuality is the report GitLab's examples name.
const defaultCodeQuality = "gl-code-quality-report.json"

type verifyOptions struct {
	fleetFile, base, revision, kubeconfig, output string
	chartsDir, repo, cacheDir                     string
	annotations, codeQuality                      string
	timeout                                       time.Duration
	noValidate, noGate, refuseSkipGate            bool
	maxSteps                                      int
	// getenv reads the CI's environment (auto annotations).
	getenv func(string) string
}

func newVerifyCommand(s Streams) *cobra.Command {
	o := &verifyOptions{getenv: os.Getenv}
	cmd := &cobra.Command{
		Use:   "verify --base REV [-f fleet.toml] [--kubeconfig K] [--refuse-skip-gate] [-o text|json|yaml] [--annotations github|gitlab]",
		Short: "The fleet repository's required check: is this change one gpufleet would make, with the gate it needs passed?",
		Long: `verify is the check a CI job of the fleet repository runs on every change. It
compares the base revision REV with the work tree:

  rendered   the rendered tree is what the fleet file renders (stale, missing
             and extra files by path)
  validate   the operator charts and gpufleet's objects validate, as
             ` + "`gpufleet validate`" + ` (charts from --charts, --repo or [charts]
             repository; exit 3 when they cannot be read, unless --no-validate)
  lint       ` + "`gpufleet lint`" + ` finds no error
  promotion  the change of [promotion] is exactly a sequence of steps the
             promotion commands (start, promote, approve, pause, resume,
             abort) allow from the base's state; a hand edit that skips a
             wave, approves what does not wait or drops an abort is refused,
             naming the step and the line
  clusters   what each cluster runs (the files of its operators, config and
             lifecycle steps, rendered) changes only through those steps:
             an edit of a release a cluster runs, of the waves under a
             rollout, of the charts' source or of a chart folder in the
             repository is refused at the line that causes it; pools, notes,
             releases no cluster runs and a policy where nothing rolls out
             may change. Waves and policy are never edited in a change that
             takes promotion steps
  gate       each step of that sequence that needs the gate has it passing on
             the live clusters now (--kubeconfig, through the base's
             contexts), at the commit Flux applied (--revision, default
             REV); fails closed. A step whose commit says
             the gate was skipped (--skip-gate) is shown as a warning and not
             gated again; --refuse-skip-gate makes it a failure

--no-gate leaves the live check out (for a local run; it says so).

-o json prints one VerifyReport document (docs/schema/cli.schema.json).
--annotations github prints GitHub Actions workflow commands after the text
(errors and warnings on their file and line); --annotations gitlab writes a
GitLab Code Quality report to --codequality FILE. The default, auto, picks
github when GITHUB_ACTIONS=true and gitlab when GITLAB_CI=true.

Exit codes: 0 every check passed; 1 a check failed; 2 bad command line; 3 a
check could not be made (charts or a cluster unreachable, base not found):
fail closed.`,
		Example: `  gpufleet verify --base origin/main
  gpufleet verify --base origin/main --no-gate --no-validate
  gpufleet verify --base "$BASE_SHA" --refuse-skip-gate --kubeconfig "$KUBECONFIG" --annotations github
  gpufleet verify --base "$CI_MERGE_REQUEST_DIFF_BASE_SHA" --annotations gitlab --codequality gl-code-quality-report.json -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(cmd); err != nil {
				return withCode(ExitUsage, err)
			}
			return o.run(cmd.Context(), s.Out, s.Err)
		},
	}
	cmd.Flags().StringVarP(&o.fleetFile, "file", "f", "fleet.toml", "the fleet file (in the fleet repository)")
	cmd.Flags().StringVar(&o.base, "base", "", "the base revision the change is compared with (required)")
	cmd.Flags().StringVar(&o.revision, "revision", "", "the commit Flux has applied, which the gate expects (default: --base)")
	cmd.Flags().StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig for the gate (default: $KUBECONFIG or ~/.kube/config)")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 30*time.Second, "time the gate allows per cluster")
	addChartSourceFlags(cmd, &o.chartsDir, &o.repo, &o.cacheDir)
	cmd.Flags().BoolVar(&o.noValidate, "no-validate", false, "leave out validate (the operator charts)")
	cmd.Flags().BoolVar(&o.noGate, "no-gate", false, "leave out the gate on the live clusters (local use)")
	cmd.Flags().BoolVar(&o.refuseSkipGate, "refuse-skip-gate", false, "a step committed with --skip-gate fails the check instead of warning")
	cmd.Flags().IntVar(&o.maxSteps, "max-steps", verify.DefaultMaxSteps, "the most promotion steps one change may hold, besides approvals of clusters' canary nodes")
	cmd.Flags().StringVarP(&o.output, "output", "o", formatText, "text, json or yaml")
	cmd.Flags().StringVar(&o.annotations, "annotations", annotationsAuto, "auto, github, gitlab or none")
	cmd.Flags().StringVar(&o.codeQuality, "codequality", "", "with gitlab annotations: the Code Quality report to write (default "+defaultCodeQuality+")")
	_ = cmd.MarkFlagRequired("base")
	return cmd
}

func (o *verifyOptions) validate(cmd *cobra.Command) error {
	switch {
	case !slices.Contains([]string{formatText, formatJSON, formatYAML}, o.output):
		return fmt.Errorf("-o must be text, json or yaml, got %q", o.output)
	case !slices.Contains([]string{annotationsAuto, verify.AnnotationsGitHub, verify.AnnotationsGitLab, annotationsNone}, o.annotations):
		return fmt.Errorf("--annotations must be auto, github, gitlab or none, got %q", o.annotations)
	case o.chartsDir != "" && o.repo != "":
		return errors.New("--charts and --repo cannot be used together")
	case o.timeout <= 0:
		return errors.New("--timeout must be positive")
	case o.maxSteps <= 0:
		return errors.New("--max-steps must be at least 1")
	}
	if o.annotations == annotationsAuto {
		switch {
		case o.getenv("GITHUB_ACTIONS") == "true" && !machineFormat(o.output):
			// Workflow commands share stdout with the text; a JSON
			// document on stdout stays one document.
			o.annotations = verify.AnnotationsGitHub
		case o.getenv("GITLAB_CI") == "true":
			o.annotations = verify.AnnotationsGitLab
		default:
			o.annotations = annotationsNone
		}
	}
	if o.annotations == verify.AnnotationsGitHub && machineFormat(o.output) {
		return fmt.Errorf("--annotations github writes workflow commands on stdout, where -o %s writes its document: use one", o.output)
	}
	if cmd.Flags().Changed("codequality") && o.annotations != verify.AnnotationsGitLab {
		return errors.New("--codequality goes with --annotations gitlab")
	}
	if o.codeQuality == "" {
		o.codeQuality = defaultCodeQuality
	}
	return nil
}

func (o *verifyOptions) run(ctx context.Context, out, errOut io.Writer) error {
	// The fleet file is the change's too: committed as a link out of the
	// repository, it would have verify read, and quote, a file of the job.
	if _, err := fsutil.ResolveWithin(fsutil.RepositoryRoot(filepath.Dir(o.fleetFile)), o.fleetFile); errors.Is(err, fsutil.ErrOutside) {
		return withCode(ExitFailed, fmt.Errorf("the fleet file: %w", err))
	}
	vo := verify.Options{
		FleetFile: o.fleetFile, Base: o.base, Revision: o.revision,
		// In the manifests mode render needs the charts too: the same
		// ones validate reads.
		Render: func(f *fleet.Fleet) (render.Options, error) {
			return renderOptionsFor(ctx, f, cmp.Or(o.chartsDir, o.repo), true, nil)
		},
		NoValidate:    o.noValidate,
		LintApplyTime: 30 * time.Second,
		NoGate:        o.noGate, RefuseSkipGate: o.refuseSkipGate,
		Gate:     verify.LiveGate(o.kubeconfig, o.timeout),
		MaxSteps: o.maxSteps,
	}
	if !o.noValidate {
		vo.Validate = o.validateCharts(errOut)
	}
	rep, err := verify.Run(ctx, vo)
	if err != nil {
		// Could not start: no repository, no such base.
		return withCode(ExitUnknown, err)
	}
	if machineFormat(o.output) {
		if err := writeDocument(out, o.output, verifyDocumentOf(rep)); err != nil {
			return err
		}
	} else {
		printVerify(out, rep)
	}
	switch o.annotations {
	case verify.AnnotationsGitHub:
		// The workflow commands verify means go below the inert stream.
		if err := verify.WriteGitHub(cilog.Commands(out), rep); err != nil {
			return err
		}
	case verify.AnnotationsGitLab:
		if err := writeCodeQuality(o.codeQuality, rep); err != nil {
			return withCode(ExitUnknown, err)
		}
	}
	if code := rep.ExitCode(); code != ExitOK {
		return silentFailure{code: code}
	}
	return nil
}

// validateCharts is validate's check, with its chart source: the flags',
// else the fleet file's [charts] repository.
func (o *verifyOptions) validateCharts(errOut io.Writer) func(context.Context, *fleet.Fleet) (*charts.Report, error) {
	return func(ctx context.Context, f *fleet.Fleet) (*charts.Report, error) {
		src, err := chartSource(o.chartsDir, o.repo, o.cacheDir, chartsOf(f, true))
		if err != nil {
			return nil, err
		}
		p := newProgress(errOut, chartVersions(f))
		defer p.done()
		src = withProgress(src, p)
		return charts.FleetCheck{Fleet: f, Source: src, KubeVersion: charts.DefaultKubeVersion, Render: chartRenderOptions(ctx, f, src)}.Run(ctx)
	}
}

func writeCodeQuality(path string, rep *verify.Report) error {
	var b bytes.Buffer
	if err := verify.WriteGitLab(&b, rep); err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(path, b.Bytes())
}

// VerifyDocument is verify's report as -o json and -o yaml print it.
type VerifyDocument struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	*verify.Report
	ExitCode int `json:"exitCode"`
}

func verifyDocumentOf(rep *verify.Report) VerifyDocument {
	return VerifyDocument{APIVersion: cliAPIVersion, Kind: "VerifyReport", Report: rep, ExitCode: rep.ExitCode()}
}

func printVerify(w io.Writer, rep *verify.Report) {
	fmt.Fprintf(w, "verify %s: base %s, gate at %s\n\n", rep.FleetFile, rep.Base[:min(12, len(rep.Base))], rep.Revision[:min(12, len(rep.Revision))])
	for _, c := range rep.Checks {
		fmt.Fprintf(w, "  %-9s  %-7s  %s\n", c.Name, c.Status, c.Summary)
	}
	if len(rep.Steps) > 0 {
		fmt.Fprintln(w, "\nsteps:")
		for i, s := range rep.Steps {
			gate := ""
			if len(s.Gate) > 0 {
				gate = fmt.Sprintf(" [gate %s: %s]", s.GateStatus, strings.Join(s.Gate, ", "))
			}
			fmt.Fprintf(w, "  %d. %s%s\n", i+1, s.Summary, gate)
		}
	}
	if len(rep.Findings) > 0 {
		fmt.Fprintln(w)
	}
	for _, f := range rep.Findings {
		at := f.File
		if f.Line > 0 {
			at = fmt.Sprintf("%s:%d", f.File, f.Line)
		}
		fmt.Fprintf(w, "%s: %s: %s: %s\n", at, f.Severity, f.Kind, f.Message)
	}
	verdict := map[int]string{ExitOK: "PASS: every check passed", ExitFailed: "FAIL: a check failed", ExitUnknown: "UNKNOWN: a check could not be made (fails closed)"}
	fmt.Fprintf(w, "\nverify %s\n", verdict[rep.ExitCode()])
}
