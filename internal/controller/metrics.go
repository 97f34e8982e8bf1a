package controller

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// Metrics are the controller's Prometheus metrics. Every method is safe on
// a nil *Metrics, so tests may leave them out.
type Metrics struct {
	nodes        *prometheus.GaugeVec
	phase        *prometheus.GaugeVec
	budgetLeft   *prometheus.GaugeVec
	failures     *prometheus.CounterVec
	transitions  *prometheus.CounterVec
	evictions    *prometheus.CounterVec
	healthErrors *prometheus.CounterVec
	joins        *prometheus.CounterVec
	passes       *prometheus.CounterVec
}

var nodePhases = []v1alpha1.NodePhase{
	v1alpha1.NodePending, v1alpha1.NodeDraining, v1alpha1.NodeInstalling, v1alpha1.NodeValidating,
	v1alpha1.NodeSoaking, v1alpha1.NodeDone, v1alpha1.NodeRollingBack, v1alpha1.NodeRolledBack,
	v1alpha1.NodeQuarantined,
}

var rolloutPhases = []v1alpha1.RolloutPhase{
	v1alpha1.PhaseProgressing, v1alpha1.PhaseWaitingForApproval, v1alpha1.PhaseOutsideWindow,
	v1alpha1.PhasePaused, v1alpha1.PhaseStalled, v1alpha1.PhaseAborting, v1alpha1.PhaseAborted,
	v1alpha1.PhaseCompleted, v1alpha1.PhaseCompletedWithFailures,
}

// NewMetrics creates the metrics and registers them with reg (the
// controller-runtime metrics.Registry in the binary). Registering twice in
// one process (two managers in a test) reuses the first collectors.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		nodes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpufleet_rollout_nodes",
			Help: "Nodes selected by a DriverRollout, per node phase.",
		}, []string{"rollout", "phase"}),
		phase: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpufleet_rollout_phase",
			Help: "1 for the phase a DriverRollout is in, 0 for the others.",
		}, []string{"rollout", "phase"}),
		budgetLeft: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpufleet_rollout_failure_budget_remaining",
			Help: "Node failures a DriverRollout may still absorb; negative once exhausted.",
		}, []string{"rollout"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpufleet_rollout_node_failures_total",
			Help: "Nodes that failed in a DriverRollout (drain, install, validation or soak).",
		}, []string{"rollout"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpufleet_rollout_transitions_total",
			Help: "Node phase transitions performed, per target phase.",
		}, []string{"rollout", "to"}),
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpufleet_rollout_evictions_total",
			Help: "Eviction requests, by result: evicted, blocked (a PodDisruptionBudget said not now), error.",
		}, []string{"result"}),
		healthErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpufleet_rollout_health_query_errors_total",
			Help: "Prometheus health queries that failed.",
		}, []string{"rollout"}),
		joins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpufleet_rollout_nodes_joined_total",
			Help: "Nodes found without a driver label and labelled at once, by the driver they got: the one they run, the rollout's target or its previous version.",
		}, []string{"rollout", "driver"}),
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpufleet_rollout_passes_total",
			Help: "Passes completed for a DriverRollout: observed, planned, acted on and its status written. A rollout whose count stands still is not being reconciled.",
		}, []string{"rollout"}),
	}
	var errs []error
	m.nodes = register(reg, m.nodes, &errs)
	m.phase = register(reg, m.phase, &errs)
	m.budgetLeft = register(reg, m.budgetLeft, &errs)
	m.failures = register(reg, m.failures, &errs)
	m.transitions = register(reg, m.transitions, &errs)
	m.evictions = register(reg, m.evictions, &errs)
	m.healthErrors = register(reg, m.healthErrors, &errs)
	m.joins = register(reg, m.joins, &errs)
	m.passes = register(reg, m.passes, &errs)
	return m, errors.Join(errs...)
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C, errs *[]error) C {
	if err := reg.Register(c); err != nil {
		if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		*errs = append(*errs, err)
	}
	return c
}

// observeStatus sets the gauges from a rollout's status.
func (m *Metrics) observeStatus(ro *v1alpha1.DriverRollout, st *v1alpha1.DriverRolloutStatus, budget int) {
	if m == nil {
		return
	}
	counts := map[v1alpha1.NodePhase]int32{
		v1alpha1.NodePending: st.Nodes.Pending, v1alpha1.NodeDraining: st.Nodes.Draining,
		v1alpha1.NodeInstalling: st.Nodes.Installing, v1alpha1.NodeValidating: st.Nodes.Validating,
		v1alpha1.NodeSoaking: st.Nodes.Soaking, v1alpha1.NodeDone: st.Nodes.Done,
		v1alpha1.NodeRollingBack: st.Nodes.RollingBack, v1alpha1.NodeRolledBack: st.Nodes.RolledBack,
		v1alpha1.NodeQuarantined: st.Nodes.Quarantined,
	}
	for _, p := range nodePhases {
		m.nodes.WithLabelValues(ro.Name, string(p)).Set(float64(counts[p]))
	}
	for _, p := range rolloutPhases {
		v := 0.0
		if st.Phase == p {
			v = 1
		}
		m.phase.WithLabelValues(ro.Name, string(p)).Set(v)
	}
	m.budgetLeft.WithLabelValues(ro.Name).Set(float64(budget - int(st.BudgetUsed)))
}

// transition counts one performed transition.
func (m *Metrics) transition(rollout string, t planner.Transition) {
	if m == nil {
		return
	}
	if t.Join {
		m.joins.WithLabelValues(rollout, t.Driver).Inc()
		return
	}
	m.transitions.WithLabelValues(rollout, string(t.To)).Inc()
	if t.Failure {
		m.failures.WithLabelValues(rollout).Inc()
	}
}

// passDone counts a completed pass (see Reconcile).
func (m *Metrics) passDone(rollout string) {
	if m != nil {
		m.passes.WithLabelValues(rollout).Inc()
	}
}

func (m *Metrics) eviction(result string) {
	if m != nil {
		m.evictions.WithLabelValues(result).Inc()
	}
}

func (m *Metrics) healthQueryFailed(rollout string) {
	if m != nil {
		m.healthErrors.WithLabelValues(rollout).Inc()
	}
}

// forget drops a deleted rollout's series.
func (m *Metrics) forget(rollout string) {
	if m == nil {
		return
	}
	for _, v := range []*prometheus.GaugeVec{m.nodes, m.phase, m.budgetLeft} {
		v.DeletePartialMatch(prometheus.Labels{"rollout": rollout})
	}
	for _, v := range []*prometheus.CounterVec{m.failures, m.transitions, m.healthErrors, m.joins, m.passes} {
		v.DeletePartialMatch(prometheus.Labels{"rollout": rollout})
	}
}
