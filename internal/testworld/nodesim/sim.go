package nodesim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// Options tune the simulator. Zero values take the defaults in brackets.
type Options struct {
	// Clock is read by every decision that depends on time [real clock].
	Clock clock.WithTicker
	// InstallTime is how long a driver install takes [3s].
	InstallTime time.Duration
	// Resync is how often Run looks at the cluster [200ms].
	Resync time.Duration
	// BadDrivers are driver versions whose install fails.
	BadDrivers []string
	// DriverNamespace holds the GPU Operator's driver DaemonSets and their
	// pods [gpu-operator].
	DriverNamespace string
	// OFEDInstallTime is how long an OFED driver install takes
	// [InstallTime].
	OFEDInstallTime time.Duration
	// BadOFED are OFED driver versions that never load.
	BadOFED []string
	// OFEDNamespace holds the Network Operator's OFED pods
	// [DefaultOFEDNamespace].
	OFEDNamespace string
	// Kube publishes the ResourceSlices of the simulated DRA kubelet
	// plugins (dra.go); a pool with DRA needs it.
	Kube kubernetes.Interface
	// Logf, when set, receives one line per action the simulator takes.
	Logf func(format string, args ...any)
}

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.InstallTime == 0 {
		o.InstallTime = 3 * time.Second
	}
	if o.Resync == 0 {
		o.Resync = 200 * time.Millisecond
	}
	if o.DriverNamespace == "" {
		o.DriverNamespace = "gpu-operator"
	}
	if o.OFEDInstallTime == 0 {
		o.OFEDInstallTime = o.InstallTime
	}
	if o.OFEDNamespace == "" {
		o.OFEDNamespace = DefaultOFEDNamespace
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return o
}

// Sim simulates the nodes of the pools added to it. Its methods are safe
// to call while Run is running.
type Sim struct {
	c    client.Client
	opts Options

	mu       sync.Mutex
	pools    map[string]Pool // by node name
	notReady map[string]bool // nodes told to go NotReady
	bad      map[string]bool // driver versions whose install fails
	badOFED  map[string]bool // OFED versions that never load
	// installs are when each install began, by driver pod UID, to the
	// clock's precision: the pod's status.startTime, which a restarted
	// simulator goes by, holds whole seconds only, and would end a
	// sub-second-late install up to a second early.
	installs map[types.UID]time.Time
	// publishers are the running DRA slice publishers, by node (dra.go).
	publishers map[string]*draPublisher
}

// New returns a simulator that acts through c.
func New(c client.Client, opts Options) *Sim {
	opts = opts.withDefaults()
	s := &Sim{c: c, opts: opts, pools: map[string]Pool{}, notReady: map[string]bool{}, bad: map[string]bool{},
		badOFED: map[string]bool{}, installs: map[types.UID]time.Time{}, publishers: map[string]*draPublisher{}}
	for _, v := range opts.BadDrivers {
		s.bad[v] = true
	}
	for _, v := range opts.BadOFED {
		s.badOFED[v] = true
	}
	return s
}

// AddPool validates p, registers its nodes for kwok (with p.Driver
// installed) and simulates them from now on. It returns the nodes' names.
// Nodes that exist already are adopted as they are.
func (s *Sim) AddPool(ctx context.Context, p Pool) ([]string, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	p = p.withDefaults()
	names := p.NodeNames()
	s.mu.Lock()
	for _, n := range names {
		if old, ok := s.pools[n]; ok && old.Name != p.Name {
			s.mu.Unlock()
			return nil, fmt.Errorf("node %s already belongs to pool %s", n, old.Name)
		}
		s.pools[n] = p
	}
	s.mu.Unlock()
	var errs []error
	for _, n := range names {
		errs = append(errs, s.ensureNode(ctx, p, n))
	}
	return names, errors.Join(errs...)
}

// Nodes returns the names of the simulated nodes, sorted.
func (s *Sim) Nodes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for n := range s.pools {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// MarkBadDriver makes installs of driver version v fail from now on.
func (s *Sim) MarkBadDriver(v string) { s.markBad(s.bad, v, true) }

// MarkGoodDriver undoes MarkBadDriver for installs that start later.
func (s *Sim) MarkGoodDriver(v string) { s.markBad(s.bad, v, false) }

func (s *Sim) isBad(v string) bool { return s.inSet(s.bad, v) }

// markBad adds v to, or takes it from, one of the simulator's sets of bad
// versions.
func (s *Sim) markBad(set map[string]bool, v string, bad bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if bad {
		set[v] = true
	} else {
		delete(set, v)
	}
}

// inSet reports whether v is in one of the simulator's sets of versions.
func (s *Sim) inSet(set map[string]bool, v string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return set[v]
}

func (s *Sim) isNotReady(node string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.notReady[node]
}

// Run simulates until ctx ends, one Sync every Resync, then stops the DRA
// plugins' publishers. Errors of a pass are logged and retried on the next
// pass: they are mostly conflicts with whoever else writes the same nodes
// and pods.
func (s *Sim) Run(ctx context.Context) error {
	tick := s.opts.Clock.NewTicker(s.opts.Resync)
	defer tick.Stop()
	defer s.stopPublishers()
	for {
		if err := s.Sync(ctx); err != nil && ctx.Err() == nil {
			s.opts.Logf("nodesim: %v (retrying)", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C():
		}
	}
}

// Sync does one pass over every simulated node: its kubelet running or
// stopped as told, the OFED install inside the Network Operator's OFED
// pods, and the driver install inside the driver pods the operator's
// DaemonSets put there. It reads the cluster with three list calls (nodes,
// driver pods, OFED pods) and writes only what must change, so a demo
// fleet stays within a client's rate limit. Tests with a fake clock call
// it directly instead of Run.
func (s *Sim) Sync(ctx context.Context) error {
	now := s.opts.Clock.Now()
	byName, podsOn, err := s.snapshot(ctx, client.InNamespace(s.opts.DriverNamespace),
		client.MatchingLabels{v1alpha1.LabelComponent: v1alpha1.ComponentNVIDIADriver})
	if err != nil {
		return err
	}
	ofedPods := &corev1.PodList{}
	if err := s.c.List(ctx, ofedPods, client.InNamespace(s.opts.OFEDNamespace), client.HasLabels{v1alpha1.LabelOFEDDriverPod}); err != nil {
		return fmt.Errorf("list OFED pods: %w", err)
	}
	var plugins, claimed map[string][]*corev1.Pod
	if s.anyDRA() {
		if plugins, claimed, err = s.draPods(ctx); err != nil {
			return err
		}
	}
	ofedPodsOn := map[string][]*corev1.Pod{}
	for i := range ofedPods.Items {
		p := &ofedPods.Items[i]
		ofedPodsOn[p.Spec.NodeName] = append(ofedPodsOn[p.Spec.NodeName], p)
	}
	var errs []error
	for _, name := range s.Nodes() {
		n := byName[name]
		if n == nil {
			// Deleted by someone: a real node would register again.
			errs = append(errs, s.ensureNode(ctx, s.poolOf(name), name))
			continue
		}
		errs = append(errs, s.kwokHeartbeat(ctx, n))
		if s.isNotReady(name) {
			// The node's kubelet is down: nothing on it changes.
			continue
		}
		for _, p := range ofedPodsOn[name] {
			errs = append(errs, s.syncOFEDInstall(ctx, n, p, now))
		}
		ofed := nodeOFED(ofedPodsOn[name])
		for _, p := range podsOn[name] {
			errs = append(errs, s.syncDriverInstall(ctx, n, p, ofed, now))
		}
		if s.poolOf(name).DRA {
			errs = append(errs, s.syncDRA(ctx, n, plugins[name], claimed[name]))
		}
	}
	return errors.Join(errs...)
}

// anyDRA reports whether a pool with DRA is simulated.
func (s *Sim) anyDRA() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.pools {
		if p.DRA {
			return true
		}
	}
	return false
}

// snapshot reads the cluster's nodes by name and the pods bound to each
// node (those matching podOpts), with one list call each.
func (s *Sim) snapshot(ctx context.Context, podOpts ...client.ListOption) (map[string]*corev1.Node, map[string][]*corev1.Pod, error) {
	nodes := &corev1.NodeList{}
	if err := s.c.List(ctx, nodes); err != nil {
		return nil, nil, fmt.Errorf("list nodes: %w", err)
	}
	pods := &corev1.PodList{}
	if err := s.c.List(ctx, pods, podOpts...); err != nil {
		return nil, nil, fmt.Errorf("list pods: %w", err)
	}
	byName := map[string]*corev1.Node{}
	for i := range nodes.Items {
		byName[nodes.Items[i].Name] = &nodes.Items[i]
	}
	podsOn := map[string][]*corev1.Pod{}
	for i := range pods.Items {
		p := &pods.Items[i]
		podsOn[p.Spec.NodeName] = append(podsOn[p.Spec.NodeName], p)
	}
	return byName, podsOn, nil
}
