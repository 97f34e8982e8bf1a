package planner

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// Settings are a spec's numbers with the API's defaults applied (see
// v1alpha1.DefaultSoak and its neighbours): a field left zero, as a spec
// built in Go leaves it, means what the CRD's default would have written.
type Settings struct {
	Parallel        int
	MaxUnavailable  int
	Soak            time.Duration
	DrainTimeout    time.Duration
	InstallTimeout  time.Duration
	ValidateTimeout time.Duration
	FailureBudget   int
	// JobWait is spec.evict.waitForCompletion's timeout: how long a
	// draining node waits for the pods it names before its drain evicts
	// (see WaitingForJobs); zero when none are named.
	JobWait time.Duration
}

// SettingsFor resolves spec's numbers for a rollout over total nodes.
func SettingsFor(spec *v1alpha1.DriverRolloutSpec, total int) Settings {
	orDefault := func(d metav1.Duration, def time.Duration) time.Duration {
		if d.Duration <= 0 {
			return def
		}
		return d.Duration
	}
	parallel := int(spec.ParallelNodes)
	if parallel < 1 {
		parallel = v1alpha1.DefaultParallelNodes
	}
	return Settings{
		Parallel:        parallel,
		MaxUnavailable:  MaxUnavailable(spec.MaxUnavailable, total),
		Soak:            orDefault(spec.Soak, v1alpha1.DefaultSoak),
		DrainTimeout:    orDefault(spec.Timeouts.Drain, v1alpha1.DefaultDrainTimeout),
		InstallTimeout:  orDefault(spec.Timeouts.Install, v1alpha1.DefaultInstallTimeout),
		ValidateTimeout: orDefault(spec.Timeouts.Validate, v1alpha1.DefaultValidateTimeout),
		FailureBudget:   max(int(spec.FailureBudget), 0),
		JobWait:         jobWait(spec),
	}
}

func jobWait(spec *v1alpha1.DriverRolloutSpec) time.Duration {
	if w := spec.Evict.WaitForCompletion; w != nil && w.Timeout.Duration > 0 {
		return w.Timeout.Duration
	}
	return 0
}

// MaxUnavailable resolves a count or percentage of total nodes with the
// API's one rounding rule, v1alpha1.MaxUnavailableOf.
func MaxUnavailable(v *intstr.IntOrString, total int) int {
	return v1alpha1.MaxUnavailableOf(v, total)
}

// work is the planner's running view of one selected node, updated as
// transitions are decided so that a slot freed in this pass is refilled in
// this pass.
type work struct {
	n             *Node
	phase         v1alpha1.NodePhase
	failed        bool
	unschedulable bool
	adminCordoned bool
	canary        bool
	outOfService  bool
	// elsewhere names the other rollout the node is left to: the one it
	// belongs to, or an older one that selects it too while it belongs to
	// none. Such a node is never moved and counts as unavailable, as that
	// rollout may take it out at any moment.
	elsewhere string
	// taken: elsewhere owns the node (rather than going first on it).
	taken bool
	// joined: this pass labels the node (join): its one write of the pass.
	joined bool
	// nics: the node runs the rollout's OFED driver (spec.ofed, its node
	// selectors); false without spec.ofed.
	nics bool
	// moved: this pass moved the node (move); its phase is the new one,
	// its observations (Since among them) still the old phase's.
	moved bool
	// plugin is the DRA plugin label a move of this pass left ("-":
	// removed); empty while none changed it (pluginLabel).
	plugin string
}

// unavailable: out of service for any reason. maxUnavailable bounds these.
func (w *work) unavailable() bool {
	return w.unschedulable || !w.n.Ready || w.outOfService || w.elsewhere != "" ||
		w.phase.InFlight() || w.phase == v1alpha1.NodeQuarantined
}

// planner holds one pass's state.
type planner struct {
	ro    *v1alpha1.DriverRollout
	spec  *v1alpha1.DriverRolloutSpec
	now   time.Time
	set   Settings
	cal   Calendar
	nodes []work // selected nodes in name order
	// total counts the selected nodes.
	total    int
	out      []Transition
	next     time.Time
	problems []string // a spec the planner cannot act on (bad selector)
	blocked  string   // why pending nodes wait although the gate is open
	// costOrdered: this pass starts nodes cheapest first (startOrder), and
	// says so in each start's reason.
	costOrdered bool
	// ofed is the OFED driver's step of each node's maintenance.
	ofed ofedStep
	// domains are the maintenance domains by label value (domains.go);
	// nil when the rollout names no domain label.
	domains map[string]*domain
}

// Plan decides the next transitions for snap's rollout at now.
func Plan(snap Snapshot, now time.Time) Result {
	p := newPlanner(snap, now)
	switch {
	case len(p.problems) > 0:
	case p.operator():
		p.planOperator()
	default:
		p.ofed.hold()
		p.scanDomains()
		p.settle()
		p.join()
		p.progress()
		p.start()
	}
	return Result{Transitions: p.out, Status: p.status(), NextCheck: p.next}
}

func newPlanner(snap Snapshot, now time.Time) *planner {
	p := &planner{ro: snap.Rollout, spec: &snap.Rollout.Spec, now: now}
	p.ofed = newOFEDStep(p, snap.OFEDPolicy)
	p.cal = NewCalendar(p.spec)
	sel, err := metav1.LabelSelectorAsSelector(&p.spec.NodeSelector)
	if err != nil {
		p.problems = append(p.problems, fmt.Sprintf("invalid node selector: %v", err))
		sel = labels.Nothing()
	}
	oos := p.selectors(p.spec.OutOfService, "outOfService selector")
	for _, msg := range []string{operatorTaintProblem(p.spec), domainProblem(p.spec)} {
		if msg != "" {
			p.problems = append(p.problems, msg)
		}
	}
	nics := p.ofed.selects()
	first := p.firstPeers(snap.Others)
	works := make([]work, 0, len(snap.Nodes))
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		set := labels.Set(n.Labels)
		if !sel.Matches(set) {
			continue
		}
		w := work{n: n, phase: n.Phase.OrPending(), failed: n.Failed, unschedulable: n.Unschedulable, adminCordoned: n.AdminCordoned, nics: nics(set)}
		switch {
		case n.Owner != "" && n.Owner != p.ro.Name:
			w.elsewhere, w.taken = n.Owner, true
		case n.Owner == "" && w.phase == v1alpha1.NodePending:
			for _, f := range first {
				if f.sel.Matches(set) {
					w.elsewhere = f.name
					break
				}
			}
		}
		if w.elsewhere != "" {
			// Its progress, if any, is the other rollout's.
			w.phase, w.failed = v1alpha1.NodePending, false
		}
		w.outOfService = matchesAny(oos, set)
		works = append(works, w)
	}
	// Name order makes every decision deterministic; the controller and the
	// simulator usually hand the nodes over sorted already.
	byName := func(a, b work) int { return strings.Compare(a.n.Name, b.n.Name) }
	if !slices.IsSortedFunc(works, byName) {
		slices.SortFunc(works, byName)
	}
	p.nodes = works
	p.total = len(p.nodes)
	p.set = SettingsFor(p.spec, p.total)
	p.indexDomains()
	p.markCanary()
	return p
}

// selectors parses a spec's list of label selectors, recording one that
// does not parse as a problem (what names the field).
func (p *planner) selectors(list []metav1.LabelSelector, what string) []labels.Selector {
	out := make([]labels.Selector, 0, len(list))
	for i := range list {
		s, err := metav1.LabelSelectorAsSelector(&list[i])
		if err != nil {
			p.problems = append(p.problems, fmt.Sprintf("invalid %s: %v", what, err))
			continue
		}
		out = append(out, s)
	}
	return out
}

// matchesAny reports whether any of sels matches set.
func matchesAny(sels []labels.Selector, set labels.Set) bool {
	for _, s := range sels {
		if s.Matches(set) {
			return true
		}
	}
	return false
}

// peerSelector is another rollout that goes before this one on the free
// nodes both select.
type peerSelector struct {
	name    string
	created time.Time
	sel     labels.Selector
}

// firstPeers returns the other rollouts that go before this one, oldest
// first: not being deleted, created earlier (or together and first by
// name). A peer whose selector does not parse selects nothing.
func (p *planner) firstPeers(peers []Peer) []peerSelector {
	var out []peerSelector
	for i := range peers {
		o := &peers[i]
		if o.Deleting || o.Name == p.ro.Name || !precedes(o.Name, o.Created, p.ro.Name, p.ro.CreationTimestamp.Time) {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(&o.NodeSelector)
		if err != nil {
			continue
		}
		out = append(out, peerSelector{name: o.Name, created: o.Created, sel: sel})
	}
	// Oldest first, so a node several older rollouts select is reported as
	// left to the one that will take it.
	slices.SortFunc(out, func(a, b peerSelector) int {
		switch {
		case precedes(a.name, a.created, b.name, b.created):
			return -1
		case precedes(b.name, b.created, a.name, a.created):
			return 1
		}
		return 0
	})
	return out
}

// markCanary picks the canary nodes. Once the status records them they stay
// chosen, so adding a node or renaming one never moves the canary mid-rollout.
//
// Note: a canary node can leave the cluster (a scale-down, a repair that
// deletes it), and the spec may name one that is not there. A rollout that
// then counted only the canary nodes it finds would find none, take that
// for "no canary" and start every node without one, and without approval.
// So the rollout keeps as many canary nodes as it had (or as the spec
// names): one that left before the canary was through is replaced by
// another node that still needs the driver, which must prove it again;
// and a canary that has passed or failed stays so (canaryState), whoever
// of its nodes is still there.
func (p *planner) markCanary() {
	names := p.ro.Status.Canary.Nodes
	if len(names) == 0 && !p.canaryDecided() {
		// Once decided, the canary is what the status recorded, even
		// none: the spec's names are not taken up again.
		names = p.spec.Canary.Nodes
	}
	want := len(names)
	if want == 0 && p.spec.Canary.Count != nil {
		want = int(*p.spec.Canary.Count)
	}
	present := 0
	if len(names) > 0 {
		for i := range p.nodes {
			w := &p.nodes[i]
			w.canary = slices.Contains(names, w.n.Name)
			if w.canary {
				present++
			}
		}
	}
	switch {
	case p.canaryDecided():
		// A named node that is pending now is not the one that passed
		// or failed (it left and came back as a new node): an ordinary
		// node of the rollout from here on.
		for i := range p.nodes {
			if w := &p.nodes[i]; w.canary && w.phase == v1alpha1.NodePending {
				w.canary = false
			}
		}
	case len(names) == 0:
		p.pickCanary(want, false)
		p.expandCanary()
	default:
		p.pickCanary(want-present, true)
		p.expandCanary()
	}
}

// canaryDecided reports whether the status recorded the canary as passed
// or failed: a result that stands (short of an abort, which rolls the
// canary back) whatever happens to its nodes after.
func (p *planner) canaryDecided() bool {
	r := p.ro.Status.Canary.Result
	return !p.spec.Abort && (r == v1alpha1.CanaryPassed || r == v1alpha1.CanaryFailed)
}

// pickCanary makes count more nodes canary nodes, in the order the
// pending nodes start (startOrder): the cheapest first where some hold GPU
// pods, else name order. The canary is the rollout's first maintenance,
// and the first to go back when it fails: an idle node proves the driver
// as well as a busy one, without evicting a job that would start again on
// a node the rollout has not reached yet (and be evicted twice). The
// canary must prove the new driver: it picks nodes that still need it, and
// that this rollout may move; a replacement for a canary node that left
// (replace) must be pending, as a node already through proves nothing now.
func (p *planner) pickCanary(count int, replace bool) {
	order := p.startOrder()
	for k := 0; k < len(p.nodes) && count > 0; k++ {
		i := k
		if order != nil {
			i = order[k]
		}
		if w := &p.nodes[i]; !w.canary && w.elsewhere == "" && (!replace || w.phase == v1alpha1.NodePending) && !p.onTarget(w) {
			w.canary = true
			count--
		}
	}
}

// onTarget reports whether a pending node already runs the target driver
// and its driver label selects it (or is not set yet): there is nothing to
// install on it.
func (p *planner) onTarget(w *work) bool {
	if p.operator() {
		// No driver label selects a version on this path.
		return w.phase == v1alpha1.NodePending && DriverMatches(w.n.DriverVersion, p.spec.TargetVersion)
	}
	if w.phase != v1alpha1.NodePending || !DriverMatches(w.n.DriverVersion, p.spec.TargetVersion) {
		return false // most nodes of a pass: no need to look up the label
	}
	if p.ofed.pending(w) {
		return false // its OFED step takes a maintenance too
	}
	label, ok := w.n.Labels[v1alpha1.LabelDriver]
	return !ok || label == p.spec.TargetVersion
}

// settle marks the pending nodes that already run the target driver Done
// without touching them. A rollout whose target is what the nodes run (as
// render writes for clusters no rollout has reached) then completes at once
// instead of draining a canary node for nothing.
func (p *planner) settle() {
	if p.spec.Abort {
		return
	}
	pools := p.poolSelectors()
	for i := range p.nodes {
		w := &p.nodes[i]
		if w.canary || w.elsewhere != "" || !p.onTarget(w) || p.rolledBackDomain(w) {
			continue
		}
		reason := p.ofed.settled(w, p.spec.TargetVersion)
		if w.unschedulable {
			// Note: move records this cordon as someone else's in the
			// same write. Without the record, deleting this rollout, or
			// another rollout taking the node, would lift it.
			reason += "; left cordoned as someone else had cordoned it"
		}
		p.move(w, v1alpha1.NodeDone, reason, func(t *Transition) {
			t.Driver = p.spec.TargetVersion
			t.Pool = pools.missing(w.n)
		})
	}
}

// wake records a time at which the plan may change by itself.
func (p *planner) wake(t time.Time) {
	if t.After(p.now) && (p.next.IsZero() || t.Before(p.next)) {
		p.next = t
	}
}

// move records a transition and updates the running view. Every move is
// made here, so the admin-cordon rule holds on every path: a node that is
// cordoned while the rollout holds no cordon of its own on it (it is
// Pending, Done or rolled back here) is cordoned by someone else, and the
// move records that, in the same write, before anything could lift it.
func (p *planner) move(w *work, to v1alpha1.NodePhase, reason string, edit func(*Transition)) {
	t := Transition{Node: w.n.Name, From: w.phase, To: to, Reason: reason}
	if w.unschedulable && !w.adminCordoned && !w.phase.HoldsCordon() {
		t.RecordAdminCordon = true
	}
	t.Plugin = w.pluginMove(to)
	if edit != nil {
		edit(&t)
	}
	w.applyPlugin(t.Plugin)
	w.phase, w.moved = to, true
	// The node's next deadline (timeout or soak end) runs from now: ask to
	// be woken for it, as nothing else may happen before it.
	if d := p.deadline(to); d > 0 {
		p.wake(p.now.Add(d))
	}
	// The running view takes what the actuator will write (Next), so the
	// rest of this pass sees the node as the transition leaves it.
	s, unschedulable := t.Next(v1alpha1.NodeState{Rollout: p.ro.Name, Phase: w.phase, Failed: w.failed, AdminCordoned: w.adminCordoned}, w.unschedulable, p.ro.Name, p.now)
	w.failed, w.adminCordoned, w.unschedulable = s.Failed, s.AdminCordoned, unschedulable
	p.out = append(p.out, t)
}

func (p *planner) failures() int {
	n := 0
	for i := range p.nodes {
		w := &p.nodes[i]
		if w.failed {
			n++
		}
	}
	return n
}

// deadline is how long a node may stay in phase ph before the planner acts
// by itself; zero for phases that wait only for observations.
func (p *planner) deadline(ph v1alpha1.NodePhase) time.Duration {
	switch ph {
	case v1alpha1.NodeDraining:
		return p.set.JobWait + p.set.DrainTimeout
	case v1alpha1.NodeInstalling:
		return p.set.InstallTimeout
	case v1alpha1.NodeValidating:
		return p.set.ValidateTimeout
	case v1alpha1.NodeSoaking:
		return p.set.Soak
	case v1alpha1.NodeRollingBack:
		return p.rollbackTimeout()
	}
	return 0
}

// plural writes "1 node", "2 nodes".
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}
