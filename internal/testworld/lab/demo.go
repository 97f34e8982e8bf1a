package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// DemoOptions configure Demo.
type DemoOptions struct {
	// Out receives the progress lines and the summary.
	Out io.Writer
	// Root is the repository root: the DriverRollout CRD, and the real
	// operator charts in ../shared/operators beside it. "." when empty.
	Root string
	// Dir holds the testbed (kubeconfig, logs, the fleet repository, the
	// story's log); a temporary folder when empty.
	Dir string
	// Keep leaves the testbed running after the story, until ctx ends.
	Keep bool
	// Report, when set, is where the HTML report is written: waves,
	// clusters, every step, and each cluster's nodes and phases over time.
	Report string
	// ArgoCD plays [ArgoCDStory]: staging on Argo CD, prod on Flux.
	ArgoCD bool
}

// StepResult is one step of the story and how it went.
type StepResult struct {
	Name string
	Took time.Duration
	// Note says what was seen, e.g. the measured drift repair time.
	Note string
	Err  error
}

// Summary is what Demo did.
type Summary struct {
	Steps      []StepResult
	Took       time.Duration
	Kubeconfig string
	// Repo is the fleet repository's work tree (gone once the testbed stops
	// unless DemoOptions.Dir was given).
	Repo string
}

// Failed reports whether any step failed.
func (s *Summary) Failed() bool {
	for _, st := range s.Steps {
		if st.Err != nil {
			return true
		}
	}
	return false
}

// Demo starts a local testbed of two clusters (staging and prod, each with
// its own API server, Flux, lifecycle controller, the real GPU Operator and
// simulated GPU nodes) and a git server, and plays [FleetStory] on it, the
// story the end-to-end suite checks: render and first sync, drift repaired
// by Flux, a release promoted from staging to prod with an approval, and a
// drill release that fails at the staging canary node, is refused by the
// gate and is aborted. Each step's name and what it saw go to o.Out as it
// happens, everything a step logs (each gpufleet command and its output)
// to story.log in the testbed's folder; the summary is returned and
// printed. Everything is stopped when Demo returns (with Keep, once ctx
// ends).
func Demo(ctx context.Context, o DemoOptions) (*Summary, error) {
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Root == "" {
		o.Root = "."
	}
	began := time.Now()
	sum := &Summary{}
	fmt.Fprintf(o.Out, "gpufleet-lab demo: starting two clusters (%s, %s), Flux, a git server and %d simulated GPU nodes per cluster...\n", Staging, Prod, PoolNodes)
	so, story := StoryOptions(), FleetStory(false)
	if o.ArgoCD {
		so, story = ArgoCDStoryOptions(), ArgoCDStory()
	}
	so.Root, so.Dir, so.GitUser = o.Root, o.Dir, "demo"
	so.OnError = func(err error) { fmt.Fprintf(o.Out, "  ! %v\n", err) }
	w, err := Start(ctx, so)
	if err != nil {
		return nil, fmt.Errorf("start the testbed: %w", err)
	}
	defer func() {
		fmt.Fprintln(o.Out, "stopping the testbed...")
		if err := w.Stop(); err != nil {
			fmt.Fprintf(o.Out, "stop: %v\n", err)
		}
	}()
	sum.Kubeconfig, sum.Repo = w.Testbed.Kubeconfig, w.Dir
	logPath := filepath.Join(w.Testbed.Dir, "story.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	fmt.Fprintf(o.Out, "testbed up in %s (kubeconfig %s; each step's log in %s)\n\n", time.Since(began).Round(100*time.Millisecond), w.Testbed.Kubeconfig, logPath)

	playSteps(ctx, w, story, o.Out, logFile, sum)
	sum.Took = time.Since(began)
	printSummary(o.Out, sum)
	if o.Report != "" {
		if err := writeReportFile(o.Report, w.FleetFile, sum, w.Recorders); err != nil {
			fmt.Fprintf(o.Out, "report: %v\n", err)
		} else {
			fmt.Fprintf(o.Out, "report: %s\n", o.Report)
		}
	}

	if o.Keep && ctx.Err() == nil {
		fmt.Fprintf(o.Out, "\nThe testbed keeps running (Ctrl-C stops it):\n  export KUBECONFIG=%s\n  kubectl --context %s get nodes -L %s\n  fleet repository: %s\n",
			w.Testbed.Kubeconfig, Staging, v1alpha1.LabelGFDDriverFull, w.Dir)
		<-ctx.Done()
	}
	if sum.Failed() {
		return sum, errors.New("a step of the demo failed")
	}
	return sum, ctx.Err()
}

// playSteps plays steps in order on w, each on a goroutine of its own with
// a reporter as its T, printing its name and then what it saw or why it
// failed. Once a step that is not a check fails, the rest is skipped, since
// each builds on the ones before; when ctx ends the step under way is left
// to end with the world.
func playSteps(ctx context.Context, w *World, steps []Step, out, log io.Writer, sum *Summary) {
	for _, st := range steps {
		if ctx.Err() != nil {
			return
		}
		fmt.Fprintf(out, "▶ %s\n", st.Name)
		fmt.Fprintf(log, "=== %s\n", st.Name)
		r := &reporter{log: log}
		t0 := time.Now()
		done := make(chan struct{})
		go func() {
			defer close(done)
			st.Run(w.In(r))
		}()
		select {
		case <-done:
		case <-ctx.Done():
			r.Errorf("interrupted: %v", ctx.Err())
		}
		res := r.result(st.Name, time.Since(t0))
		sum.Steps = append(sum.Steps, res)
		switch {
		case res.Err != nil:
			fmt.Fprintf(out, "  ✗ %v\n", res.Err)
		case res.Note != "":
			fmt.Fprintf(out, "  ✓ %s (%s)\n", res.Note, res.Took.Round(100*time.Millisecond))
		default:
			fmt.Fprintf(out, "  ✓ %s\n", res.Took.Round(100*time.Millisecond))
		}
		if res.Err != nil && !st.Check {
			for _, c := range w.Clusters() {
				fmt.Fprintf(log, "=== %s at the failure ===\n%s", c, w.Dump(c))
			}
			return
		}
	}
}

// reporter is the demo's T: a step's log lines go to the story's log, its
// failures and its note into the step's result. Like testing.T's, Fatal
// and Fatalf end the step's goroutine.
type reporter struct {
	log io.Writer

	mu     sync.Mutex
	errors []string
	note   string
}

func (r *reporter) Helper() {}

func (r *reporter) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.log, "    %s\n", strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", "\n    "))
}

func (r *reporter) Error(args ...any) { r.fail(strings.TrimSuffix(fmt.Sprintln(args...), "\n")) }

func (r *reporter) Errorf(format string, args ...any) { r.fail(fmt.Sprintf(format, args...)) }

func (r *reporter) Fatal(args ...any) {
	r.Error(args...)
	runtime.Goexit()
}

func (r *reporter) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

// Note is what Play.Note records: the step's one line for the summary.
func (r *reporter) Note(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.note = msg
}

func (r *reporter) fail(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, msg)
	fmt.Fprintf(r.log, "    FAIL: %s\n", msg)
}

// result is the step's result: failed when it reported any error.
func (r *reporter) result(name string, took time.Duration) StepResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := StepResult{Name: name, Took: took, Note: r.note}
	if len(r.errors) > 0 {
		res.Err = errors.New(strings.Join(r.errors, "; "))
	}
	return res
}

func printSummary(out io.Writer, s *Summary) {
	fmt.Fprintln(out, "\nSummary")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tRESULT\tTOOK")
	for _, st := range s.Steps {
		res := "ok"
		if st.Err != nil {
			res = "FAILED"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", st.Name, res, st.Took.Round(100*time.Millisecond))
	}
	tw.Flush()
	fmt.Fprintf(out, "%d steps, %s in all; fleet repository %s\n", len(s.Steps), s.Took.Round(time.Second), filepath.Base(s.Repo))
}
