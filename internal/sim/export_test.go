package sim

// CompactedPasses is how many passes of the run planned from a compacted
// snapshot (planner.Compact).
func CompactedPasses(r *Result) int { return r.world.compacted }

// Hooks are the test hooks of a run (see hooks), for this package's tests:
// only they may set one.
type Hooks = hooks

// Hooked is a rehearsal with test hooks. Config and Hooks are embedded, so
// a test sets cfg.Racing or cfg.Observe on the same value it set
// cfg.Rollout on.
type Hooked struct {
	Config
	Hooks
}

// RunHooked runs c.Config with c.Hooks.
func RunHooked(c Hooked) (*Result, error) { return run(c.Config, c.Hooks) }
