package dashboard

import (
	"context"
	"time"

	"github.com/gpufleet/gpufleet/internal/fleet"
)

// Options configure a Dashboard.
type Options struct {
	// FleetFile is the fleet file; it is read again whenever it changes.
	FleetFile string
	// Kubeconfig is an explicit kubeconfig file; empty uses the standard
	// loading rules ($KUBECONFIG, ~/.kube/config). Each cluster is reached
	// through its fleet file context, never the current one.
	Kubeconfig string
	// TTL is the shortest time between two rebuilds of one cluster's view:
	// changes that arrive within it are read together. DefaultTTL when 0.
	TTL time.Duration
	// ProbeInterval is how often each cluster's API server is asked
	// whether it is ready, so that a cluster that went away is shown
	// unreachable even when no watch has noticed yet. DefaultProbeInterval
	// when 0.
	ProbeInterval time.Duration
	// Resync rebuilds every view this often even without a change (a view
	// is also rebuilt when its maintenance window opens or closes).
	// DefaultResync when 0.
	Resync time.Duration
	// ReadTimeout bounds one rebuild of a cluster's view (the first waits
	// for the informers to sync). DefaultReadTimeout when 0.
	ReadTimeout time.Duration
	// FleetPoll is how often the fleet file and the repository's HEAD are
	// looked at for changes. DefaultFleetPoll when 0.
	FleetPoll time.Duration
	// AllowedHosts are the names and addresses, beyond loopback, that the
	// page answers in a request's Host (a port in them is ignored): the
	// listen address's (ListenHosts) and a reverse proxy's. A request with
	// any other Host gets 421, so that a page of another origin cannot
	// read the dashboard through DNS rebinding.
	AllowedHosts []string
	// Explain, when set, is asked why a cluster that is not converged is
	// not; its answer is shown under the cluster. Nil shows nothing.
	Explain Explainer
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Logf, when set, is told of what goes wrong in the background.
	Logf func(format string, args ...any)
}

// Defaults of Options.
const (
	DefaultTTL           = 250 * time.Millisecond
	DefaultProbeInterval = 5 * time.Second
	DefaultResync        = time.Minute
	DefaultReadTimeout   = 20 * time.Second
	DefaultFleetPoll     = 2 * time.Second
	// explainEvery is the shortest time between two explanations of one
	// cluster: an explanation may read the cluster itself, and a page must
	// not multiply its reads.
	explainEvery = 30 * time.Second
	// explainAfterChange is the shortest time between two explanations
	// of a cluster whose checks keep changing (a rollout under way).
	explainAfterChange = 10 * time.Second
	// staleAfterWatchError is how long after a watch error a cluster's
	// view says it may be stale.
	staleAfterWatchError = 30 * time.Second
)

// Explainer says why a cluster has not converged: the seam for the
// explain library (the CLI passes an adapter of it), kept an interface so
// that this package does not depend on how explain reads a cluster.
type Explainer interface {
	Explain(ctx context.Context, q ExplainQuery) (*Explanation, error)
}

// ExplainQuery is what an Explainer is asked about.
type ExplainQuery struct {
	Fleet      *fleet.Fleet
	Cluster    string
	Revision   string
	Kubeconfig string
}

// Explanation is an Explainer's answer as the page shows it.
type Explanation struct {
	// Verdict and Summary sum the answer up, e.g. "broken" and what broke.
	Verdict string `json:"verdict"`
	Summary string `json:"summary"`
	// At is the link that decides the verdict (the first broken one, or
	// the first still under way), in a line; Next what to run or do.
	At   string `json:"at,omitempty"`
	Next string `json:"next,omitempty"`
	// Answer is the whole answer, shown as JSON under the summary.
	Answer any `json:"answer,omitempty"`
	// Asked is when the answer was asked for (the dashboard sets it);
	// Older says the gate's checks changed since.
	Asked time.Time `json:"asked,omitzero"`
	Older bool      `json:"older,omitempty"`
}

func (o *Options) setDefaults() {
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.ProbeInterval <= 0 {
		o.ProbeInterval = DefaultProbeInterval
	}
	if o.Resync <= 0 {
		o.Resync = DefaultResync
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.FleetPoll <= 0 {
		o.FleetPoll = DefaultFleetPoll
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
}
