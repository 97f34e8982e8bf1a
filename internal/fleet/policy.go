package fleet

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // windows name IANA time zones; a minimal host may lack the database

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// rawPolicy is [policy]: fleet-wide settings, then overrides per
// environment and per cluster, applied in that order.
type rawPolicy struct {
	rawPolicySettings
	Environments map[string]rawPolicySettings `toml:"environments"`
	Clusters     map[string]rawPolicySettings `toml:"clusters"`
}

// rawPolicySettings are optional so that an override sets only what it
// changes. A list (windows, freezes) in an override replaces the inherited one.
type rawPolicySettings struct {
	CanaryNodes       *int        `toml:"canary-nodes"`
	AutoApproveCanary *bool       `toml:"auto-approve-canary"`
	ParallelNodes     *int        `toml:"parallel-nodes"`
	MaxUnavailable    any         `toml:"max-unavailable"`
	Soak              *string     `toml:"soak"`
	FailureBudget     *int        `toml:"failure-budget"`
	DrainTimeout      *string     `toml:"drain-timeout"`
	InstallTimeout    *string     `toml:"install-timeout"`
	ValidateTimeout   *string     `toml:"validate-timeout"`
	Windows           []rawWindow `toml:"windows"`
	Freezes           []rawFreeze `toml:"freezes"`
	Health            *rawHealth  `toml:"health"`
	Actuator          *string     `toml:"actuator"`
	Evict             *string     `toml:"evict"`
	GPUPodSelector    *string     `toml:"gpu-pod-selector"`
	WaitForPods       *string     `toml:"wait-for-pods"`
	WaitTimeout       *string     `toml:"wait-timeout"`
	MaintenanceDomain *string     `toml:"maintenance-domain"`
	DomainSize        *int        `toml:"domain-size"`
	DRADrivers        []string    `toml:"dra-drivers"`
	DRAPluginSelector *string     `toml:"dra-plugin-selector"`
}

type rawWindow struct {
	Days     []string `toml:"days"`
	Start    string   `toml:"start"`
	End      string   `toml:"end"`
	TimeZone string   `toml:"time-zone"`
}

// rawFreeze keeps start and end as the decoder found them (an offset
// date-time, a local one, a date...) because the decoder would read a local
// date-time in the machine's own time zone: see freezeInstant.
type rawFreeze struct {
	Start    any    `toml:"start"`
	End      any    `toml:"end"`
	TimeZone string `toml:"time-zone"`
	Reason   string `toml:"reason"`
}

type rawHealth struct {
	NodeConditions  []string `toml:"node-conditions"`
	EventReasons    []string `toml:"event-reasons"`
	PrometheusURL   string   `toml:"prometheus-url"`
	PrometheusQuery string   `toml:"prometheus-query"`
}

// DefaultPolicy is the policy of a fleet file whose [policy] says nothing:
// the DriverRollout API's defaults (v1alpha1.DefaultSoak and its
// neighbours), plus what only the fleet file decides: one canary node, and
// health judged by the conditions and events a GPU node problem detector
// reports. (The API has no default canary: a schema default for the count
// would clash with a canary named node by node.)
func DefaultPolicy() Policy {
	return Policy{
		CanaryNodes:     1,
		ParallelNodes:   v1alpha1.DefaultParallelNodes,
		MaxUnavailable:  Amount{Value: v1alpha1.DefaultMaxUnavailable},
		Soak:            v1alpha1.DefaultSoak,
		FailureBudget:   v1alpha1.DefaultFailureBudget,
		DrainTimeout:    v1alpha1.DefaultDrainTimeout,
		InstallTimeout:  v1alpha1.DefaultInstallTimeout,
		ValidateTimeout: v1alpha1.DefaultValidateTimeout,
		Actuator:        v1alpha1.DefaultActuator,
		Evict:           v1alpha1.DefaultEvictMode,
		Health: Health{
			NodeConditions: []string{"GpuXidError", "GpuEccError"},
			EventReasons:   []string{"XidError", "EccError"},
		},
	}
}

// PolicyFor returns the policy in force for cluster: [policy], then the
// cluster's environment's overrides, then the cluster's own. Parse resolved
// it once (see resolvePolicies); the result is the caller's to change. A
// cluster the fleet does not name gets [policy] alone.
func (f *Fleet) PolicyFor(cluster string) Policy {
	if p, ok := f.policies[cluster]; ok {
		return p.clone()
	}
	if f.fleetPolicy != nil {
		return f.fleetPolicy.clone()
	}
	return DefaultPolicy()
}

// resolvePolicies resolves every cluster's policy once, after validation
// has reported every problem (so errors are ignored here).
func (f *Fleet) resolvePolicies() {
	base := DefaultPolicy()
	applySettings(&base, f.policy.rawPolicySettings, nil, "")
	f.fleetPolicy = &base
	f.policies = make(map[string]Policy, len(f.Clusters))
	// Each environment's overrides are applied once, not once per cluster:
	// applying windows parses their time zones, which at fleet scale was a
	// tenth of loading the file.
	byEnv := map[string]Policy{}
	for name, c := range f.Clusters {
		envPolicy, ok := byEnv[c.Environment]
		if !ok {
			envPolicy = base.clone()
			if env, ok := f.policy.Environments[c.Environment]; ok {
				applySettings(&envPolicy, env, nil, "")
			}
			byEnv[c.Environment] = envPolicy
		}
		p := envPolicy.clone()
		if own, ok := f.policy.Clusters[name]; ok {
			applySettings(&p, own, nil, "")
		}
		f.policies[name] = p
	}
}

// clone copies p deeply enough that changing the copy's lists leaves p alone.
func (p Policy) clone() Policy {
	p.Windows = slices.Clone(p.Windows)
	for i := range p.Windows {
		p.Windows[i].Days = slices.Clone(p.Windows[i].Days)
	}
	p.Freezes = slices.Clone(p.Freezes)
	p.Health.NodeConditions = slices.Clone(p.Health.NodeConditions)
	p.Health.EventReasons = slices.Clone(p.Health.EventReasons)
	p.GPUPodSelector = p.GPUPodSelector.DeepCopy()
	p.WaitForPods = p.WaitForPods.DeepCopy()
	p.DRADrivers = slices.Clone(p.DRADrivers)
	p.DRAPluginSelector = p.DRAPluginSelector.DeepCopy()
	return p
}

func (f *Fleet) validatePolicy(probs *problemList) {
	f.resolvePolicies()
	var p Policy
	applySettings(&p, f.policy.rawPolicySettings, probs, "policy")
	envs := map[string]bool{}
	for _, c := range f.Clusters {
		envs[c.Environment] = true
	}
	for _, env := range slices.Sorted(maps.Keys(f.policy.Environments)) {
		key := joinKey("policy.environments", env)
		if !envs[env] {
			probs.add(key, "no cluster has environment %q%s", env, suggest(env, slices.Sorted(maps.Keys(envs))))
		}
		applySettings(&p, f.policy.Environments[env], probs, key)
	}
	for _, c := range slices.Sorted(maps.Keys(f.policy.Clusters)) {
		key := joinKey("policy.clusters", c)
		if _, ok := f.Clusters[c]; !ok {
			probs.add(key, "unknown cluster %q%s", c, suggest(c, f.ClusterNames()))
		}
		applySettings(&p, f.policy.Clusters[c], probs, key)
	}
	// Per cluster: a canary as large as the cluster would leave nothing to
	// approve; report it at the key that set it.
	for _, name := range f.ClusterNames() {
		c := f.Clusters[name]
		total := 0
		for _, pool := range c.Pools {
			total += pool.Nodes
		}
		if pol := f.policies[name]; total > 0 && pol.CanaryNodes >= total && total > 1 {
			probs.add(f.policyKeyFor(name, "canary-nodes"), "canary-nodes (%d) must be fewer than the %d nodes of cluster %q", pol.CanaryNodes, total, name)
		}
		f.validateDomain(name, total, probs)
	}
}

// maxDomainSize is the schema's bound on maintenanceDomain.maxNodes.
const maxDomainSize = 1000

// validateDomain refuses, for one cluster, a maintenance domain that could
// never start: a domain is taken out as one unit, so it must fit in
// parallel-nodes and max-unavailable (a percentage resolved over the
// cluster's nodes, where the fleet file counts them), and only gpufleet's
// own actuator moves nodes as a unit. The DriverRollout's schema refuses the
// same where it can (not a percentage: it does not know the pool).
func (f *Fleet) validateDomain(name string, total int, probs *problemList) {
	pol := f.policies[name]
	if pol.MaintenanceDomain == "" || pol.DomainSize == 0 {
		return
	}
	if pol.Actuator == v1alpha1.ActuatorGPUOperator {
		probs.add(f.policyKeyFor(name, "maintenance-domain", "actuator"), "maintenance-domain needs actuator %q: on %q the operator's upgrade controller returns each node to service by itself, so a domain of cluster %q could not return as one unit",
			v1alpha1.ActuatorGPUFleet, v1alpha1.ActuatorGPUOperator, name)
		return
	}
	parallel := max(pol.ParallelNodes, v1alpha1.DefaultParallelNodes)
	if pol.DomainSize > parallel {
		probs.add(f.policyKeyFor(name, "domain-size", "parallel-nodes"), "domain-size (%d) exceeds parallel-nodes (%d) of cluster %q: a maintenance domain starts as one unit, every node of it in flight at once",
			pol.DomainSize, parallel, name)
	}
	if pol.MaxUnavailable.Percent && total == 0 {
		return // resolved over the pool in the cluster; the planner says so there
	}
	if allowed := v1alpha1.MaxUnavailableOf(pol.MaxUnavailable.IntOrString(), total); pol.DomainSize > allowed {
		what := pol.MaxUnavailable.String()
		if pol.MaxUnavailable.Percent {
			what = fmt.Sprintf("%s of %d nodes: %d", what, total, allowed)
		} else if pol.MaxUnavailable.Value == 0 {
			what = fmt.Sprintf("%d, the default", allowed)
		}
		probs.add(f.policyKeyFor(name, "domain-size", "max-unavailable"), "domain-size (%d) exceeds max-unavailable (%s) of cluster %q: a maintenance domain is taken out of service as one unit",
			pol.DomainSize, what, name)
	}
}

// policyKeyFor returns the most specific key that sets one of fields for
// cluster (at one level, the first of fields that is set there).
func (f *Fleet) policyKeyFor(cluster string, fields ...string) string {
	for _, key := range []string{joinKey("policy.clusters", cluster), joinKey("policy.environments", f.Clusters[cluster].Environment), "policy"} {
		for _, field := range fields {
			if _, ok := f.positions.at[key+"."+field]; ok {
				return key + "." + field
			}
		}
	}
	return joinKey("clusters", cluster)
}

// applySettings overlays s onto p. With probs set it also reports every
// invalid setting under the key prefix.
func applySettings(p *Policy, s rawPolicySettings, probs *problemList, prefix string) {
	bad := func(field, format string, args ...any) {
		if probs != nil {
			probs.add(prefix+"."+field, format, args...)
		}
	}
	setInt := func(dst *int, v *int, field string, lowest int) {
		if v == nil {
			return
		}
		if *v < lowest {
			bad(field, "%s must be at least %d, got %d", field, lowest, *v)
			return
		}
		*dst = *v
	}
	setDuration := func(dst *time.Duration, v *string, field string) {
		if v == nil {
			return
		}
		d, err := time.ParseDuration(*v)
		if err != nil || d <= 0 {
			bad(field, "%q is not a duration: use e.g. 30m, 2h or 1h30m", *v)
			return
		}
		if d > v1alpha1.MaxStepDuration {
			// The DriverRollout's schema would refuse it in the cluster.
			bad(field, "%s must be at most %s, got %s", field, strings.TrimSuffix(v1alpha1.MaxStepDuration.String(), "0m0s"), *v)
			return
		}
		*dst = d
	}
	setInt(&p.CanaryNodes, s.CanaryNodes, "canary-nodes", 0)
	setInt(&p.ParallelNodes, s.ParallelNodes, "parallel-nodes", 1)
	setInt(&p.FailureBudget, s.FailureBudget, "failure-budget", 0)
	if s.AutoApproveCanary != nil {
		p.AutoApproveCanary = *s.AutoApproveCanary
	}
	if s.MaxUnavailable != nil {
		if a, err := parseAmount(s.MaxUnavailable); err != nil {
			bad("max-unavailable", "%v", err)
		} else {
			p.MaxUnavailable = a
		}
	}
	if s.Actuator != nil {
		switch a := v1alpha1.Actuator(*s.Actuator); a {
		case v1alpha1.ActuatorGPUFleet, v1alpha1.ActuatorGPUOperator:
			p.Actuator = a
		default:
			bad("actuator", "%q is not an actuator: use %q (gpufleet cordons, drains and rolls back each node) or %q (the GPU Operator's upgrade controller, gated node by node)", *s.Actuator, v1alpha1.ActuatorGPUFleet, v1alpha1.ActuatorGPUOperator)
		}
	}
	if s.Evict != nil {
		if m, ok := evictModes[*s.Evict]; ok {
			p.Evict = m
		} else {
			bad("evict", "%q is not what a drain evicts: use %q (the pods that hold a GPU, the default: the driver swap needs only those gone) or %q (every pod but DaemonSet and mirror pods, as kubectl drain)", *s.Evict, EvictGPUPods, EvictAll)
		}
	}
	selector := func(dst **metav1.LabelSelector, v *string, field string) {
		if v == nil {
			return
		}
		if sel, err := metav1.ParseToLabelSelector(*v); err != nil || strings.TrimSpace(*v) == "" {
			bad(field, "%q is not a label selector such as \"app=trainer\" or \"team in (ml, research)\"", *v)
		} else {
			*dst = sel
		}
	}
	selector(&p.GPUPodSelector, s.GPUPodSelector, "gpu-pod-selector")
	selector(&p.WaitForPods, s.WaitForPods, "wait-for-pods")
	setDuration(&p.WaitTimeout, s.WaitTimeout, "wait-timeout")
	// Set where either is set, both must hold once the level is applied:
	// a wait needs its pods and its bound.
	parsed := (s.WaitForPods == nil || p.WaitForPods != nil) && (s.WaitTimeout == nil || p.WaitTimeout > 0)
	if parsed && (s.WaitForPods != nil || s.WaitTimeout != nil) && (p.WaitForPods == nil) != (p.WaitTimeout == 0) {
		key := "wait-for-pods"
		if s.WaitForPods == nil {
			key = "wait-timeout"
		}
		bad(key, "wait-for-pods and wait-timeout go together: the pods a drain leaves to finish, and for how long (e.g. wait-for-pods = \"app=trainer\", wait-timeout = \"4h\")")
	}
	selector(&p.DRAPluginSelector, s.DRAPluginSelector, "dra-plugin-selector")
	if s.DRADrivers != nil {
		p.DRADrivers = nil
		for i, d := range s.DRADrivers {
			if errs := validation.IsDNS1123Subdomain(d); len(errs) > 0 || len(d) > 63 {
				bad(fmt.Sprintf("dra-drivers[%d]", i), "%q is not a DRA driver name such as %q (a DNS subdomain of at most 63 characters)", d, v1alpha1.DRADriverGPU)
				continue
			}
			p.DRADrivers = append(p.DRADrivers, d)
		}
		if len(s.DRADrivers) == 0 {
			bad("dra-drivers", "dra-drivers is empty: leave it out for NVIDIA's (%s), or name the drivers whose devices are GPUs", strings.Join(v1alpha1.DefaultDRADrivers, ", "))
		}
	}
	if s.MaintenanceDomain != nil && *s.MaintenanceDomain == MaintenanceDomainComputeDomain {
		// The ComputeDomains: NVIDIA's label of them, which the
		// controller reads from the nodes' claims as well.
		p.MaintenanceDomain = v1alpha1.LabelComputeDomain
	} else if s.MaintenanceDomain != nil {
		if errs := validation.IsQualifiedName(*s.MaintenanceDomain); len(errs) > 0 {
			bad("maintenance-domain", "%q is not a node label key such as %q (an optional DNS prefix and a slash, then letters, digits, '-', '_' or '.')", *s.MaintenanceDomain, v1alpha1.LabelGFDClique)
		} else {
			p.MaintenanceDomain = *s.MaintenanceDomain
		}
	}
	if s.DomainSize != nil {
		if *s.DomainSize < 1 || *s.DomainSize > maxDomainSize {
			bad("domain-size", "domain-size must be from 1 to %d nodes, got %d", maxDomainSize, *s.DomainSize)
		} else {
			p.DomainSize = *s.DomainSize
		}
	}
	if (s.MaintenanceDomain != nil || s.DomainSize != nil) && (s.MaintenanceDomain == nil || p.MaintenanceDomain != "") &&
		(s.DomainSize == nil || p.DomainSize > 0) && (p.MaintenanceDomain == "") != (p.DomainSize == 0) {
		key := "maintenance-domain"
		if s.MaintenanceDomain == nil {
			key = "domain-size"
		}
		bad(key, "maintenance-domain and domain-size go together: the node label whose values are the domains and the most nodes one holds (e.g. maintenance-domain = %q, domain-size = 18)", v1alpha1.LabelGFDClique)
	}
	setDuration(&p.Soak, s.Soak, "soak")
	setDuration(&p.DrainTimeout, s.DrainTimeout, "drain-timeout")
	setDuration(&p.InstallTimeout, s.InstallTimeout, "install-timeout")
	setDuration(&p.ValidateTimeout, s.ValidateTimeout, "validate-timeout")
	if s.Windows != nil {
		p.Windows = nil
		for i, w := range s.Windows {
			win, errs := parseWindow(w)
			for _, e := range errs {
				bad(fmt.Sprintf("windows[%d].%s", i, e.field), "%s", e.msg)
			}
			if len(errs) == 0 {
				p.Windows = append(p.Windows, win)
			}
		}
	}
	if s.Freezes != nil {
		p.Freezes = nil
		for i, fr := range s.Freezes {
			key := fmt.Sprintf("freezes[%d]", i)
			fz, errs := parseFreeze(fr)
			for _, e := range errs {
				bad(joinField(key, e.field), "%s", e.msg)
			}
			if len(errs) == 0 {
				p.Freezes = append(p.Freezes, fz)
			}
		}
	}
	if s.Health != nil {
		h := s.Health
		if h.NodeConditions != nil {
			p.Health.NodeConditions = h.NodeConditions
		}
		if h.EventReasons != nil {
			p.Health.EventReasons = h.EventReasons
		}
		if (h.PrometheusURL == "") != (h.PrometheusQuery == "") {
			bad("health", "prometheus-url and prometheus-query go together: set both or neither")
		} else if h.PrometheusURL != "" {
			if !strings.HasPrefix(h.PrometheusURL, "http://") && !strings.HasPrefix(h.PrometheusURL, "https://") {
				bad("health.prometheus-url", "%q is not an http(s) URL", h.PrometheusURL)
			}
			p.Health.PrometheusURL, p.Health.PrometheusQuery = h.PrometheusURL, h.PrometheusQuery
		}
	}
}

// What a fleet file's evict says, and the API's mode for each.
const (
	EvictGPUPods = "gpu-pods"
	// MaintenanceDomainComputeDomain, as maintenance-domain, makes the
	// ComputeDomains of NVIDIA's DRA driver the maintenance domains: it
	// stands for their node label, v1alpha1.LabelComputeDomain.
	MaintenanceDomainComputeDomain = "computedomain"
	EvictAll                       = "all"
)

var evictModes = map[string]v1alpha1.EvictMode{EvictGPUPods: v1alpha1.EvictGPUPods, EvictAll: v1alpha1.EvictAll}

var percent = regexp.MustCompile(`^([0-9]+)%$`)

// parseAmount accepts an integer node count or a "NN%" string.
func parseAmount(v any) (Amount, error) {
	switch x := v.(type) {
	case int64:
		if x < 1 {
			return Amount{}, fmt.Errorf("max-unavailable must be at least 1, got %d (0 would never let a node start)", x)
		}
		return Amount{Value: int(x)}, nil
	case string:
		m := percent.FindStringSubmatch(x)
		if m == nil {
			return Amount{}, fmt.Errorf("%q is not a node count or a percentage such as \"25%%\"", x)
		}
		n, _ := strconv.Atoi(m[1])
		if n < 1 || n > 100 {
			return Amount{}, fmt.Errorf("%q must be between 1%% and 100%%", x)
		}
		return Amount{Value: n, Percent: true}, nil
	default:
		return Amount{}, fmt.Errorf("max-unavailable must be an integer or a percentage string, got %T", v)
	}
}

// Of resolves the amount against total nodes with the API's one rounding
// rule (v1alpha1.MaxUnavailableOf): a percentage rounds down but never below
// one node, so a small pool can still make progress.
func (a Amount) Of(total int) int { return v1alpha1.MaxUnavailableOf(a.IntOrString(), total) }

// IntOrString is the amount as spec.maxUnavailable writes it; nil when it is
// unset (zero), which the API reads as DefaultMaxUnavailable.
func (a Amount) IntOrString() *intstr.IntOrString {
	if a.Value <= 0 {
		return nil
	}
	v := intstr.FromInt32(int32(a.Value))
	if a.Percent {
		v = intstr.FromString(a.String())
	}
	return &v
}

type fieldError struct{ field, msg string }

var (
	clock    = regexp.MustCompile(`^([01][0-9]|2[0-3]):[0-5][0-9]$`)
	weekdays = map[string]time.Weekday{
		"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
		"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday,
	}
)

func parseWindow(w rawWindow) (Window, []fieldError) {
	var errs []fieldError
	win := Window{Start: w.Start, End: w.End, TimeZone: w.TimeZone}
	if len(w.Days) == 0 {
		errs = append(errs, fieldError{"days", "a window needs days, e.g. [\"Mon\", \"Tue\"]"})
	}
	for i, d := range w.Days {
		wd, ok := weekdays[strings.ToLower(d)]
		if !ok && len(d) > 3 {
			wd, ok = weekdays[strings.ToLower(d[:3])]
			ok = ok && strings.EqualFold(d, wd.String())
		}
		if !ok {
			errs = append(errs, fieldError{fmt.Sprintf("days[%d]", i), fmt.Sprintf("%q is not a day: use Mon, Tue, Wed, Thu, Fri, Sat or Sun", d)})
			continue
		}
		win.Days = append(win.Days, wd)
	}
	for _, c := range []struct{ field, v string }{{"start", w.Start}, {"end", w.End}} {
		if !clock.MatchString(c.v) {
			errs = append(errs, fieldError{c.field, fmt.Sprintf("%q is not a time of day: use HH:MM, e.g. 22:00", c.v)})
		}
	}
	if w.Start != "" && w.Start == w.End {
		errs = append(errs, fieldError{"end", fmt.Sprintf("start and end are both %s: a window must have a length", w.Start)})
	}
	if w.TimeZone == "" {
		errs = append(errs, fieldError{"time-zone", "time-zone is required, e.g. UTC or Europe/Berlin"})
	} else if _, err := time.LoadLocation(w.TimeZone); err != nil {
		errs = append(errs, fieldError{"time-zone", fmt.Sprintf("unknown time zone %q", w.TimeZone)})
	}
	return win, errs
}

// PolicyKey is the most specific table of the fleet file that sets field
// of cluster's policy ("policy.environments.prod.soak"), or "policy" when
// none does: where a message about that setting points.
func (f *Fleet) PolicyKey(cluster, field string) string {
	if f.Clusters[cluster] == nil {
		return "policy"
	}
	if key := f.policyKeyFor(cluster, field); key != joinKey("clusters", cluster) {
		return key
	}
	return "policy"
}
