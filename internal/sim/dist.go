package sim

import (
	"math"
	"math/rand/v2"
	"time"
)

// Dist is a distribution of durations: log-normal around Median with shape
// Spread (the σ of the underlying normal), which gives the long right tail
// that real drains and installs have. Spread 0 means always Median.
type Dist struct {
	Median time.Duration
	Spread float64
}

// Fixed is a distribution that always gives d.
func Fixed(d time.Duration) Dist { return Dist{Median: d} }

// Draw returns one duration, never negative.
func (d Dist) Draw(r *rand.Rand) time.Duration {
	if d.Spread <= 0 || d.Median <= 0 {
		return max(d.Median, 0)
	}
	return time.Duration(float64(d.Median) * math.Exp(r.NormFloat64()*d.Spread))
}

// Profile is how the simulated nodes and drivers behave.
type Profile struct {
	// Drain is how long evicting a node's pods takes.
	Drain Dist
	// Install is how long the new driver pod takes to become Ready.
	Install Dist
	// Report is how long GPU Feature Discovery takes to report the version
	// once the driver is Ready.
	Report Dist
	// Rollback is how long reinstalling the previous driver takes.
	Rollback Dist

	// InstallFailRate is the chance the new driver fails on a node.
	InstallFailRate float64
	// WrongVersionRate is the chance a node reports a version other than
	// the target after installing (a stale or mismatched driver).
	WrongVersionRate float64
	// XIDRate is the chance a node raises an XID during its soak.
	XIDRate float64
	// RollbackFailRate is the chance the rollback fails too.
	RollbackFailRate float64

	// OFEDInstall is how long a node's new OFED pod takes to become Ready
	// once the Network Operator restarts it (rollouts with spec.ofed);
	// zero: DefaultOFEDInstall.
	OFEDInstall Dist
	// BadOFED is an OFED version that never becomes Ready on any node
	// (its pod crash-loops, the node goes upgrade-failed); empty for none.
	BadOFED string

	// NotReadyRate is the chance that a node goes NotReady at some time in
	// the first NotReadyWithin of the run, for NotReadyFor.
	NotReadyRate   float64
	NotReadyWithin time.Duration
	NotReadyFor    Dist

	// AdminCordonRate is the chance that an admin cordons a node that the
	// rollout has not started, at some time in the first AdminCordonWithin;
	// the admin uncordons it after AdminCordonFor if the rollout still has
	// not touched it.
	AdminCordonRate   float64
	AdminCordonWithin time.Duration
	AdminCordonFor    Dist
}

// DefaultProfile is a plausible H100 node: drains of a few minutes with a
// tail, installs around eight minutes, no failures.
func DefaultProfile() Profile {
	return Profile{
		Drain:    Dist{Median: 4 * time.Minute, Spread: 0.5},
		Install:  Dist{Median: 8 * time.Minute, Spread: 0.3},
		Report:   Dist{Median: time.Minute, Spread: 0.3},
		Rollback: Dist{Median: 8 * time.Minute, Spread: 0.3},

		OFEDInstall: Dist{Median: DefaultOFEDInstall, Spread: 0.3},

		NotReadyWithin:    24 * time.Hour,
		NotReadyFor:       Dist{Median: 30 * time.Minute, Spread: 0.5},
		AdminCordonWithin: 24 * time.Hour,
		AdminCordonFor:    Dist{Median: 2 * time.Hour, Spread: 0.5},
	}
}
