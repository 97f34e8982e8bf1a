package gate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// WaitOptions say how long to wait for clusters to converge and how often
// to look.
type WaitOptions struct {
	// Options are the gate's, for each look (Timeout bounds each cluster's
	// checks within one look).
	Options
	// Wait bounds the whole wait.
	Wait time.Duration
	// Interval is the time between the start of one look and the next;
	// 5 s when zero. A look that takes longer is followed at once.
	Interval time.Duration
	// Progress, when set, is called after each look whose pending list
	// (see Pending) differs from the previous look's, and after the first.
	Progress func(rep *Report, pending []Pending)
}

// ErrWaitTimeout says the clusters had not converged when the wait ended.
var ErrWaitTimeout = errors.New("timed out waiting for the gate to pass")

// Wait runs the gate until it passes, the wait passes, or ctx ends
// (Ctrl-C). It returns the last report in every case; the error is nil
// only when that report passed, ErrWaitTimeout (wrapped) when the wait
// ran out, and ctx's error when it was cancelled. It never writes to a
// cluster, and leaves nothing running when it returns.
func Wait(ctx context.Context, o WaitOptions) (*Report, error) {
	interval := o.Interval
	if interval <= 0 {
		interval = 5 * time.Second
	}
	deadline := o.Now().Add(o.Wait)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var last []Pending
	var prev *Report
	first := true
	for {
		start := o.Now()
		rep := Run(ctx, o.Options)
		if err := ctx.Err(); err != nil {
			// A look cut short by the end of the wait or by Ctrl-C says
			// only that: the look before it is the last that saw the
			// clusters.
			if prev != nil {
				rep = prev
			}
			if errors.Is(err, context.DeadlineExceeded) {
				return rep, fmt.Errorf("%w after %s", ErrWaitTimeout, o.Wait)
			}
			return rep, err
		}
		prev = rep
		pending := PendingOf(rep)
		if o.Progress != nil && (first || !slices.EqualFunc(pending, last, Pending.Equal)) {
			o.Progress(rep, pending)
		}
		first, last = false, pending
		if rep.Verdict() == Pass {
			return rep, nil
		}
		timer := time.NewTimer(max(0, interval-o.Now().Sub(start)))
		select {
		case <-ctx.Done():
			timer.Stop()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return rep, fmt.Errorf("%w after %s", ErrWaitTimeout, o.Wait)
			}
			return rep, ctx.Err()
		case <-timer.C:
		}
	}
}

// Pending is what one cluster still waits for, as a person reads it: the
// rollout's nodes done of total, and the checks not passed.
type Pending struct {
	Cluster string `json:"cluster"`
	// Rollout is the DriverRollout's observed state (phase, nodes done of
	// total, budget), when the gate read it.
	Rollout string `json:"rollout,omitempty"`
	// Waiting names each check not passed, with its message.
	Waiting []string `json:"waiting"`
}

// Equal says p and q say the same.
func (p Pending) Equal(q Pending) bool {
	return p.Cluster == q.Cluster && p.Rollout == q.Rollout && slices.Equal(p.Waiting, q.Waiting)
}

// String is one line: "prod-h100-a: rollout Progressing, 3/8 done; waits for …".
func (p Pending) String() string {
	var b strings.Builder
	b.WriteString(p.Cluster + ":")
	if p.Rollout != "" {
		b.WriteString(" rollout " + p.Rollout + ";")
	}
	if len(p.Waiting) == 0 {
		b.WriteString(" converged")
		return b.String()
	}
	b.WriteString(" waits for " + strings.Join(p.Waiting, "; "))
	return b.String()
}

// PendingOf sums a report up per cluster, in the report's cluster order.
func PendingOf(rep *Report) []Pending {
	out := make([]Pending, 0, len(rep.Clusters))
	for _, c := range rep.Clusters {
		p := Pending{Cluster: c, Waiting: []string{}}
		for _, ch := range rep.Checks {
			if ch.Cluster != c {
				continue
			}
			if ch.Name.Kind == CheckRollout && ch.Observed != "missing" {
				p.Rollout = ch.Observed
			}
			if ch.Status != Pass {
				p.Waiting = append(p.Waiting, fmt.Sprintf("%s (%s)", ch.Name, cmp.Or(ch.Message, ch.Observed)))
			}
		}
		out = append(out, p)
	}
	return out
}
