package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/charts"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/nodesim"
	"github.com/gpufleet/gpufleet/internal/promote"
	"github.com/gpufleet/gpufleet/internal/render"
	"github.com/gpufleet/gpufleet/internal/testbed"
)

// DemoOptions configure Demo.
type DemoOptions struct {
	// Out receives the progress lines and the summary.
	Out io.Writer
	// Root is the repository root: the DriverRollout CRD, and the real
	// operator charts in ../shared/operators beside it. "." when empty.
	Root string
	// Dir holds the testbed (kubeconfig, logs, the fleet repository); a
	// temporary folder when empty.
	Dir string
	// Keep leaves the testbed running after the story, until ctx ends.
	Keep bool
	// Report, when set, is where the HTML report is written: waves,
	// clusters, every step, and each cluster's nodes and phases over time.
	Report string
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
// its own API server, Flux, lifecycle controller and simulated GPU nodes)
// and a git server, and plays the fleet's story on it: render and first
// sync, a release promoted from staging to prod with an approval, drift
// repaired by Flux, and a drill release that fails at the staging canary
// node, is refused by the gate and is aborted. Progress goes to o.Out as it
// happens; the summary is returned and printed. Everything is stopped when
// Demo returns (with Keep, once ctx ends).
func Demo(ctx context.Context, o DemoOptions) (*Summary, error) {
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Root == "" {
		o.Root = "."
	}
	// The in-process controllers' logs and the git server's request log
	// would drown the progress lines; their Events and status are what the
	// demo reports.
	ctrllog.SetLogger(logr.Discard())
	log.SetOutput(io.Discard)
	began := time.Now()
	sum := &Summary{}
	fmt.Fprintln(o.Out, "gpufleet-lab demo: starting two clusters (stg, prod), Flux, a git server and 3 simulated GPU nodes per cluster...")
	w, err := startDemo(ctx, o)
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
	fmt.Fprintf(o.Out, "testbed up in %s (kubeconfig %s)\n\n", time.Since(began).Round(100*time.Millisecond), w.Testbed.Kubeconfig)

	rec := newRecorder(time.Now())
	recCtx, stopRec := context.WithCancel(ctx)
	var recDone sync.WaitGroup
	for _, name := range StoryClusters() {
		recDone.Go(func() { rec.run(recCtx, name, w.Client(name), 250*time.Millisecond) })
	}
	s := &player{ctx: ctx, w: w, out: o.Out, sum: sum}
	s.play()
	stopRec()
	recDone.Wait()
	sum.Took = time.Since(began)
	printSummary(o.Out, sum)
	if o.Report != "" {
		if err := writeReportFile(o.Report, w.FleetFile, sum, rec); err != nil {
			fmt.Fprintf(o.Out, "report: %v\n", err)
		} else {
			fmt.Fprintf(o.Out, "report: %s\n", o.Report)
		}
	}

	if o.Keep && ctx.Err() == nil {
		fmt.Fprintf(o.Out, "\nThe testbed keeps running (Ctrl-C stops it):\n  export KUBECONFIG=%s\n  kubectl --context stg get nodes -L %s\n  fleet repository: %s\n",
			w.Testbed.Kubeconfig, v1alpha1.LabelGFDDriverFull, w.Dir)
		<-ctx.Done()
	}
	if sum.Failed() {
		return sum, errors.New("a step of the demo failed")
	}
	return sum, ctx.Err()
}

// player plays the story step by step; once a step fails the rest is
// skipped, since each builds on the one before.
type player struct {
	ctx    context.Context
	w      *World
	out    io.Writer
	sum    *Summary
	rev    string
	failed bool
}

func (p *player) step(name string, fn func() (string, error)) {
	if p.failed || p.ctx.Err() != nil {
		return
	}
	fmt.Fprintf(p.out, "▶ %s\n", name)
	t0 := time.Now()
	note, err := fn()
	st := StepResult{Name: name, Took: time.Since(t0), Note: note, Err: err}
	p.sum.Steps = append(p.sum.Steps, st)
	switch {
	case err != nil:
		p.failed = true
		fmt.Fprintf(p.out, "  ✗ %v\n", err)
	case note != "":
		fmt.Fprintf(p.out, "  ✓ %s (%s)\n", note, st.Took.Round(100*time.Millisecond))
	default:
		fmt.Fprintf(p.out, "  ✓ %s\n", st.Took.Round(100*time.Millisecond))
	}
}

// mutate runs one promotion command (edit, render, commit) and pushes it.
func (p *player) mutate(m promote.Mutation) (*promote.Result, error) {
	res, err := promote.Apply(p.ctx, promote.Options{
		FleetFile: p.w.FleetFile, Mutation: m,
		Gate:   promote.RealGate(p.w.Dir, p.w.Testbed.Kubeconfig, 20*time.Second, nil),
		Render: p.renderOptions,
	})
	if err != nil {
		return nil, err
	}
	p.rev, err = p.w.Push()
	return res, err
}

// renderOptions renders the operator charts from the fleet's [charts]
// repository (the real charts' folder) in the manifests chart mode.
func (p *player) renderOptions(f *fleet.Fleet) (render.Options, error) {
	if f.Charts.Mode != fleet.ModeManifests {
		return render.Options{}, nil
	}
	src, err := charts.NewSource(f.Charts.Repository, charts.Options{})
	if err != nil {
		return render.Options{}, err
	}
	return render.Options{Charts: charts.Renderer{Ctx: p.ctx, Src: src}}, nil
}

// gate runs the gate on a wave at HEAD.
func (p *player) gate(wave string) (*gate.Report, error) {
	f, err := fleet.Load(p.w.FleetFile)
	if err != nil {
		return nil, err
	}
	rev, err := gate.HeadRevision(p.w.Dir)
	if err != nil {
		return nil, err
	}
	return gate.Run(p.ctx, gate.Options{Fleet: f, Clusters: f.Waves[f.WaveIndex(wave)].Clusters, Revision: rev, Kubeconfig: p.w.Testbed.Kubeconfig, Timeout: 20 * time.Second, Now: time.Now}), nil
}

// applied waits for every cluster to apply the last pushed revision.
func (p *player) applied(clusters ...string) error {
	for _, c := range clusters {
		if err := p.w.WaitApplied(p.ctx, c, p.rev, waitFor); err != nil {
			return err
		}
	}
	return nil
}

func (p *player) play() {
	ctx, w := p.ctx, p.w
	p.step("gpufleet render, commit, push: Flux applies operators → config → lifecycle", func() (string, error) {
		f, err := fleet.Load(w.FleetFile)
		if err != nil {
			return "", err
		}
		opts, err := p.renderOptions(f)
		if err != nil {
			return "", err
		}
		out, err := render.RenderWith(f, opts)
		if err != nil {
			return "", err
		}
		changes, err := render.Write(out, w.Dir)
		if err != nil {
			return "", err
		}
		if _, err := w.Git("add", "-A"); err != nil {
			return "", err
		}
		if _, err := w.Git("commit", "-q", "-m", "gpufleet render: the fleet's first render"); err != nil {
			return "", err
		}
		if p.rev, err = w.Push(); err != nil {
			return "", err
		}
		return fmt.Sprintf("%d files rendered; both clusters Ready at %s", len(changes), shortRev(p.rev)), p.applied(StoryClusters()...)
	})
	p.step("start "+ReleaseGood+": the staging DriverRollout upgrades the staging nodes", func() (string, error) {
		if _, err := p.mutate(func(f *fleet.Fleet) (promote.Step, error) { return promote.Start(f, ReleaseGood) }); err != nil {
			return "", err
		}
		if _, err := w.WaitRollout(ctx, Staging, ReleaseGood, waitFor, v1alpha1.PhaseCompleted); err != nil {
			return "", err
		}
		return "stg: 3 of 3 nodes on " + DriverGood, p.applied(StoryClusters()...)
	})
	p.step("gate --wave staging", func() (string, error) {
		rep, err := p.gate("staging")
		if err != nil {
			return "", err
		}
		if rep.Verdict() != gate.Pass {
			return "", fmt.Errorf("gate %s: %v", rep.Verdict(), rep.Failed())
		}
		return fmt.Sprintf("PASS (%d checks)", len(rep.Checks)), nil
	})
	approval := ReleaseGood + "/" + WaveProduction
	p.step("gpufleet status names the approval; approve "+approval, func() (string, error) {
		f, err := fleet.Load(w.FleetFile)
		if err != nil {
			return "", err
		}
		next := promote.StatusOf(f).Next
		if next != "gpufleet approve "+approval {
			return "", fmt.Errorf("status says next: %s", next)
		}
		if _, err := p.mutate(func(f *fleet.Fleet) (promote.Step, error) { return promote.Approve(f, approval) }); err != nil {
			return "", err
		}
		return "status said: next: " + next, p.applied(StoryClusters()...)
	})
	p.step("promote: the gate passes, prod gets "+ReleaseGood+" and finishes", func() (string, error) {
		if _, err := p.mutate(promote.Promote); err != nil {
			return "", err
		}
		if _, err := w.WaitRollout(ctx, Prod, ReleaseGood, waitFor, v1alpha1.PhaseCompleted); err != nil {
			return "", err
		}
		return "prod: 3 of 3 nodes on " + DriverGood, p.applied(StoryClusters()...)
	})
	p.step("promote after the last wave: "+ReleaseGood+" becomes stable", func() (string, error) {
		res, err := p.mutate(promote.Promote)
		if err != nil {
			return "", err
		}
		return strings.TrimPrefix(strings.SplitN(res.Message, "\n", 2)[0], "gpufleet: "), p.applied(StoryClusters()...)
	})
	p.step("drift: edit a Flux-managed object by hand; Flux restores it", func() (string, error) {
		c := w.Client(Staging)
		if err := testbed.Update(ctx, c, "kustomize.toolkit.fluxcd.io/v1", "Kustomization", testbed.FluxNamespace, "lifecycle", false, func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "1h0m0s", "spec", "interval")
		}); err != nil {
			return "", err
		}
		t0 := time.Now()
		for time.Since(t0) < time.Minute {
			ks := &kustomizev1.Kustomization{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: testbed.FluxNamespace, Name: "lifecycle"}, ks); err == nil && ks.Spec.Interval.Duration == 2*time.Minute {
				return fmt.Sprintf("repaired in %s (root Kustomization interval 2s: expected ~1s + apply time)", time.Since(t0).Round(10*time.Millisecond)), nil
			}
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
		return "", errors.New("Flux did not restore the lifecycle Kustomization within a minute")
	})
	p.step("start "+ReleaseDrill+": the staging canary node fails, rolls back, the rollout stalls", func() (string, error) {
		if _, err := p.mutate(func(f *fleet.Fleet) (promote.Step, error) { return promote.Start(f, ReleaseDrill) }); err != nil {
			return "", err
		}
		dr, err := w.WaitRollout(ctx, Staging, ReleaseDrill, waitFor, v1alpha1.PhaseStalled)
		if err != nil {
			return "", err
		}
		if err := w.WaitDrivers(ctx, Staging, DriverGood, waitFor); err != nil {
			return "", err
		}
		return fmt.Sprintf("canary %v %s; nodes still on %s", dr.Status.Canary.Nodes, dr.Status.Canary.Result, DriverGood), nil
	})
	p.step("gate --wave staging fails, so promote is refused", func() (string, error) {
		rep, err := p.gate("staging")
		if err != nil {
			return "", err
		}
		if rep.Verdict() == gate.Pass {
			return "", errors.New("the gate passed a stalled rollout")
		}
		if _, err := p.mutate(func(f *fleet.Fleet) (promote.Step, error) { return promote.Approve(f, ReleaseDrill+"/"+WaveProduction) }); err != nil {
			return "", err
		}
		if _, err := p.mutate(promote.Promote); !errors.Is(err, promote.ErrRefused) {
			return "", fmt.Errorf("promote was not refused: %v", err)
		}
		return fmt.Sprintf("gate %s with %d failed checks; promote refused", rep.Verdict(), len(rep.Failed())), nil
	})
	p.step("abort: staging returns to the stable release", func() (string, error) {
		if _, err := p.mutate(promote.Abort); err != nil {
			return "", err
		}
		if err := w.WaitApplied(ctx, Staging, p.rev, waitFor, "operators", "config"); err != nil {
			return "", err
		}
		return "stg back on " + DriverGood, w.WaitDrivers(ctx, Staging, DriverGood, waitFor)
	})
}

// waitFor bounds each wait of the demo (Flux applying a revision, a rollout
// reaching a phase, the nodes reaching a driver).
const waitFor = 3 * time.Minute

// startDemo starts the story's world: the testbed with the
// controller-manager, scheduler and kwok, per cluster a node agent, the
// real GPU Operator once Flux has applied its chart and a lifecycle
// controller, and the fleet repository holding the story's fleet file.
func startDemo(ctx context.Context, o DemoOptions) (*World, error) {
	return Start(ctx, Options{
		Root: o.Root, Dir: o.Dir, Clusters: StoryClusters(), FleetTOML: StoryFleet(), ChartVersion: ChartVersion,
		Pool:       nodesim.Pool{Name: PoolName, Product: Product, Nodes: PoolNodes, Driver: DriverStable},
		BadDrivers: []string{DriverDrill}, GitUser: "demo",
	})
}

func shortRev(rev string) string {
	if i := strings.LastIndex(rev, ":"); i >= 0 && len(rev) > i+13 {
		return rev[i+1 : i+13]
	}
	return rev
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
