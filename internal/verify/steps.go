package verify

import (
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/promote"
)

// DefaultMaxSteps bounds the search: a change of [promotion] made of more
// promotion commands than this is refused as not found. A whole rollout of
// the example fleet (docs/promotion-and-gate.md), every approval included,
// is ten.
const DefaultMaxSteps = 12

// Search is the question FindSteps answers: which promotion commands,
// run one after another from Base, leave [promotion] as Head's.
type Search struct {
	// Head is the work tree's fleet: its releases, waves and clusters are
	// the ones the steps run on (see FindSteps).
	Head *fleet.Fleet
	// Base is [promotion] at the base revision.
	Base fleet.Promotion
	// MaxSteps bounds the sequence; 0 means DefaultMaxSteps.
	MaxSteps int
	// GateSkipped says a commit of the change records the step as taken
	// with --skip-gate; such a step may need the gate on clusters an
	// earlier step of the change moved (nobody could gate them).
	GateSkipped func(promote.Step) bool
}

// node is a state of the search with the steps that reached it.
type node struct {
	p     fleet.Promotion
	steps []promote.Step
}

// FindSteps returns the shortest sequence of promotion steps that turns
// s.Base into s.Head's [promotion], or ok false when there is none.
//
// The steps run on the HEAD fleet with the BASE promotion substituted:
// a change may edit releases, waves or clusters along with [promotion]
// (add the release it starts, say), and the commands of the change ran on
// the fleet file as it was when each ran, which for [promotion]'s rules
// (wave order, canary clusters, approvals) is the head's unless the same
// change also rewrote the waves. Judging by the head's waves is what the
// fleet will run after the merge; a change that moves the waves under a
// rollout in flight is refused below (the base state must be valid on the
// head fleet) rather than judged by rules that no longer hold.
//
// A step that needs the gate on a cluster that an earlier step of the same
// change moved is not allowed (unless its commit records the gate
// skipped): the live clusters run the base, so that gate could never have
// passed. This is what makes a hand edit that jumps a wave refusable even
// though approve and promote, run back to back, would reach the same state.
func FindSteps(s Search) ([]promote.Step, bool) {
	path, _ := s.search(true)
	return path, path != nil
}

// search is a breadth-first search from s.Base. With strict set, steps
// that would gate clusters the change already moved are not taken. It
// returns the path to the head's state (nil when not reached) and every
// state reached, for the diagnosis.
//
// The approvals of clusters' canary nodes are not searched: each is taken
// as soon as it waits when the head has it (approveWaiting), and not at
// all otherwise, since no other step needs one. They commute with every
// other step (nothing but the end of the rollout takes them back, and the
// gate does not judge them), and searching them would try every subset of
// a large wave's clusters. So MaxSteps bounds the other steps.
func (s Search) search(strict bool) ([]promote.Step, []node) {
	limit := s.MaxSteps
	if limit <= 0 {
		limit = DefaultMaxSteps
	}
	goal := stateKey(s.Head.Promotion)
	start := s.approveWaiting(node{p: s.Base, steps: []promote.Step{}})
	if stateKey(start.p) == goal {
		return start.steps, []node{start}
	}
	seen := map[string]bool{stateKey(start.p): true}
	all := []node{start}
	frontier := []node{start}
	for depth := 0; depth < limit && len(frontier) > 0; depth++ {
		var next []node
		for _, n := range frontier {
			f := s.Head.WithPromotion(n.p)
			for _, m := range mutations(f) {
				step, err := m(f)
				if err != nil {
					continue
				}
				if strict && len(s.moved(n.steps, step)) > 0 {
					continue
				}
				child := s.approveWaiting(node{p: step.Promotion, steps: append(slices.Clone(n.steps), step)})
				k := stateKey(child.p)
				if seen[k] {
					continue
				}
				seen[k] = true
				if k == goal {
					return child.steps, append(all, child)
				}
				all = append(all, child)
				next = append(next, child)
			}
		}
		frontier = next
	}
	return nil, all
}

// approveWaiting takes, in n's state, the approval of each cluster's
// canary node(s) that waits and that the head has.
func (s Search) approveWaiting(n node) node {
	f := s.Head.WithPromotion(n.p)
	for _, w := range promote.Waits(f) {
		if w.Cluster == "" || !slices.Contains(s.Head.Promotion.Approved, w.Approval) {
			continue
		}
		st, err := promote.Approve(f, w.Approval)
		if err != nil {
			continue
		}
		n = node{p: st.Promotion, steps: append(slices.Clone(n.steps), st)}
		f = s.Head.WithPromotion(n.p)
	}
	return n
}

// moved lists the clusters step gates whose expected state differs from
// the base's after the steps before it: what the gate would judge there
// is not what the live clusters were given. Nil when the step needs no
// gate or its commit recorded the gate skipped.
func (s Search) moved(before []promote.Step, step promote.Step) []string {
	if len(step.Gate) == 0 || len(before) == 0 {
		return nil
	}
	if step.GateRequired == "" && s.GateSkipped != nil && s.GateSkipped(step) {
		return nil
	}
	prev := before[len(before)-1].Promotion
	was, now := s.Head.WithPromotion(s.Base), s.Head.WithPromotion(prev)
	var out []string
	for _, c := range step.Gate {
		if !reflect.DeepEqual(gate.Expect(was, c, ""), gate.Expect(now, c, "")) {
			out = append(out, c)
		}
	}
	return out
}

// mutations are the promotion commands, each with every argument it can
// take in state f: start with each release, approve with each wave's
// approval that waits (a promote needs it, and uses it up; the clusters'
// are approveWaiting's).
func mutations(f *fleet.Fleet) []promote.Mutation {
	out := []promote.Mutation{promote.Promote, promote.Pause, promote.Resume, promote.Abort}
	for _, r := range f.ReleaseNames() {
		out = append(out, func(f *fleet.Fleet) (promote.Step, error) { return promote.Start(f, r) })
	}
	for _, w := range promote.Waits(f) {
		if w.Approval != "" && w.Cluster == "" {
			out = append(out, func(f *fleet.Fleet) (promote.Step, error) { return promote.Approve(f, w.Approval) })
		}
	}
	return out
}

// stateKey compares promotions by meaning: approvals as a set, a stage
// left out as "all" (its default).
func stateKey(p fleet.Promotion) string {
	var b strings.Builder
	b.WriteString("stable=" + p.Stable)
	if r := p.Rollout; r != nil {
		stage := r.Stage
		if stage == "" {
			stage = fleet.StageAll
		}
		b.WriteString(" rollout=" + r.Release + "@" + r.Wave + "/" + stage + " aborted=" + strconv.FormatBool(r.Aborted))
	}
	b.WriteString(" paused=" + strconv.FormatBool(p.Paused))
	approved := slices.Clone(p.Approved)
	slices.Sort(approved)
	b.WriteString(" approved=" + strings.Join(slices.Compact(approved), ","))
	return b.String()
}
