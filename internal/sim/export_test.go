package sim

// CompactedPasses is how many passes of the run planned from a compacted
// snapshot (planner.Compact).
func CompactedPasses(r *Result) int { return r.world.compacted }
