package rehearse

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/planner"
	"github.com/gpufleet/gpufleet/internal/sim"
)

// domainFleet is the example fleet with prod-h100-b's nodes maintained in
// NVLink domains of 4 (its pools of 16 and 8 nodes: 4 + 2 domains).
func domainFleet(t *testing.T) *fleet.Fleet {
	t.Helper()
	b, err := os.ReadFile("../../examples/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), "[policy.clusters.prod-a100]", `[policy.clusters.prod-h100-b]
maintenance-domain = "`+v1alpha1.LabelGFDClique+`"
domain-size = 4
parallel-nodes = 4
max-unavailable = 4

[policy.clusters.prod-a100]`, 1)
	path := filepath.Join(t.TempDir(), "fleet.toml")
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := fleet.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestInDomains: each pool's nodes in consecutive groups of the domain
// size, the last one perhaps smaller; no label without a domain.
func TestInDomains(t *testing.T) {
	p := fleet.Policy{MaintenanceDomain: v1alpha1.LabelGFDClique, DomainSize: 4}
	nodes := inDomains(sim.Nodes(6, "gb200", map[string]string{v1alpha1.LabelPool: "gb200"}, "570"), "gb200", p)
	var got []string
	for _, n := range nodes {
		got = append(got, n.Name+"="+n.Labels[v1alpha1.LabelGFDClique])
		if n.Labels[v1alpha1.LabelPool] != "gb200" {
			t.Errorf("%s lost its pool label: %v", n.Name, n.Labels)
		}
	}
	want := []string{"gb200-00=gb200-domain-0", "gb200-01=gb200-domain-0", "gb200-02=gb200-domain-0", "gb200-03=gb200-domain-0", "gb200-04=gb200-domain-1", "gb200-05=gb200-domain-1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("domains (-want +got):\n%s", diff)
	}
	plain := inDomains(sim.Nodes(2, "h100", map[string]string{}, "570"), "h100", fleet.Policy{})
	if slices.ContainsFunc(plain, func(n planner.Node) bool { _, ok := n.Labels[v1alpha1.LabelGFDClique]; return ok }) {
		t.Errorf("a policy without a domain labelled the nodes: %v", plain[0].Labels)
	}
}

// TestDomainPolicyRehearsesDomains: a policy with a maintenance domain is
// rehearsed on nodes labelled into domains, so the planner starts each
// domain's nodes together and returns them as one, as it would in a
// cluster that GPU Feature Discovery labels; before, every node was a
// domain of its own. Jobs over a whole domain run on them.
func TestDomainPolicyRehearsesDomains(t *testing.T) {
	all, err := Options{Fleet: domainFleet(t), Cluster: "prod-h100-b", Release: "r2026-10", Start: start, Seed: 1, Record: true, Utilization: 0.85}.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	r := all[0]
	if r.Report.Done != 24 {
		t.Fatalf("%d of %d done: %s", r.Report.Done, r.Report.Nodes, r.Report.Reason)
	}
	domains := map[string][]string{}
	for _, n := range r.Result().Nodes {
		d := n.Labels[v1alpha1.LabelGFDClique]
		domains[d] = append(domains[d], n.Name)
	}
	if len(domains) != 6 || len(domains["h100-domain-3"]) != 4 || len(domains["h200-domain-1"]) != 4 {
		t.Errorf("domains %v, want h100-domain-0..3 and h200-domain-0..1 of 4 nodes each", domains)
	}
	// The canary's domain starts as one: its four nodes in the same minute.
	var started []string
	for line := range strings.SplitSeq(r.Transcript(), "\n") {
		if strings.Contains(line, "Pending → Draining") && strings.Contains(line, "maintenance domain h100-domain-0 (4 nodes, starting as one)") {
			started = append(started, line[:strings.Index(line, "  ")])
		}
	}
	if len(started) != 4 || slices.ContainsFunc(started, func(at string) bool { return at != started[0] }) {
		t.Errorf("h100-domain-0 started at %v, want its 4 nodes at once:\n%s", started, r.Transcript())
	}
	if !strings.Contains(r.Policy, "maintenance domains by nvidia.com/gpu.clique of at most 4 nodes") {
		t.Errorf("policy %q does not say its domains", r.Policy)
	}
	if !strings.Contains(r.Workload, "training over one maintenance domain") {
		t.Errorf("workload %q: want jobs over a whole domain", r.Workload)
	}
}

// TestCompareDomainPolicy: the operator's path cannot keep a domain (the
// planner refuses it there), so the comparison moves the same domain-
// labelled nodes one by one on it and says so, rather than a stalled run.
func TestCompareDomainPolicy(t *testing.T) {
	all, err := Options{Fleet: domainFleet(t), Cluster: "prod-h100-b", Release: "r2026-10", Start: start, Seed: 1, Utilization: 0.85}.Compare(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range all[0].Runs {
		if rep := r.Rehearsal.Report; rep.Outcome != v1alpha1.PhaseCompleted || rep.Done != rep.Nodes {
			t.Errorf("%s: %s, %d of %d done: %s", r.Title, rep.Outcome, rep.Done, rep.Nodes, rep.Reason)
		}
	}
	op := actuatorRuns(all[0])[len(actuatorRuns(all[0]))-1]
	if op.Actuator != v1alpha1.ActuatorGPUOperator || !slices.Contains(op.Limits, operatorDomainLimit) {
		t.Errorf("operator run %s, limits %q: want the domain limit", op.Actuator, op.Limits)
	}
	var b bytes.Buffer
	if err := WriteComparisons(&b, all); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "no maintenance domains") {
		t.Errorf("the table does not say the operator keeps no domain:\n%s", b.String())
	}
	if slices.Contains(OperatorLimits, operatorDomainLimit) {
		t.Errorf("the domain limit leaked into OperatorLimits")
	}
}
