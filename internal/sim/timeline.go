package sim

import (
	"time"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// timeline records each node's phases over time, for the SVG picture.
type timeline struct {
	on    bool
	open  map[string]Segment
	order []string
	segs  []Segment
}

func newTimeline(on bool, nodes []planner.Node) *timeline {
	t := &timeline{on: on}
	if !on {
		return t
	}
	t.open = make(map[string]Segment, len(nodes))
	for _, n := range nodes {
		t.order = append(t.order, n.Name)
	}
	return t
}

func (t *timeline) move(tr planner.Transition, now time.Time) {
	if !t.on {
		return
	}
	if s, ok := t.open[tr.Node]; ok {
		s.To = now
		if s.To.After(s.From) {
			t.segs = append(t.segs, s)
		}
	}
	t.open[tr.Node] = Segment{Node: tr.Node, Phase: tr.To, From: now}
}

// close ends the open segments at end; terminal phases get a sliver so the
// picture shows how each node ended.
func (t *timeline) close(end time.Time) []Segment {
	if !t.on {
		return nil
	}
	for _, name := range t.order {
		s, ok := t.open[name]
		if !ok {
			continue
		}
		s.To = end
		switch s.Phase {
		case v1alpha1.NodeDone, v1alpha1.NodeRolledBack, v1alpha1.NodeQuarantined:
			if !s.To.After(s.From) {
				s.To = s.From.Add(time.Minute)
			}
		}
		if s.To.After(s.From) {
			t.segs = append(t.segs, s)
		}
	}
	return t.segs
}
