package lab

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	"github.com/gpufleet/gpufleet/internal/sim"
	"github.com/gpufleet/gpufleet/internal/testworld/nodesim"
)

// Recorder samples one cluster while a story plays: each GPU node's phase
// over time (the demo's report draws it), which NVIDIADrivers select each
// node, the GPU Operator's own upgrade label, each node's driver pods, how
// many nodes were out of service at once and the fewest Ready workers of
// the workload. The story's checks read what it saw ([Recorder.Seen]).
type Recorder struct {
	c     client.Client
	start time.Time

	mu   sync.Mutex
	seen Seen
	// open is each node's phase segment still running; segments the ones
	// that ended; nodes every GPU node in the order first seen.
	open     map[string]sim.Segment
	segments []sim.Segment
	nodes    []string
}

// Seen is what a Recorder saw.
type Seen struct {
	// Samples counts the samples taken, Errs the ones that could not read
	// the cluster.
	Samples, Errs int
	// Overlaps are "node: a, b" whenever two NVIDIADrivers selected one
	// node.
	Overlaps []string
	// Upgrade are "node=state" whenever the GPU Operator's upgrade state
	// label was set.
	Upgrade []string
	// DriverPods are, per node, the distinct "owner@version" of its driver
	// pods, in the order seen.
	DriverPods map[string][]string
	// NotReady are, per node, the "rollout/phase" it was in while NotReady.
	NotReady map[string][]string
	// MaxUnavailable is the most GPU nodes seen out of service at once:
	// NotReady, cordoned, or in a rollout phase that takes them out.
	MaxUnavailable int
	// MinReady is the fewest Ready pods of the workload ([WorkloadApp])
	// seen once it had its replicas; -1 before.
	MinReady int
}

// NewRecorder returns a recorder of the cluster c reads, whose timeline
// starts at start.
func NewRecorder(c client.Client, start time.Time) *Recorder {
	return &Recorder{c: c, start: start, open: map[string]sim.Segment{},
		seen: Seen{DriverPods: map[string][]string{}, NotReady: map[string][]string{}, MinReady: -1}}
}

// Run samples the cluster every period until ctx ends.
func (r *Recorder) Run(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		r.sample(ctx)
	}
}

func (r *Recorder) sample(ctx context.Context) {
	var nodes corev1.NodeList
	drivers := &unstructured.UnstructuredList{}
	drivers.SetAPIVersion(v1alpha1.NVIDIADriverAPIVersion)
	drivers.SetKind(v1alpha1.KindNVIDIADriver + "List")
	var pods corev1.PodList
	if r.c.List(ctx, &nodes) != nil || r.c.List(ctx, &pods, client.InNamespace("gpu-operator"),
		client.MatchingLabels{v1alpha1.LabelComponent: v1alpha1.ComponentNVIDIADriver}) != nil {
		r.mu.Lock()
		r.seen.Errs++
		r.mu.Unlock()
		return
	}
	_ = r.c.List(ctx, drivers) // absent before Flux applies the CRD
	var work corev1.PodList
	workErr := r.c.List(ctx, &work, client.MatchingLabels{"app": WorkloadApp})
	var gpu []corev1.Node
	for _, n := range nodes.Items {
		if _, ok := n.Labels[v1alpha1.LabelGFDProduct]; ok {
			gpu = append(gpu, n)
		}
	}
	r.phases(gpu, time.Now())
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen.Samples++
	unavailable := 0
	for _, n := range gpu {
		phase := n.Labels[v1alpha1.LabelPhase]
		inFlight := phase != "" && phase != "Pending" && phase != "Done" && phase != "RolledBack"
		ready := planner.NodeReady(&n)
		if !ready || n.Spec.Unschedulable || inFlight {
			unavailable++
		}
		if rp := n.Labels[v1alpha1.LabelRollout] + "/" + phase; !ready && phase != "" && !slices.Contains(r.seen.NotReady[n.Name], rp) {
			r.seen.NotReady[n.Name] = append(r.seen.NotReady[n.Name], rp)
		}
		var selecting []string
		for _, d := range drivers.Items {
			sel, _, _ := unstructured.NestedStringMap(d.Object, "spec", "nodeSelector")
			if len(sel) > 0 && labels.SelectorFromSet(sel).Matches(labels.Set(n.Labels)) {
				selecting = append(selecting, d.GetName())
			}
		}
		if len(selecting) > 1 {
			r.seen.Overlaps = append(r.seen.Overlaps, n.Name+": "+strings.Join(selecting, ", "))
		}
		if st, ok := n.Labels[v1alpha1.LabelOperatorUpgradeState]; ok {
			r.seen.Upgrade = append(r.seen.Upgrade, n.Name+"="+st)
		}
	}
	r.seen.MaxUnavailable = max(r.seen.MaxUnavailable, unavailable)
	if workErr == nil {
		ready := 0
		for _, p := range work.Items {
			if p.DeletionTimestamp == nil && planner.PodReady(&p) {
				ready++
			}
		}
		if r.seen.MinReady >= 0 || ready == WorkloadReplicas {
			if r.seen.MinReady < 0 || ready < r.seen.MinReady {
				r.seen.MinReady = ready
			}
		}
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Spec.NodeName == "" {
			continue
		}
		owner := "none"
		for _, ref := range p.OwnerReferences {
			if ref.Controller != nil && *ref.Controller {
				owner = ref.Kind + "/" + ref.Name
			}
		}
		entry := owner + "@" + nodesim.DriverPodVersion(&p)
		seen := r.seen.DriverPods[p.Spec.NodeName]
		if len(seen) == 0 || seen[len(seen)-1] != entry {
			r.seen.DriverPods[p.Spec.NodeName] = append(seen, entry)
		}
	}
}

// phases records each GPU node's phase at now; a node the controller has
// not touched (or released) counts as Pending, which the timeline leaves
// blank.
func (r *Recorder) phases(nodes []corev1.Node, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range nodes {
		phase := v1alpha1.NodePhase(n.Labels[v1alpha1.LabelPhase])
		if phase == "" {
			phase = v1alpha1.NodePending
		}
		s, ok := r.open[n.Name]
		if !ok {
			r.nodes = append(r.nodes, n.Name)
		}
		if ok && s.Phase == phase {
			continue
		}
		if ok {
			s.To = now
			r.segments = append(r.segments, s)
		}
		r.open[n.Name] = sim.Segment{Node: n.Name, Phase: phase, From: now}
	}
}

// Seen returns a copy of what the recorder saw so far.
func (r *Recorder) Seen() Seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.seen
	s.Overlaps, s.Upgrade = slices.Clone(s.Overlaps), slices.Clone(s.Upgrade)
	s.DriverPods, s.NotReady = maps.Clone(s.DriverPods), maps.Clone(s.NotReady)
	for k, v := range s.DriverPods {
		s.DriverPods[k] = slices.Clone(v)
	}
	for k, v := range s.NotReady {
		s.NotReady[k] = slices.Clone(v)
	}
	return s
}

// Timeline closes the open phase segments at end and returns the
// cluster's nodes and their phases over time in the simulator's form, for
// its SVG renderer.
func (r *Recorder) Timeline(end time.Time) *sim.Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	segs := slices.Clone(r.segments)
	for _, s := range r.open {
		s.To = end
		segs = append(segs, s)
	}
	res := &sim.Result{Start: r.start, End: end}
	for _, name := range r.nodes {
		res.Nodes = append(res.Nodes, planner.Node{Name: name})
	}
	for _, s := range segs {
		if s.Phase != v1alpha1.NodePending && s.To.After(s.From) {
			res.Timeline = append(res.Timeline, s)
		}
	}
	return res
}
