package controller

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// expectations guard against the cache lagging behind the controller's own
// writes. A pass plans from the manager's cache; right after a pass patched
// a node, the next pass (woken by any watch event) may still read the node
// as it was, and would plan from a stale view: start a node twice, or miss
// one in flight when counting maxUnavailable. So each patch records the
// since-stamp it wrote, and a pass that finds a node without it yet waits
// for the cache instead of planning.
//
// This is not state: a restarted controller starts from a freshly synced
// cache, which holds every write, so losing the expectations loses nothing.
type expectations struct {
	mu sync.Mutex
	// since maps a node to the since-stamp last written to it, and when.
	since map[string]expected
}

type expected struct {
	stamp   string
	written time.Time
}

// expectTimeout drops an expectation the cache never met (someone else
// rewrote the annotation): waiting on it for ever would stop the rollout.
const expectTimeout = 30 * time.Second

// wrote records that node was patched with since-stamp stamp.
func (e *expectations) wrote(node, stamp string, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.since == nil {
		e.since = map[string]expected{}
	}
	e.since[node] = expected{stamp: stamp, written: now}
}

// stale returns a node the cache has not caught up on, or "" when the cache
// holds every write of this controller. Met expectations are forgotten.
func (e *expectations) stale(nodes map[string]*corev1.Node, now time.Time) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	lagging := ""
	for name, exp := range e.since {
		n, ok := nodes[name]
		switch {
		case !ok, n.Annotations[v1alpha1.AnnotationSince] == exp.stamp, now.Sub(exp.written) > expectTimeout:
			delete(e.since, name)
		case lagging == "" || name < lagging:
			lagging = name
		}
	}
	return lagging
}
