package lab

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/sim"
)

// recorder samples every cluster's nodes while the story plays, so the
// report can draw each node's phases over time.
type recorder struct {
	mu       sync.Mutex
	start    time.Time
	open     map[string]map[string]sim.Segment // cluster → node → open segment
	segments map[string][]sim.Segment
	nodes    map[string][]string
}

func newRecorder(now time.Time) *recorder {
	return &recorder{start: now, open: map[string]map[string]sim.Segment{}, segments: map[string][]sim.Segment{}, nodes: map[string][]string{}}
}

// run samples the cluster every period until ctx ends.
func (r *recorder) run(ctx context.Context, cluster string, c client.Reader, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		var nodes corev1.NodeList
		if err := c.List(ctx, &nodes, client.HasLabels{v1alpha1.LabelGFDDriverFull}); err == nil {
			r.sample(cluster, nodes.Items, time.Now())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sample records each node's phase at now; a node the controller has not
// touched (or released) counts as Pending, which the picture leaves blank.
func (r *recorder) sample(cluster string, nodes []corev1.Node, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	open := r.open[cluster]
	if open == nil {
		open = map[string]sim.Segment{}
		r.open[cluster] = open
	}
	for _, n := range nodes {
		phase := v1alpha1.NodePhase(n.Labels[v1alpha1.LabelPhase])
		if phase == "" {
			phase = v1alpha1.NodePending
		}
		s, ok := open[n.Name]
		if !ok {
			r.nodes[cluster] = append(r.nodes[cluster], n.Name)
		}
		if ok && s.Phase == phase {
			continue
		}
		if ok {
			s.To = now
			r.segments[cluster] = append(r.segments[cluster], s)
		}
		open[n.Name] = sim.Segment{Node: n.Name, Phase: phase, From: now}
	}
}

// result closes the open segments at end and returns one cluster's
// timeline in the simulator's form, for its SVG renderer.
func (r *recorder) result(cluster string, end time.Time) *sim.Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	segs := append([]sim.Segment(nil), r.segments[cluster]...)
	for _, s := range r.open[cluster] {
		s.To = end
		segs = append(segs, s)
	}
	res := &sim.Result{Start: r.start, End: end}
	for _, name := range r.nodes[cluster] {
		res.Nodes = append(res.Nodes, nodeNamed(name))
	}
	for _, s := range segs {
		if s.Phase != v1alpha1.NodePending && s.To.After(s.From) {
			res.Timeline = append(res.Timeline, s)
		}
	}
	return res
}
