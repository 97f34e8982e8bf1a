package e2e

import (
	"errors"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/internal/secrets/sopstest"
	"github.com/gpufleet/gpufleet/internal/testworld/lab"
)

// world is a running world (package lab's) as one test or subtest sees it:
// lab's helpers fail the test through it, and the suite's own helpers are
// its methods.
type world struct {
	*lab.Play
}

// newWorld starts the world of o (lab.Start) for t, and stops it when t
// ends; on a failure it first logs the testbed's logs and every cluster's
// state. It fills in where the world runs (the repository root, a folder
// of t's) and who commits, and makes a failure in the background (the GPU
// Operator, a controller) fail t. Under -short it skips; without the
// testbed programs it fails, naming make testbin; without the operator
// charts it skips. With o.StackCRDs the serving stack's Secrets are
// encrypted with gpufleet secret, which runs the testbed's sops.
func newWorld(t *testing.T, o lab.Options) *world {
	t.Helper()
	if testing.Short() {
		t.Skip("e2e: skipped under -short (needs the testbed)")
	}
	if o.StackCRDs {
		sopstest.Use(t)
	}
	if err := lab.CheckPrograms(); err != nil {
		t.Fatalf("e2e: %v", err)
	}
	o.Root, o.Dir, o.GitUser = "../..", t.TempDir(), "e2e"
	o.OnError = func(err error) { t.Errorf("%v", err) }
	began := time.Now()
	lw, err := lab.Start(t.Context(), o)
	if errors.Is(err, lab.ErrNoOperatorCharts) {
		t.Skipf("e2e: needs the real GPU Operator charts in ../shared/operators: %v", err)
	}
	if err != nil {
		t.Fatalf("e2e: %v", err)
	}
	// Cleanups run last-registered first: the dumps run before Stop, which
	// stops everything beside the testbed before the testbed.
	t.Cleanup(func() {
		if err := lw.Stop(); err != nil {
			t.Errorf("testbed: %v", err)
		}
	})
	t.Logf("e2e: %d clusters up in %s, kubeconfig %s", len(o.Clusters), since(began), lw.Testbed.Kubeconfig)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("testbed logs:\n%s", lw.Testbed.LogTail(60))
			for _, name := range o.Clusters {
				t.Logf("=== %s at the failure ===\n%s", name, lw.Dump(name))
			}
		}
	})
	return &world{lw.In(t)}
}

// in returns w as the subtest t sees it.
func (w *world) in(t *testing.T) *world { return &world{w.World.In(t)} }

// story runs named steps in order, each a subtest. A step the rest of the
// story depends on stops it when it fails; a check does not.
type story struct {
	t *testing.T
	w *world
}

func (s *story) step(name string, fn func(w *world)) {
	s.t.Helper()
	if !s.t.Run(name, func(t *testing.T) { fn(s.w.in(t)) }) {
		s.t.Fatalf("the story cannot go on after %q failed", name)
	}
}

func (s *story) check(name string, fn func(w *world)) {
	s.t.Helper()
	s.t.Run(name, func(t *testing.T) { fn(s.w.in(t)) })
}

// play runs a story written as data (package lab's steps), as the demo
// plays it.
func (s *story) play(steps []lab.Step) {
	s.t.Helper()
	for _, st := range steps {
		run := func(w *world) { st.Run(w.Play) }
		if st.Check {
			s.check(st.Name, run)
		} else {
			s.step(st.Name, run)
		}
	}
}

// since formats the time since t0 for logs.
func since(t0 time.Time) string { return lab.Since(t0) }
