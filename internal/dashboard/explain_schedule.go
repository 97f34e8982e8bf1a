package dashboard

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
)

// explainSchedule asks the Explainer why one cluster has not converged,
// and keeps its last answer for the views. It asks in the background and
// never more than one question at a time: again when the gate's checks of
// the cluster changed (at most every explainAfterChange), and at most
// every explainEvery when nothing did. An answer shows with the next
// rebuild, marked as older than the view while the checks changed since
// it was asked, and never on a view of another revision or fleet file.
//
// Its configuration is set by newClusterWatch and never changes. Its
// state (the question in flight, when it was asked, the last answer) is
// guarded by mu: the rebuild loop reads the answer and asks (explain), the
// question's own goroutine stores the answer (ask).
type explainSchedule struct {
	ex Explainer
	// query is what every question asks; explain sets Fleet and Revision.
	query   ExplainQuery
	timeout time.Duration
	now     func() time.Time
	// answered wakes the rebuild loop, to show the answer.
	answered func()

	mu      sync.Mutex
	asking  bool
	askedAt time.Time
	last    explainAnswer
}

// explainAnswer is the Explainer's last answer, and what it was about:
// the fleet file (its generation), the revision and the gate's checks.
type explainAnswer struct {
	rev         string
	gen         uint64
	key         string
	explanation *Explanation
	err         string
}

// explain puts on v, a view of a cluster judged against fleet file f
// (generation gen) at revision rev, the last answer about the same fleet
// file and revision, and asks again when it is time. It does nothing for
// a converged cluster or without an Explainer. The question ends with ctx.
func (s *explainSchedule) explain(ctx context.Context, f *fleet.Fleet, rev string, gen uint64, v *ClusterView) {
	if s.ex == nil || v.Converged() {
		return
	}
	key := checksKey(v.Checks)
	s.mu.Lock()
	defer s.mu.Unlock()
	// An answer about another revision (or fleet file) is not shown: it
	// would explain a state that is gone, e.g. Flux "not at" a commit that
	// was replaced since.
	a := s.last
	sameFleet := a.rev == rev && a.gen == gen
	if sameFleet && (a.explanation != nil || a.err != "") {
		v.ExplainErr = a.err
		if a.explanation != nil {
			e := *a.explanation
			e.Older = a.key != key
			v.Explanation = &e
		}
	}
	current := sameFleet && a.key == key
	since := time.Since(s.askedAt)
	if s.asking || (current && since < explainEvery) || (!current && since < explainAfterChange) {
		return
	}
	s.asking, s.askedAt = true, time.Now()
	go s.ask(ctx, f, rev, gen, key)
}

// ask asks the Explainer, stores its answer and wakes the rebuild loop.
func (s *explainSchedule) ask(ctx context.Context, f *fleet.Fleet, rev string, gen uint64, key string) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	q := s.query
	q.Fleet, q.Revision = f, rev
	ex, err := s.ex.Explain(ctx, q)
	a := explainAnswer{rev: rev, gen: gen, key: key, explanation: ex}
	if ex != nil {
		ex.Asked = s.now()
	}
	if err != nil {
		a.explanation, a.err = nil, err.Error()
	}
	s.mu.Lock()
	s.last, s.asking = a, false
	s.mu.Unlock()
	s.answered()
}

// checksKey sums up what the gate found, to tell when it changed.
func checksKey(cs []gate.Check) string {
	var b strings.Builder
	for _, c := range cs {
		b.WriteString(c.Name.String())
		b.WriteByte('=')
		b.WriteString(string(c.Status))
		b.WriteByte(':')
		b.WriteString(c.Observed)
		b.WriteByte('\n')
	}
	return b.String()
}
