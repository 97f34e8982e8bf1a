package sim

import (
	"cmp"
	"container/heap"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// The streams a workload draws from, each seeded from Config.Seed and one
// of these: the jobs submitted (their times, kinds, sizes and lengths),
// the jobs already running at the start, and the scheduler's choices
// among equally good nodes. The first two never depend on what the
// rollout does, so two planners compared on one seed meet the same jobs.
const (
	streamArrivals  = 0x6a09e667f3bcc908
	streamStart     = 0xbb67ae8584caa73b
	streamPlacement = 0x3c6ef372fe94f82b
)

// job is one job of the workload.
type job struct {
	id    int
	class *JobClass
	// gpus are the GPUs it holds on each of its nodes.
	gpus int
	// work is the compute it needs in all; saved what its checkpoints
	// hold (where its next run goes on from).
	work, saved time.Duration
	submitted   time.Time
	// nodes are the nodes its current run holds (by index), nil while it
	// waits; runStart is when that run started.
	nodes    []int
	runStart time.Time
	// run counts its runs, so that the end planned for a run an
	// interruption cut short is dropped.
	run           int
	interruptions int
	// gpuPod: the controller takes its pods for GPU pods (gpuPod): it
	// observes them, and a drain evicts them.
	gpuPod bool
}

// lost is what interrupting j at t destroys of its run: the time since
// its last checkpoint (its run's start when it never checkpoints), and
// what its checkpoints hold then.
func (j *job) lost(t time.Time) (lost, saved time.Duration) {
	ran := t.Sub(j.runStart)
	lost = ran
	if c := j.class.Checkpoint; c > 0 {
		lost = ran % c
	}
	return lost, j.saved + ran - lost
}

// jobs is a workload at play on a world's nodes: the jobs running and
// waiting, and the scheduler that places them. It keeps its own clock and
// events, and is brought up to the world's time at the start of every
// round (advance), before anything else of the round happens: the nodes
// it places jobs on change only in rounds, so between two rounds it plays
// against what the last one left, and its events never wake the runner.
type jobs struct {
	w    *World
	cfg  *Workload
	gpus int
	// perHour is the arrivals' rate.
	perHour float64

	arrivals, placement *rand.Rand

	// Per node, by the world's index: free GPUs, whether new pods may go
	// there (present, schedulable, Ready, its driver Ready), its domain
	// (an index into domains, -1 for none) and the jobs with a pod on it.
	free     []int
	eligible []bool
	domain   []int
	on       [][]*job
	// gpus and starts sum, per node, the GPUs of the pods on it and each
	// one's GPUs × its run's start (nanoseconds since epoch), so that the
	// GPU work in flight is gpus × now − starts: what the controller
	// observes costs a round two multiplications a node.
	gpuSum, startSum []int64
	// pods counts, per node, the GPU pods on it: of the jobs on it, those
	// the controller takes for GPU pods (job.gpuPod), which alone gpuSum
	// and startSum sum.
	pods  []int
	epoch time.Time
	// byFree holds the eligible nodes by their free GPUs, each at pos in
	// its list (-1 when in none): the scheduler's index.
	byFree [][]int
	pos    []int
	// domains are the maintenance domains: their nodes present, and how
	// many of those are eligible with every GPU free (in byFree[gpus]).
	domains []domainState
	// reserved marks the whole free nodes a waiting gang holds in this
	// scheduling pass (schedule), out of byFree meanwhile.
	reserved []bool

	waiting []*job
	events  eventQueue
	seq     int
	// clock is the time of what is happening now; last how far advance
	// has brought the jobs.
	clock, last time.Time
	nextID      int
	// drains are the draining nodes whose drain waits for the jobs
	// spec.evict.waitForCompletion names (evict.go).
	drains map[int]*drainWait
	res    WorkloadResult
}

// domainState is one maintenance domain of the jobs' nodes.
type domainState struct {
	key        string
	size, free int
}

// newJobs puts cfg's workload on w's nodes as they are at the start: the
// jobs already running (at Utilization), and the first arrival. Run has
// checked cfg against the nodes (Workload.check).
func newJobs(w *World, cfg *Workload, seed uint64) *jobs {
	n := len(w.nodes)
	m := &jobs{
		w: w, cfg: cfg, gpus: cfg.gpusPerNode(),
		arrivals:  rand.New(rand.NewPCG(seed, streamArrivals)),
		placement: rand.New(rand.NewPCG(seed, streamPlacement)),
		free:      make([]int, n), eligible: make([]bool, n), domain: make([]int, n), on: make([][]*job, n),
		gpuSum: make([]int64, n), startSum: make([]int64, n), pods: make([]int, n), epoch: w.now,
		pos: make([]int, n), reserved: make([]bool, n), drains: map[int]*drainWait{},
		clock: w.now, last: w.now,
	}
	m.byFree = make([][]int, m.gpus+1)
	for i := range n {
		m.free[i], m.pos[i], m.domain[i] = m.gpus, -1, -1
	}
	m.indexDomains()
	present := 0
	for i := range w.nodes {
		if m.present(i) {
			present++
		}
	}
	sizes := map[string]int{}
	for _, d := range m.domains {
		sizes[d.key] = d.size
	}
	m.perHour = cfg.ArrivalsPerHour
	if mean := cfg.meanGPUHours(sizes); m.perHour == 0 && mean > 0 {
		m.perHour = cfg.Utilization * float64(present*m.gpus) / mean
	}
	m.refresh()
	m.fill(rand.New(rand.NewPCG(seed, streamStart)), present)
	m.nextArrival()
	return m
}

// present reports whether node i is in the cluster: a node not there yet,
// or gone, has no labels (see World.Join).
func (m *jobs) present(i int) bool { return len(m.w.nodes[i].Labels) > 0 }

// indexDomains finds each node's maintenance domain and each domain's
// present nodes, in the order of their keys.
func (m *jobs) indexDomains() {
	label := m.cfg.DomainLabel
	m.domains = m.domains[:0]
	if label == "" {
		return
	}
	keys := map[string]int{}
	for i := range m.w.nodes {
		m.domain[i] = -1
		if v := m.w.nodes[i].Labels[label]; v != "" && m.present(i) {
			if _, ok := keys[v]; !ok {
				keys[v] = len(keys)
			}
		}
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	slices.Sort(sorted)
	for d, k := range sorted {
		keys[k] = d
		m.domains = append(m.domains, domainState{key: k})
	}
	for i := range m.w.nodes {
		if v := m.w.nodes[i].Labels[label]; v != "" && m.present(i) {
			m.domain[i] = keys[v]
			m.domains[keys[v]].size++
		}
	}
}

// refresh reads again which nodes may take new pods, after a round.
func (m *jobs) refresh() {
	if m.cfg.DomainLabel != "" {
		for i := range m.w.nodes {
			m.unfile(i)
		}
		m.indexDomains()
	}
	refile := m.cfg.DomainLabel != ""
	for i := range m.w.nodes {
		n := &m.w.nodes[i]
		e := m.present(i) && n.Ready && !n.Unschedulable && n.DriverReady
		// A node is filed again when it changed, or when the domains were
		// indexed again (and every node taken out).
		if e != m.eligible[i] || refile {
			m.eligible[i] = e
			m.file(i)
		}
	}
}

// file puts node i in the scheduler's index where it belongs now.
func (m *jobs) file(i int) {
	m.unfile(i)
	if !m.eligible[i] || m.reserved[i] {
		return
	}
	f := m.free[i]
	m.pos[i] = len(m.byFree[f])
	m.byFree[f] = append(m.byFree[f], i)
	if f == m.gpus && m.domain[i] >= 0 {
		m.domains[m.domain[i]].free++
	}
}

// unfile takes node i out of the scheduler's index.
func (m *jobs) unfile(i int) {
	p := m.pos[i]
	if p < 0 {
		return
	}
	f := m.free[i]
	list := m.byFree[f]
	last := list[len(list)-1]
	list[p], m.pos[last] = last, p
	m.byFree[f] = list[:len(list)-1]
	m.pos[i] = -1
	if f == m.gpus && m.domain[i] >= 0 {
		m.domains[m.domain[i]].free--
	}
}

// after plans fn at t on the jobs' own clock.
func (m *jobs) after(t time.Time, fn func()) {
	m.seq++
	heap.Push(&m.events, event{at: t, seq: m.seq, fn: fn})
}

// advance brings the jobs up to to: the jobs waiting are placed on what
// the last round freed, as of then, and the arrivals and ends due happen,
// each at its own time.
func (m *jobs) advance(to time.Time) {
	m.refresh()
	m.clock = m.last
	m.schedule()
	for len(m.events) > 0 && !m.events[0].at.After(to) {
		e := heap.Pop(&m.events).(event)
		m.clock = e.at
		e.fn()
	}
	m.clock, m.last = to, to
}

// draw draws a job from r: its kind, GPUs and length.
func (m *jobs) draw(r *rand.Rand) *job {
	total := 0.0
	for _, c := range m.cfg.Mix {
		total += c.Weight
	}
	x, k := r.Float64()*total, 0
	for k < len(m.cfg.Mix)-1 && x >= m.cfg.Mix[k].Weight {
		x -= m.cfg.Mix[k].Weight
		k++
	}
	c := &m.cfg.Mix[k]
	j := &job{id: m.nextID, class: c, gpus: m.gpus, gpuPod: m.gpuPod(c)}
	m.nextID++
	if len(c.GPUs) > 0 && !c.multiNode() {
		j.gpus = c.GPUs[r.IntN(len(c.GPUs))]
	}
	j.work = max(c.Duration.Draw(r), time.Minute)
	return j
}

// nextArrival plans the next job's submission.
func (m *jobs) nextArrival() {
	if m.perHour <= 0 {
		return
	}
	gap := time.Duration(m.arrivals.ExpFloat64() / m.perHour * float64(time.Hour))
	j := m.draw(m.arrivals)
	m.after(m.clock.Add(gap), func() {
		j.submitted = m.clock
		m.submit(j)
		m.nextArrival()
		m.schedule()
	})
}

// fill starts the jobs running when the rollout is created: drawn until
// Utilization of the present nodes' GPUs are held (or the jobs drawn stop
// fitting), each placed as the scheduler would and some way into its run,
// with the checkpoints it took since. A job running at a given moment is
// a long one more often than a job submitted is, in proportion to its
// length (a job of 12 hours is running at twice as many moments as one of
// 6), so each drawn is kept with a chance in proportion to its length, as
// at a moment of a steady load; else the first hours would see the short
// jobs end together and the fleet half empty.
func (m *jobs) fill(r *rand.Rand, present int) {
	longest := time.Duration(0)
	for _, c := range m.cfg.Mix {
		// A log-normal's 99.9th percentile: e^(3.09σ) × the median.
		longest = max(longest, time.Duration(float64(c.Duration.Median)*math.Exp(3.09*c.Duration.Spread)))
	}
	target := int(m.cfg.Utilization * float64(present*m.gpus))
	busy, misses := 0, 0
	for busy < target && misses < 100 {
		j := m.draw(r)
		if keep := r.Float64(); keep*float64(longest) > float64(j.work) {
			continue
		}
		age := time.Duration(r.Float64() * float64(j.work))
		now := m.clock
		m.clock = now.Add(-age) // its run started then
		placed := m.place(j)
		m.clock = now
		if !placed {
			misses++
			continue
		}
		j.submitted = j.runStart
		m.planEnd(j)
		busy += j.gpus * len(j.nodes)
	}
}

// submit puts j with the jobs waiting, by submission: a job interrupted
// keeps its place from its first submission, ahead of newer ones.
func (m *jobs) submit(j *job) {
	k, _ := slices.BinarySearchFunc(m.waiting, j, func(a, b *job) int {
		if c := a.submitted.Compare(b.submitted); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	m.waiting = slices.Insert(m.waiting, k, j)
}

// schedule places the jobs waiting, in order, each where it fits now
// (backfill): a job of one node on the eligible node with the fewest free
// GPUs that hold it (bin packing, which keeps whole nodes free for gangs),
// a gang on whole free nodes, all at once. A gang that does not fit holds
// the whole free nodes it could use for the rest of the pass, so that the
// jobs behind it cannot take them one by one and it waits for ever.
func (m *jobs) schedule() {
	var held []int
	kept := m.waiting[:0]
	for _, j := range m.waiting {
		if m.place(j) {
			m.planEnd(j)
			continue
		}
		kept = append(kept, j)
		if j.class.multiNode() {
			held = m.hold(j, held)
		}
	}
	clear(m.waiting[len(kept):])
	m.waiting = kept
	for _, i := range held {
		m.reserved[i] = false
		m.file(i)
	}
}

// place starts j's run now on nodes that fit it, if any do.
func (m *jobs) place(j *job) bool {
	c := j.class
	var nodes []int
	switch {
	case c.Domain:
		var fits []int
		for d := range m.domains {
			if s := &m.domains[d]; s.size > 0 && s.free == s.size {
				fits = append(fits, d)
			}
		}
		if len(fits) == 0 {
			return false
		}
		d := fits[m.placement.IntN(len(fits))]
		for _, i := range m.byFree[m.gpus] {
			if m.domain[i] == d {
				nodes = append(nodes, i)
			}
		}
		slices.Sort(nodes)
	case c.multiNode():
		whole := m.byFree[m.gpus]
		if len(whole) < c.span() {
			return false
		}
		// span distinct nodes of whole, each as likely: a draw again on a
		// node taken (a gang is a few nodes of many).
		for len(nodes) < c.span() {
			if i := whole[m.placement.IntN(len(whole))]; !slices.Contains(nodes, i) {
				nodes = append(nodes, i)
			}
		}
		slices.Sort(nodes)
	default:
		for f := j.gpus; f <= m.gpus; f++ {
			if list := m.byFree[f]; len(list) > 0 {
				nodes = []int{list[m.placement.IntN(len(list))]}
				break
			}
		}
		if nodes == nil {
			return false
		}
	}
	m.occupy(j, nodes)
	return true
}

// occupy starts j's run now on nodes.
func (m *jobs) occupy(j *job, nodes []int) {
	for _, i := range nodes {
		m.unfile(i)
		m.free[i] -= j.gpus
		m.on[i] = append(m.on[i], j)
		if j.gpuPod {
			m.pods[i]++
			m.gpuSum[i] += int64(j.gpus)
			m.startSum[i] += int64(j.gpus) * int64(m.clock.Sub(m.epoch))
		}
		m.file(i)
	}
	j.nodes, j.runStart = nodes, m.clock
	j.run++
}

// hold reserves for gang j, which does not fit, the whole free nodes it
// waits on: any of them for a gang of nodes, those of the domain nearest
// to being free for a gang of a domain. It returns held with them added.
func (m *jobs) hold(j *job, held []int) []int {
	take := func(i int) {
		m.unfile(i)
		m.reserved[i] = true
		held = append(held, i)
	}
	if j.class.Domain {
		best := -1
		for d := range m.domains {
			if s := &m.domains[d]; s.free > 0 && (best < 0 || s.free > m.domains[best].free) {
				best = d
			}
		}
		for _, i := range slices.Clone(m.byFree[m.gpus]) {
			if best >= 0 && m.domain[i] == best {
				take(i)
			}
		}
		return held
	}
	whole := slices.Clone(m.byFree[m.gpus])
	slices.Sort(whole)
	for _, i := range whole[:min(len(whole), j.class.span())] {
		take(i)
	}
	return held
}

// planEnd plans the end of j's run, when it has done the work left.
func (m *jobs) planEnd(j *job) {
	run := j.run
	m.after(j.runStart.Add(j.work-j.saved), func() {
		if j.run == run && j.nodes != nil {
			m.finishedWaitedFor(j)
			m.release(j)
			m.schedule()
		}
	})
}

// release takes j's pods off its nodes.
func (m *jobs) release(j *job) {
	for _, i := range j.nodes {
		m.unfile(i)
		m.free[i] += j.gpus
		m.on[i] = slices.DeleteFunc(m.on[i], func(o *job) bool { return o == j })
		if j.gpuPod {
			m.pods[i]--
			m.gpuSum[i] -= int64(j.gpus)
			m.startSum[i] -= int64(j.gpus) * int64(j.runStart.Sub(m.epoch))
		}
		m.file(i)
		m.w.observeNode(i)
	}
	nodes := j.nodes
	j.nodes = nil
	for _, i := range nodes {
		m.jobLeft(i)
	}
}

// interrupt evicts j now: its run ends, the work since its last checkpoint
// is destroyed on all of its GPUs (counted against the rollout when
// counted), and it waits to run again from that checkpoint.
func (m *jobs) interrupt(j *job, counted bool) {
	lost, saved := j.lost(m.clock)
	if counted {
		m.res.GPUHoursDestroyed += lost.Hours() * float64(j.gpus*len(j.nodes))
		m.res.Interruptions++
		j.interruptions++
		if j.interruptions == 1 {
			m.res.JobsInterrupted++
		}
		if j.class.multiNode() {
			m.res.MostMultiNodeInterruptions = max(m.res.MostMultiNodeInterruptions, j.interruptions)
		}
	}
	j.saved = saved
	j.run++
	m.release(j)
	if j.saved < j.work {
		m.submit(j)
	}
}

// evictNode interrupts every job with a pod on node i.
func (m *jobs) evictNode(i int, counted bool) {
	for len(m.on[i]) > 0 {
		m.interrupt(m.on[i][0], counted)
	}
}

// drainNode interrupts, for node i's drain, the jobs whose pods the
// controller takes for GPU pods; the others run on until the driver is
// swapped under them (evictNode).
func (m *jobs) drainNode(i int) {
	for {
		k := slices.IndexFunc(m.on[i], func(j *job) bool { return j.gpuPod })
		if k < 0 {
			return
		}
		m.interrupt(m.on[i][k], true)
	}
}

// gpuPod reports whether the controller takes the pods of a job of class
// c for GPU pods: planner.HoldsGPU, the controller's one reading, of a pod
// holding what c's jobs hold (a GPU request, or a claim of c.Claim whose
// devices are GPUs when that driver is one of the workload's DRA drivers).
func (m *jobs) gpuPod(c *JobClass) bool {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "sim", Name: c.Name, Labels: c.Labels}}
	if c.Claim == "" {
		pod.Spec.Containers = []corev1.Container{{Name: "job", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{v1alpha1.ResourceGPU: *resource.NewQuantity(1, resource.DecimalSI)},
		}}}
		return planner.HoldsGPU(pod, nil, nil)
	}
	claim := "job-" + c.Claim
	pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimName: &claim}}
	return planner.HoldsGPU(pod, nil, simClaims{drivers: m.cfg.draDrivers(), driver: c.Claim})
}

// simClaims is the one claim of a simulated job, of driver: a GPU when
// driver is one of drivers.
type simClaims struct {
	drivers []string
	driver  string
}

func (s simClaims) GPUs(string, string) int {
	if slices.Contains(s.drivers, s.driver) {
		return 1
	}
	return 0
}

// observe writes what the controller observes of node i's GPU pods on the
// planner's node: how many, and their GPU-seconds in flight now. Nothing
// when the workload is unobserved.
func (m *jobs) observe(i int, n *planner.Node) {
	m.observeAt(i, n, int64(m.clock.Sub(m.epoch)))
}

// observeAt is observe at now nanoseconds since the epoch.
func (m *jobs) observeAt(i int, n *planner.Node, now int64) {
	if m.cfg.Unobserved {
		return
	}
	n.GPUPods = m.pods[i]
	n.GPUWork = float64(m.gpuSum[i]*now-m.startSum[i]) / float64(time.Second)
}
