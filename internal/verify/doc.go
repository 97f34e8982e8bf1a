// Package verify is the check a fleet repository's CI runs on every change
// (`gpufleet verify --base REV`): it compares the base revision with the
// work tree and says whether the change is one gpufleet itself would make.
//
// Four checks, each a Check of the Report with its Findings:
//
//   - rendered: the rendered tree is what the work tree's fleet file
//     renders (stale, missing and extra files by path);
//   - validate and lint: what `gpufleet validate` and `gpufleet lint` find;
//   - promotion: the change of [promotion] is exactly a sequence of steps
//     the promotion commands allow from the base state (FindSteps); a hand
//     edit is refused naming the step it took that no command would;
//   - gate: each step of that sequence that needs the gate has it passing
//     on the live clusters now, failing closed; a step committed with
//     --skip-gate is shown loudly, and can be made a failure.
//
// The package decides; internal/cli wires flags, charts and output. The
// state machine it searches is internal/promote's, unchanged: verify asks
// it, never re-implements it.
package verify
