package planner

import "strings"

// DriverMatches reports whether a node whose GPU Feature Discovery reports
// driver version reported (nvidia.com/cuda.driver-version.full, e.g.
// "570.86.15") runs want. It is the one comparison of a node's driver with
// a rollout's target or previous version, used by the planner, the
// controller and the gate alike.
//
// want is either a full version, which must be reported exactly, or the
// branch of a precompiled driver ("570"): the GPU Operator then installs
// the newest build of that branch for each node's kernel, so no full
// version is known in advance, and any version of the branch matches.
// That is GFD's nvidia.com/cuda.driver-version.major, which GFD sets from
// the same version's first component. An empty report matches nothing.
//
// Note: a branch matches a version of the branch, never the other way
// round: a node reporting "570.86.15" does not run "570.124.06", and a
// target "570" does not make a node reporting "575.51.02" match.
func DriverMatches(reported, want string) bool {
	if reported == "" || want == "" {
		return false
	}
	if reported == want {
		return true
	}
	if strings.Contains(want, ".") {
		return false
	}
	major, _, full := strings.Cut(reported, ".")
	return full && major == want
}

// reportedAs names what a node reports for want, which it matches: the
// version itself, or the build of a precompiled branch, e.g.
// "570.86.15 (branch 570)".
func reportedAs(reported, want string) string {
	if reported == want {
		return want
	}
	return reported + " (branch " + want + ")"
}
