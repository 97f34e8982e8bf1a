package verify

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/promote"
)

// Refusal is a change of [promotion] no promotion command would make: the
// step that was done by hand, and the key of the head's [promotion] it is
// written at.
type Refusal struct {
	// Step names the step that is not allowed, the way a person would do
	// it: `approve r2/prod-h100`, or the promote that skipped a wave.
	Step string
	// Key is the fleet file key involved ("promotion.rollout.wave",
	// "promotion.approved[1]"); fleet.Fleet.Position places it.
	Key     string
	Message string
}

// Diagnose says why FindSteps found no sequence: the nearest step that is
// not allowed, in words that say what was done by hand.
func Diagnose(s Search) []Refusal {
	base, head := s.Base, s.Head.Promotion
	// An abort taken back by deleting it: the rollout it stopped is in
	// force again, and no command does that.
	if b, h := base.Rollout, head.Rollout; b != nil && b.Aborted && h != nil && !h.Aborted && h.Release == b.Release {
		return []Refusal{{
			Step: "remove the abort of " + b.Release, Key: "promotion.rollout",
			Message: fmt.Sprintf("the abort of %s was removed before the gate saw every cluster back on the stable release %s: `gpufleet promote` ends an abort once the gate sees them back, and `gpufleet start %s` begins again at the first wave", b.Release, base.Stable, b.Release),
		}}
	}
	// The commands reach the head's state, but only through a step whose
	// gate judges clusters the change itself moved: a wave was skipped.
	path, reached := s.search(false)
	if path != nil {
		// The first such step is the one named; the clusters of every
		// such step say what was skipped.
		var first *promote.Step
		var moved []string
		for i, st := range path {
			m := s.moved(path[:i], st)
			if len(m) > 0 && first == nil {
				first = &path[i]
			}
			for _, c := range m {
				if !slices.Contains(moved, c) {
					moved = append(moved, c)
				}
			}
		}
		if first != nil {
			return []Refusal{s.skipped(*first, moved)}
		}
	}
	nearest := slices.MinFunc(reached, func(a, b node) int { return compareDistance(s.Head, a.p, b.p, head) })
	out := s.differences(nearest.p)
	if len(out) == 0 {
		out = append(out, Refusal{Step: "edit [promotion]", Key: "promotion", Message: fmt.Sprintf("no sequence of at most %d promotion commands leads from the base's [promotion] to this one", cmp.Or(s.MaxSteps, DefaultMaxSteps))})
	}
	return out
}

// skipped describes a step that gates clusters the change moved before it.
func (s Search) skipped(st promote.Step, moved []string) Refusal {
	head := s.Head.Promotion
	key := "promotion.stable"
	if head.Rollout != nil {
		key = "promotion.rollout.wave"
	}
	what := "wave"
	var parts []string
	for _, w := range s.Head.Waves {
		var in []string
		for _, c := range moved {
			if slices.Contains(w.Clusters, c) {
				in = append(in, c)
			}
		}
		switch {
		case len(in) == 0:
		case len(in) == 1 && in[0] == w.Canary && len(w.Clusters) > 1:
			parts = append(parts, fmt.Sprintf("%s (the canary cluster %s)", w.Name, w.Canary))
		default:
			parts = append(parts, w.Name)
		}
	}
	verb := "was"
	if len(parts) > 1 {
		what, verb = "waves", "were"
	}
	return Refusal{
		Step: st.Summary, Key: key,
		Message: fmt.Sprintf("rollout moved from %s to %s: %s %s %s skipped: the gate of %s could not pass before this change gave them the release, and the live clusters run the base",
			where(s.Head, s.Base), where(s.Head, head), what, strings.Join(parts, ", "), verb, strings.Join(moved, ", ")),
	}
}

// where says where promotion state p stands, for people.
func where(f *fleet.Fleet, p fleet.Promotion) string {
	r := p.Rollout
	switch {
	case r == nil:
		return "stable release " + p.Stable
	case r.Aborted:
		return fmt.Sprintf("the abort of %s", r.Release)
	}
	if i := f.WaveIndex(r.Wave); i >= 0 && r.Stage == fleet.StageCanary {
		return fmt.Sprintf("wave %s (canary cluster %s)", r.Wave, f.Waves[i].Canary)
	}
	return "wave " + r.Wave
}

// distance orders the states the commands reach by how far each is from
// the head's, most telling field first: which release is stable, which
// rolls out, whether aborted, how far along the waves, paused, approvals.
func distance(f *fleet.Fleet, p, head fleet.Promotion) []int {
	differ := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	d := []int{differ(p.Stable != head.Stable)}
	rel := func(p fleet.Promotion) string {
		if p.Rollout == nil {
			return ""
		}
		return p.Rollout.Release
	}
	d = append(d, differ(rel(p) != rel(head)))
	pos, aborted := 0, false
	if r := p.Rollout; r != nil {
		aborted = r.Aborted
		pos = position(f, r)
	}
	hpos, haborted := 0, false
	if r := head.Rollout; r != nil {
		haborted = r.Aborted
		hpos = position(f, r)
	}
	d = append(d, differ(aborted != haborted), max(pos-hpos, hpos-pos), differ(p.Paused != head.Paused))
	a, b := set(p.Approved), set(head.Approved)
	n := 0
	for k := range a {
		if !b[k] {
			n++
		}
	}
	for k := range b {
		if !a[k] {
			n++
		}
	}
	return append(d, n)
}

func compareDistance(f *fleet.Fleet, a, b, head fleet.Promotion) int {
	return slices.Compare(distance(f, a, head), distance(f, b, head))
}

// position numbers a rollout's place along the waves: two per wave, its
// canary stage before the whole wave.
func position(f *fleet.Fleet, r *fleet.Rollout) int {
	n := 2*f.WaveIndex(r.Wave) + 1
	if r.Stage == fleet.StageCanary {
		n--
	}
	return n
}

func set(list []string) map[string]bool {
	out := map[string]bool{}
	for _, a := range list {
		out[a] = true
	}
	return out
}

// differences describes, one refusal each, what differs between state
// near, which the commands reach, and the head's: what was done by hand.
func (s Search) differences(near fleet.Promotion) []Refusal {
	f, head := s.Head, s.Head.Promotion
	var out []Refusal
	add := func(step, key, format string, args ...any) {
		out = append(out, Refusal{Step: step, Key: key, Message: fmt.Sprintf(format, args...)})
	}
	nr, hr := near.Rollout, head.Rollout
	switch {
	case near.Stable != head.Stable:
		add("make "+head.Stable+" stable", "promotion.stable", "the stable release was changed from %s to %s by hand: a release becomes stable only by `gpufleet promote` after it has passed every wave", near.Stable, head.Stable)
	case nr != nil && hr == nil:
		add("remove the rollout of "+nr.Release, "promotion", "the rollout of %s was removed by hand: `gpufleet abort` sends every cluster it reached back to %s, and the gate ends the abort", nr.Release, head.Stable)
	case nr == nil && hr != nil:
		add("start "+hr.Release, "promotion.rollout", "the rollout of %s at %s was written by hand: `gpufleet start %s` begins it at the first wave", hr.Release, where(f, head), hr.Release)
	case nr != nil && hr != nil && nr.Release != hr.Release:
		add("start "+hr.Release, "promotion.rollout.release", "the rollout of %s was replaced by %s by hand: a release starts only once the one before it is stable or its abort has ended", nr.Release, hr.Release)
	case nr != nil && hr != nil && nr.Aborted && !hr.Aborted:
		add("remove the abort of "+nr.Release, "promotion.rollout", "the abort of %s was removed before the gate saw every cluster back on the stable release %s", nr.Release, head.Stable)
	case nr != nil && hr != nil && !nr.Aborted && hr.Aborted:
		add("abort "+hr.Release, "promotion.rollout", "the abort of %s was written by hand: `gpufleet abort` writes it", hr.Release)
	case nr != nil && hr != nil && position(f, nr) < position(f, hr):
		var skipped []string
		for i := f.WaveIndex(nr.Wave) + 1; i < f.WaveIndex(hr.Wave); i++ {
			skipped = append(skipped, f.Waves[i].Name)
		}
		msg := fmt.Sprintf("rollout moved from %s to %s by hand", where(f, near), where(f, head))
		if len(skipped) > 0 {
			msg += fmt.Sprintf(": wave(s) %s skipped", strings.Join(skipped, ", "))
		}
		add("promote "+hr.Release, "promotion.rollout.wave", "%s; `gpufleet promote` moves it one step, behind the gate", msg)
	case nr != nil && hr != nil && position(f, nr) > position(f, hr):
		add("move "+hr.Release+" back", "promotion.rollout.wave", "rollout moved back from %s to %s by hand: a rollout goes back only by `gpufleet abort`", where(f, near), where(f, head))
	}
	if near.Paused != head.Paused {
		add("pause", "promotion.paused", "paused was set to %t by hand where `gpufleet pause` and `resume` could not", head.Paused)
	}
	waiting := func() string {
		var names []string
		for _, w := range promote.Waits(f.WithPromotion(near)) {
			if w.Approval != "" {
				names = append(names, w.Approval)
			}
		}
		if len(names) == 0 {
			return "nothing does"
		}
		return "what waits: " + strings.Join(names, ", ")
	}
	had := set(near.Approved)
	for i, a := range head.Approved {
		if !had[a] {
			add("approve "+a, fmt.Sprintf("promotion.approved[%d]", i), "approved %s, which nothing waits for (%s)", a, waiting())
		}
	}
	has := set(head.Approved)
	for _, a := range near.Approved {
		if !has[a] {
			add("remove the approval "+a, "promotion.approved", "the approval %s was removed by hand: only the promote it lets through uses it up", a)
		}
	}
	return out
}
