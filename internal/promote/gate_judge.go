package promote

import (
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
)

// JudgeAborted adapts a gate report for the clusters an aborted rollout
// reached, as RealGate does (judgeAborted), for a caller that runs the gate
// itself: `gpufleet verify` gates a step at the commit Flux applied, not at
// HEAD of the work tree. It returns the note RealGate adds to its summary,
// "" when nothing was left out.
func JudgeAborted(f *fleet.Fleet, rep *gate.Report) string { return judgeAborted(f, rep) }
