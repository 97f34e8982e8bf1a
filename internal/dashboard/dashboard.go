package dashboard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/promote"
)

// Dashboard keeps every cluster's view and serves the page (Handler).
type Dashboard struct {
	o    Options
	page *pageTemplates
	// allowed are o.AllowedHosts as the Host check compares them.
	allowed []string

	mu sync.Mutex
	// The fleet file as last read well, the repository's HEAD, and what
	// promote's status says of them.
	fleet    *fleet.Fleet
	revision string
	status   *promote.Status
	waits    []promote.Waiting
	// fleetErr is why the fleet file as it is now could not be read; the
	// page keeps showing the last good one, and says so.
	fleetErr  string
	fleetStat fileStamp
	// gen counts the fleet files installed.
	gen     uint64
	watches map[string]*clusterWatch
	// seq numbers every change; entries hold each fragment and the seq of
	// its last change, so a stream sends what changed since it last
	// looked. layoutSeq is the seq of the last change of the page's
	// layout (the waves and clusters), after which a browser reloads.
	seq       uint64
	layoutSeq uint64
	promo     entry
	entries   map[string]*entry
	subs      map[chan struct{}]struct{}
}

// entry is one fragment of the page, rendered once per change.
type entry struct {
	view *ClusterView
	html []byte
	seq  uint64
}

type fileStamp struct {
	mod  time.Time
	size int64
	rev  string
}

// New reads the fleet file and prepares the dashboard; Run starts watching.
func New(o Options) (*Dashboard, error) {
	o.setDefaults()
	page, err := newPageTemplates()
	if err != nil {
		return nil, err
	}
	var allowed []string
	for _, h := range o.AllowedHosts {
		n, err := ParseAllowedHost(h)
		if err != nil {
			return nil, fmt.Errorf("allowed host: %w", err)
		}
		allowed = append(allowed, n)
	}
	d := &Dashboard{o: o, page: page, allowed: allowed, watches: map[string]*clusterWatch{}, entries: map[string]*entry{}, subs: map[chan struct{}]struct{}{}}
	f, err := fleet.Load(o.FleetFile)
	if err != nil {
		return nil, err
	}
	stamp, _ := d.stamp()
	d.setFleet(f, stamp)
	return d, nil
}

// stamp is what says the fleet file or the repository changed. Outside
// a git repository there is no revision, and the gate does not check one.
func (d *Dashboard) stamp() (fileStamp, error) {
	fi, err := os.Stat(d.o.FleetFile)
	if err != nil {
		return fileStamp{}, err
	}
	rev, _ := gate.HeadRevision(filepath.Dir(d.o.FleetFile))
	return fileStamp{mod: fi.ModTime(), size: fi.Size(), rev: rev}, nil
}

// setFleet installs a fleet file that was read well.
func (d *Dashboard) setFleet(f *fleet.Fleet, stamp fileStamp) {
	st := promote.StatusOf(f)
	st.Notices = promote.RepositoryNotices(f, filepath.Dir(d.o.FleetFile))
	d.mu.Lock()
	old := d.fleet
	d.fleet, d.revision, d.status, d.waits = f, stamp.rev, st, promote.Waits(f)
	d.fleetErr, d.fleetStat = "", stamp
	d.gen++
	if old == nil || !sameLayout(old, f) {
		d.seq++
		d.layoutSeq = d.seq
	}
	d.mu.Unlock()
	d.publishPromotion()
}

// sameLayout says two fleet files have the same waves of the same clusters
// in the same order, and the same contexts.
func sameLayout(a, b *fleet.Fleet) bool {
	if len(a.Waves) != len(b.Waves) {
		return false
	}
	for i := range a.Waves {
		if a.Waves[i].Name != b.Waves[i].Name || !slices.Equal(a.Waves[i].Clusters, b.Waves[i].Clusters) {
			return false
		}
		for _, c := range a.Waves[i].Clusters {
			if a.Clusters[c] == nil || b.Clusters[c] == nil || a.Clusters[c].Context != b.Clusters[c].Context {
				return false
			}
		}
	}
	return true
}

// fleetNow is the fleet file and revision the views are judged against,
// and the fleet file's generation (which numbers the fleet files
// installed), read together.
func (d *Dashboard) fleetNow() (*fleet.Fleet, string, uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.fleet, d.revision, d.gen
}

// clusterStatus is status's line for cluster.
func (d *Dashboard) clusterStatus(cluster string) promote.ClusterStatus {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, cs := range d.status.Clusters {
		if cs.Cluster == cluster {
			return cs
		}
	}
	return promote.ClusterStatus{Cluster: cluster}
}

// clusterWaits are the promotion's waits that name cluster, in status's
// words ("approval of …: gpufleet approve …").
func (d *Dashboard) clusterWaits(cluster string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, w := range d.waits {
		if w.Cluster == cluster {
			out = append(out, waitText(w))
		}
	}
	return out
}

// waitText is how `gpufleet status` words a wait (promote.StatusOf).
func waitText(w promote.Waiting) string {
	if w.Approval != "" {
		return fmt.Sprintf("approval of %s: gpufleet approve %s", w.What, w.Approval)
	}
	return w.What
}

// Run watches every cluster and the fleet file until ctx ends.
func (d *Dashboard) Run(ctx context.Context) error {
	d.syncWatches(ctx)
	t := time.NewTicker(d.o.FleetPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			d.mu.Lock()
			ws := slices.Collect(func(yield func(*clusterWatch) bool) {
				for _, w := range d.watches {
					if !yield(w) {
						return
					}
				}
			})
			d.mu.Unlock()
			for _, w := range ws {
				<-w.done
			}
			return nil
		case <-t.C:
			d.reloadFleet(ctx)
		}
	}
}

// reloadFleet reads the fleet file again when it or HEAD changed.
func (d *Dashboard) reloadFleet(ctx context.Context) {
	stamp, err := d.stamp()
	d.mu.Lock()
	same := err == nil && stamp == d.fleetStat
	d.mu.Unlock()
	if same {
		return
	}
	var f *fleet.Fleet
	if err == nil {
		f, err = fleet.Load(d.o.FleetFile)
	}
	if err != nil {
		d.mu.Lock()
		d.fleetErr, d.fleetStat = err.Error(), stamp
		d.mu.Unlock()
		d.publishPromotion()
		return
	}
	d.setFleet(f, stamp)
	d.syncWatches(ctx)
	d.mu.Lock()
	for _, w := range d.watches {
		w.wake()
	}
	d.mu.Unlock()
	d.notify()
}

// syncWatches starts a watch for each cluster of the fleet file (or one
// whose context changed) and stops those of clusters it no longer has.
func (d *Dashboard) syncWatches(ctx context.Context) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for name, w := range d.watches {
		if c := d.fleet.Clusters[name]; c == nil || c.Context != w.context {
			w.cancel()
			delete(d.watches, name)
			delete(d.entries, name)
		}
	}
	for _, name := range d.fleet.ClusterNames() {
		if d.watches[name] != nil {
			continue
		}
		w := newClusterWatch(d, name, d.fleet.Clusters[name].Context)
		wctx, cancel := context.WithCancel(ctx)
		w.cancel = cancel
		d.watches[name] = w
		go w.run(wctx)
	}
}

// publish renders a cluster's view and, when the fragment differs from
// the one browsers have, numbers it as a change and wakes the streams.
func (d *Dashboard) publish(v *ClusterView) {
	// Most rebuilds find what the last one found (a Flux reconcile that
	// changed nothing, a resync); rendering is most of a rebuild's cost.
	d.mu.Lock()
	if e := d.entries[v.Name]; e != nil && sameView(e.view, v) {
		e.view = v
		d.mu.Unlock()
		return
	}
	d.mu.Unlock()
	var buf bytes.Buffer
	if err := d.page.cluster(&buf, v); err != nil {
		d.o.Logf("cluster %s: render: %v", v.Name, err)
		return
	}
	d.mu.Lock()
	if w := d.watches[v.Name]; w == nil || d.fleet.Clusters[v.Name] == nil {
		d.mu.Unlock()
		return
	}
	e := d.entries[v.Name]
	if e != nil && bytes.Equal(e.html, buf.Bytes()) {
		e.view = v
		d.mu.Unlock()
		return
	}
	d.seq++
	d.entries[v.Name] = &entry{view: v, html: buf.Bytes(), seq: d.seq}
	d.mu.Unlock()
	d.notify()
}

// sameView says two views show the same, whenever they were read.
func sameView(a, b *ClusterView) bool {
	x, y := *a, *b
	x.Read, y.Read = time.Time{}, time.Time{}
	x.LastReach, y.LastReach = time.Time{}, time.Time{}
	return reflect.DeepEqual(&x, &y)
}

// publishPromotion renders the promotion's part of the page.
func (d *Dashboard) publishPromotion() {
	d.mu.Lock()
	pv := d.promotionView()
	d.mu.Unlock()
	var buf bytes.Buffer
	if err := d.page.promotion(&buf, pv); err != nil {
		d.o.Logf("promotion: render: %v", err)
		return
	}
	d.mu.Lock()
	if !bytes.Equal(d.promo.html, buf.Bytes()) {
		d.seq++
		d.promo = entry{html: buf.Bytes(), seq: d.seq}
	}
	d.mu.Unlock()
	d.notify()
}

func (d *Dashboard) notify() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for ch := range d.subs {
		signal(ch)
	}
}

func (d *Dashboard) subscribe() chan struct{} {
	ch := make(chan struct{}, 1)
	d.mu.Lock()
	d.subs[ch] = struct{}{}
	d.mu.Unlock()
	return ch
}

func (d *Dashboard) unsubscribe(ch chan struct{}) {
	d.mu.Lock()
	delete(d.subs, ch)
	d.mu.Unlock()
}

// Views returns every cluster's current view, in the fleet file's wave
// order.
func (d *Dashboard) Views() []*ClusterView {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []*ClusterView
	for _, w := range d.fleet.Waves {
		for _, c := range w.Clusters {
			if e := d.entries[c]; e != nil {
				out = append(out, e.view)
			}
		}
	}
	return out
}

// Stats are the dashboard's own costs, for its footer and benchmarks.
type Stats struct {
	Clusters int `json:"clusters"`
	// Requests counts every API request made to each cluster since it
	// was first watched (lists, watches, probes, discovery).
	Requests map[string]int64 `json:"requests"`
	// Rebuilds counts every rebuild of each cluster's view.
	Rebuilds map[string]int64 `json:"rebuilds"`
	Streams  int              `json:"streams"`
}

// Stats returns the dashboard's counters.
func (d *Dashboard) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := Stats{Clusters: len(d.watches), Requests: map[string]int64{}, Rebuilds: map[string]int64{}, Streams: len(d.subs)}
	for name, w := range d.watches {
		s.Requests[name] = w.counts.requests.Load()
		s.Rebuilds[name] = w.counts.rebuilds.Load()
	}
	return s
}

// errNoFlusher says the response writer cannot stream.
var errNoFlusher = errors.New("the response cannot be streamed")
