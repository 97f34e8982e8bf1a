package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// Signal sources, as the planner's reasons name them.
const (
	sourceCondition  = "condition"
	sourceEvent      = "event"
	sourcePrometheus = "prometheus"
)

// signals gathers the health signals the plan names, seen on a soaking node.
// The planner keeps only those at or after the soak's start.
func (r *Reconciler) signals(ctx context.Context, ro *v1alpha1.DriverRollout, node *corev1.Node, since, now time.Time) ([]planner.Signal, error) {
	h := &ro.Spec.Health
	sigs := conditionSignals(node, h.NodeConditions)
	if len(h.EventReasons) > 0 {
		var events corev1.EventList
		if err := r.Client.List(ctx, &events, client.MatchingFields{indexEventNode: node.Name}); err != nil {
			return nil, fmt.Errorf("list events of node %s: %w", node.Name, err)
		}
		sigs = append(sigs, eventSignals(events.Items, node.Name, h.EventReasons)...)
	}
	if h.Prometheus != nil {
		q := expandQuery(h.Prometheus.Query, node.Name, now.Sub(since))
		samples, err := r.prometheus().Query(ctx, h.Prometheus.URL, q, now)
		if err != nil {
			// An unreachable Prometheus fails no node: the other sources
			// still watch it, and the next pass asks again.
			log.FromContext(ctx).Info("prometheus health query failed", "node", node.Name, "error", err.Error())
			r.Metrics.healthQueryFailed(ro.Name)
		}
		sigs = append(sigs, promSignals(samples, q, now)...)
	}
	return sigs, nil
}

// conditionSignals turns the named node conditions that are True into
// signals dated when they became True. Condition times are whole seconds:
// like an Event's (see eventTime), the time is moved to the end of its
// second, so a condition raised in the second a soak began counts.
func conditionSignals(node *corev1.Node, types []string) []planner.Signal {
	var out []planner.Signal
	for _, c := range node.Status.Conditions {
		if c.Status != corev1.ConditionTrue || !slices.Contains(types, string(c.Type)) {
			continue
		}
		out = append(out, planner.Signal{At: endOfSecond(c.LastTransitionTime.Time), Source: sourceCondition, Reason: string(c.Type), Message: c.Message})
	}
	return out
}

// endOfSecond moves a time stamped in whole seconds to the last instant of
// that second.
func endOfSecond(t time.Time) time.Time {
	return t.Truncate(time.Second).Add(time.Second - time.Nanosecond)
}

// eventSignals turns the node's Events with a named reason into signals.
func eventSignals(events []corev1.Event, node string, reasons []string) []planner.Signal {
	var out []planner.Signal
	for i := range events {
		e := &events[i]
		if e.InvolvedObject.Kind != "Node" || e.InvolvedObject.Name != node || !slices.Contains(reasons, e.Reason) {
			continue
		}
		out = append(out, planner.Signal{At: eventTime(e), Source: sourceEvent, Reason: e.Reason, Message: e.Message})
	}
	return out
}

// eventTime is when an Event last happened. Core Events stamp whole seconds:
// such a time is moved to the end of its second, so an event raised in the
// same second a soak began still counts against the soak (failing safe).
func eventTime(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.LastTimestamp.IsZero():
		return endOfSecond(e.LastTimestamp.Time)
	case !e.FirstTimestamp.IsZero():
		return endOfSecond(e.FirstTimestamp.Time)
	}
	return endOfSecond(e.CreationTimestamp.Time)
}

// expandQuery replaces "$node" with the node's name and "$soak" with the
// soak so far (in whole seconds, at least one), so a range query covers the
// soak and nothing before it.
func expandQuery(q, node string, soak time.Duration) string {
	secs := max(int64(soak/time.Second), 1)
	return strings.NewReplacer("$node", node, "$soak", strconv.FormatInt(secs, 10)+"s").Replace(q)
}

// promSignals fails the node on any non-zero sample.
func promSignals(samples []Sample, query string, now time.Time) []planner.Signal {
	for _, s := range samples {
		if s.Value != 0 {
			return []planner.Signal{{At: now, Source: sourcePrometheus, Reason: "PrometheusQuery",
				Message: fmt.Sprintf("%s returned %g", query, s.Value)}}
		}
	}
	return nil
}

// Sample is one element of an instant query's result vector.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// MetricsSource runs an instant PromQL query. [PrometheusHTTP] is the real
// one; it is an interface so that a test can count or refuse queries.
type MetricsSource interface {
	Query(ctx context.Context, server, query string, at time.Time) ([]Sample, error)
}

// PrometheusHTTP queries a Prometheus server through its HTTP API
// (GET /api/v1/query).
type PrometheusHTTP struct {
	// Client defaults to a client with a 10 s timeout.
	Client *http.Client
}

// Query runs query at the instant at.
func (p PrometheusHTTP) Query(ctx context.Context, server, query string, at time.Time) ([]Sample, error) {
	c := p.Client
	if c == nil {
		c = &http.Client{Timeout: 10 * time.Second}
	}
	u, err := url.Parse(strings.TrimSuffix(server, "/") + "/api/v1/query")
	if err != nil {
		return nil, fmt.Errorf("prometheus url: %w", err)
	}
	u.RawQuery = url.Values{
		"query": {query},
		"time":  {strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)},
	}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("prometheus query: %w", err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("prometheus query: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, fmt.Errorf("prometheus query: %w", err)
	}
	return parsePromResponse(resp.StatusCode, body)
}

// promResponse is the part of the HTTP API's answer the controller reads.
type promResponse struct {
	Status    string `json:"status"`
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
	Data      struct {
		ResultType string            `json:"resultType"`
		Result     []json.RawMessage `json:"result"`
	} `json:"data"`
}

// errPromResult is wrapped by answers the controller cannot read.
var errPromResult = errors.New("unexpected prometheus answer")

func parsePromResponse(code int, body []byte) ([]Sample, error) {
	var r promResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("%w: http %d: %v", errPromResult, code, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("%w: http %d: %s: %s", errPromResult, code, r.ErrorType, r.Error)
	}
	var out []Sample
	switch r.Data.ResultType {
	case "vector":
		for _, raw := range r.Data.Result {
			var e struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			}
			if err := json.Unmarshal(raw, &e); err != nil {
				return nil, fmt.Errorf("%w: %v", errPromResult, err)
			}
			v, err := sampleValue(e.Value[1])
			if err != nil {
				return nil, err
			}
			out = append(out, Sample{Labels: e.Metric, Value: v})
		}
	default:
		return nil, fmt.Errorf("%w: result type %q, want vector", errPromResult, r.Data.ResultType)
	}
	return out, nil
}

func sampleValue(v any) (float64, error) {
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("%w: sample value %v is not a string", errPromResult, v)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: sample value %q: %v", errPromResult, s, err)
	}
	return f, nil
}
