package planner

import (
	"fmt"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// progress moves every node in flight forward, or back when it failed, and
// under abort sends every node that reached the new driver back.
func (p *planner) progress() {
	for i := range p.nodes {
		w := &p.nodes[i]
		if w.elsewhere != "" {
			continue
		}
		if p.spec.Abort && p.abortNode(w) {
			continue
		}
		if forward(w.phase) {
			if why := p.failure(w); why != "" {
				p.fail(w, why)
				continue
			}
		}
		if p.rollBackWithDomain(w) {
			continue
		}
		switch w.phase {
		case v1alpha1.NodeDraining:
			p.draining(w)
		case v1alpha1.NodeInstalling:
			p.installing(w)
		case v1alpha1.NodeValidating:
			p.validating(w)
		case v1alpha1.NodeSoaking:
			p.soaking(w)
		case v1alpha1.NodeRollingBack:
			p.rollingBack(w)
		}
	}
	p.returnHeld()
}

// elapsed is how long the node has been in its phase, as a short string.
func (p *planner) elapsed(w *work) string { return short(p.now.Sub(w.n.Since)) }

// overdue reports whether the node has been in its phase for d or longer,
// and otherwise asks to be woken when it will have.
func (p *planner) overdue(w *work, d time.Duration) bool {
	deadline := w.n.Since.Add(d)
	if !p.now.Before(deadline) {
		return true
	}
	p.wake(deadline)
	return false
}

func (p *planner) fail(w *work, reason string) {
	p.move(w, v1alpha1.NodeRollingBack, reason+"; rolling back to "+p.spec.PreviousVersion, func(t *Transition) {
		t.Failure = true
		t.Driver = p.spec.PreviousVersion
		t.Cordon = !w.unschedulable
	})
}

// failure says why node w, on its way to the new driver, fails in this
// pass; empty when it does not. It is the one reading of a failure: the
// phase's own step (draining and its neighbours) and the maintenance
// domain's scan (scanDomains), which rolls the failing node's domain back
// with it, both ask it.
func (p *planner) failure(w *work) string {
	switch w.phase {
	case v1alpha1.NodeDraining:
		dra := drainWaitDRA(w)
		if w.n.Drained && dra == "" || !p.overdue(w, p.set.JobWait+p.set.DrainTimeout) {
			return ""
		}
		why := fmt.Sprintf("drain did not finish within %s", short(p.set.DrainTimeout))
		if p.set.JobWait > 0 {
			why += fmt.Sprintf(" after waiting %s for the jobs named", short(p.set.JobWait))
		}
		if dra != "" {
			why += ": " + dra
		}
		return why
	case v1alpha1.NodeInstalling:
		if why, decided := p.ofed.failure(w); decided {
			return why
		}
		switch {
		case w.n.DriverFailed:
			return fmt.Sprintf("driver %s failed to install", p.spec.TargetVersion)
		case !(w.n.DriverReady && w.n.Ready) && p.overdue(w, p.set.InstallTimeout):
			return fmt.Sprintf("driver %s not Ready within %s", p.spec.TargetVersion, short(p.set.InstallTimeout))
		}
	case v1alpha1.NodeValidating:
		reports := DriverMatches(w.n.DriverVersion, p.spec.TargetVersion) && w.n.Ready
		if reports && p.draThrough(w) || !p.overdue(w, p.set.ValidateTimeout) {
			return ""
		}
		if !reports {
			got := w.n.DriverVersion
			if got == "" {
				got = "no version"
			}
			return fmt.Sprintf("node reports %s after %s, want %s", got, short(p.set.ValidateTimeout), p.spec.TargetVersion)
		}
		return fmt.Sprintf("node reports %s but after %s its %s", reportedAs(w.n.DriverVersion, p.spec.TargetVersion), short(p.set.ValidateTimeout), p.draValidateWait(w))
	case v1alpha1.NodeSoaking:
		for _, s := range w.n.Signals {
			// Signals from before the soak belong to the old driver or
			// an earlier attempt; only what the new driver caused counts.
			if s.At.Before(w.n.Since) || s.At.After(p.now) {
				continue
			}
			msg := s.Reason
			if s.Message != "" {
				msg += " (" + s.Message + ")"
			}
			return fmt.Sprintf("%s %s after %s of soak", s.Source, msg, short(s.At.Sub(w.n.Since)))
		}
		if !w.n.Ready {
			return fmt.Sprintf("node went NotReady after %s of soak", p.elapsed(w))
		}
	}
	return ""
}

func (p *planner) draining(w *work) {
	if !w.n.Drained || !p.drainingDRA(w) {
		return
	}
	if p.ofed.enter(w) {
		return
	}
	p.move(w, v1alpha1.NodeInstalling, fmt.Sprintf("drained in %s; installing driver %s", p.elapsed(w), p.spec.TargetVersion), func(t *Transition) {
		t.Driver = p.spec.TargetVersion
	})
}

func (p *planner) installing(w *work) {
	if !p.ofed.install(w) {
		return
	}
	if w.n.DriverReady && w.n.Ready {
		reason := fmt.Sprintf("driver pod Ready after %s; validating the reported version", p.elapsed(w))
		resume := w.pluginLabel() == v1alpha1.DRAPluginPaused
		if resume {
			reason += ", and letting the DRA kubelet plugin back: the node is validated once it is Ready and its ResourceSlices publish the new version"
		}
		p.move(w, v1alpha1.NodeValidating, reason, func(t *Transition) {
			t.HoldOFED = p.ofed.keepHeld(w)
			if resume {
				t.Plugin = PluginResume
			}
		})
	}
}

func (p *planner) validating(w *work) {
	if DriverMatches(w.n.DriverVersion, p.spec.TargetVersion) && w.n.Ready && p.draThrough(w) {
		reason := fmt.Sprintf("node reports driver %s; soaking for %s", reportedAs(w.n.DriverVersion, p.spec.TargetVersion), short(p.set.Soak))
		if w.isDRA() {
			reason = fmt.Sprintf("node reports driver %s, its DRA kubelet plugin is Ready and its ResourceSlices publish driverVersion %s; soaking for %s",
				reportedAs(w.n.DriverVersion, p.spec.TargetVersion), strings.Join(w.n.DRASliceVersions, ", "), short(p.set.Soak))
		}
		p.move(w, v1alpha1.NodeSoaking, reason, nil)
	}
}

func (p *planner) soaking(w *work) {
	if p.overdue(w, p.set.Soak) && !p.holdsReturn(w) {
		p.move(w, v1alpha1.NodeDone, p.backInService(w, p.returned(w, fmt.Sprintf("soaked %s clean on %s", short(p.set.Soak), p.spec.TargetVersion))), func(t *Transition) {
			t.Uncordon = !w.adminCordoned
		})
	}
}

// returned appends, for a node of a maintenance domain, that its domain
// returns with it.
func (p *planner) returned(w *work, reason string) string {
	if d := p.domainOf(w); d != nil && len(d.nodes) > 1 {
		return fmt.Sprintf("%s; maintenance domain %s returns as one (%s)", reason, d.key, plural(len(d.nodes), "node"))
	}
	return reason
}

// rollbackTimeout bounds a rollback: reinstalling the old driver, then the
// node reporting it.
func (p *planner) rollbackTimeout() time.Duration {
	return p.set.InstallTimeout + p.set.ValidateTimeout
}

func (p *planner) rollingBack(w *work) {
	// OFED first, where it was replaced: until it is back, the GPU
	// driver's state says nothing (a stale peermem crash-loops).
	back, fix := p.ofed.back(w)
	switch {
	case back && w.n.DriverFailed:
		p.quarantine(w, fmt.Sprintf("rollback to %s failed: driver pod failed to install", p.spec.PreviousVersion))
	case p.overdue(w, p.rollbackTimeout()):
		p.quarantine(w, fmt.Sprintf("rollback to %s not done within %s%s", p.spec.PreviousVersion, short(p.rollbackTimeout()), p.ofed.rollbackWhy(w)))
	case !back:
		if fix != nil {
			fix()
		}
	case rolledBack(w, p.spec.PreviousVersion):
		if p.holdsReturn(w) {
			return
		}
		p.move(w, v1alpha1.NodeRolledBack, p.backInService(w, p.returned(w, fmt.Sprintf("back on %s after %s", p.spec.PreviousVersion, p.elapsed(w)))), func(t *Transition) {
			t.Uncordon = !w.adminCordoned
			t.HoldOFED = p.ofed.keepHeld(w)
		})
	}
}

// rolledBack reports whether node w, rolling back, is back on the previous
// driver: its driver pod Ready and the node reporting it.
func rolledBack(w *work, previous string) bool {
	return !w.n.DriverFailed && w.n.DriverReady && w.n.Ready && DriverMatches(w.n.DriverVersion, previous)
}

// backInService appends what happens to the cordon. Note: a node an admin
// had cordoned before the rollout stays cordoned, because the admin had a
// reason the rollout does not know.
func (p *planner) backInService(w *work, reason string) string {
	if w.adminCordoned {
		return reason + "; left cordoned as an admin had cordoned it before the rollout"
	}
	return reason + "; uncordoned"
}

func (p *planner) quarantine(w *work, reason string) {
	p.move(w, v1alpha1.NodeQuarantined, reason+"; quarantined (label and taint), left cordoned", func(t *Transition) {
		t.Quarantine = true
		t.Cordon = !w.unschedulable
	})
}

// abortNode rolls back a node that has started and not failed. Pending
// nodes stay untouched; failed ones are already on their way back.
func (p *planner) abortNode(w *work) bool {
	switch w.phase {
	case v1alpha1.NodeDraining, v1alpha1.NodeInstalling, v1alpha1.NodeValidating,
		v1alpha1.NodeSoaking, v1alpha1.NodeDone:
	default:
		return false
	}
	from := w.phase
	p.move(w, v1alpha1.NodeRollingBack, fmt.Sprintf("rollout aborted while %s; rolling back to %s", from, p.spec.PreviousVersion), func(t *Transition) {
		t.Driver = p.spec.PreviousVersion
		t.Cordon = !w.unschedulable
	})
	return true
}

// short formats a duration without zero units: 1h30m, 45m, 20s.
func short(d time.Duration) string { return ShortDuration(d) }

// ShortDuration formats a duration, to the second, without zero units:
// 1h30m, 45m, 20s, as the planner's reasons say them.
func ShortDuration(d time.Duration) string {
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
