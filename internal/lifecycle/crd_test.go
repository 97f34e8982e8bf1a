package lifecycle

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/crdcheck"
	"github.com/gpufleet/gpufleet/internal/fleet"
)

// TestGeneratedCRDAcceptsAndRejects checks the generated CRD the way the API
// server would (schema, formats, CEL rules): what DriverRolloutFor renders
// passes, and each broken spec is refused by the rule meant to refuse it.
// It proves the markers in api/v1alpha1 say what they mean.
func TestGeneratedCRDAcceptsAndRejects(t *testing.T) {
	data, err := os.ReadFile("../../config/crd/bases/gpufleet.io_driverrollouts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crds, err := crdcheck.ParseCRDs(data)
	if err != nil {
		t.Fatal(err)
	}
	set, err := crdcheck.NewSet(crds...)
	if err != nil {
		t.Fatal(err)
	}
	p := fleet.DefaultPolicy()
	p.MaxUnavailable = fleet.Amount{Value: 25, Percent: true}
	p.Windows = []fleet.Window{{Days: []time.Weekday{time.Tuesday}, Start: "22:00", End: "06:00", TimeZone: "Europe/Berlin"}}
	start := time.Date(2026, 12, 21, 0, 0, 0, 0, time.UTC)
	p.Freezes = []fleet.Freeze{{Start: start, End: start.Add(14 * 24 * time.Hour), Reason: "year end"}}
	good := func() *v1alpha1.DriverRollout {
		return DriverRolloutFor("prod-h100-a-580-95-05", p, "580.95.05", "570.172.08", map[string]string{"gpufleet.io/pool": "h100"})
	}

	tests := []struct {
		name   string
		break_ func(*v1alpha1.DriverRollout)
		want   string // a word of the problem; empty: valid
	}{
		{"rendered policy is valid", func(*v1alpha1.DriverRollout) {}, ""},
		{"approval and named canary are valid", func(d *v1alpha1.DriverRollout) {
			d.Spec.Canary = v1alpha1.CanarySpec{Nodes: []string{"gpu-00"}}
			d.Spec.Approval = d.Name
		}, ""},
		{"window start equals end", func(d *v1alpha1.DriverRollout) { d.Spec.Windows[0].End = d.Spec.Windows[0].Start }, "start must differ from its end"},
		{"window time not HH:MM", func(d *v1alpha1.DriverRollout) { d.Spec.Windows[0].Start = "25:00" }, "spec.windows[0].start"},
		{"unknown day", func(d *v1alpha1.DriverRollout) { d.Spec.Windows[0].Days = []v1alpha1.Weekday{"Tuesday"} }, "spec.windows[0].days[0]"},
		{"freeze ends before it starts", func(d *v1alpha1.DriverRollout) {
			d.Spec.Freezes[0].End = metav1.NewTime(d.Spec.Freezes[0].Start.Add(-time.Hour))
		}, "freeze must end after it starts"},
		{"negative canary count", func(d *v1alpha1.DriverRollout) { n := int32(-1); d.Spec.Canary.Count = &n }, "spec.canary.count"},
		{"canary count and nodes together", func(d *v1alpha1.DriverRollout) { d.Spec.Canary.Nodes = []string{"gpu-00"} }, "mutually exclusive"},
		{"negative parallel nodes", func(d *v1alpha1.DriverRollout) { d.Spec.ParallelNodes = -1 }, "spec.parallelNodes"},
		{"maxUnavailable 0%", func(d *v1alpha1.DriverRollout) { v := intstr.FromString("0%"); d.Spec.MaxUnavailable = &v }, "maxUnavailable must be"},
		{"maxUnavailable zero", func(d *v1alpha1.DriverRollout) { v := intstr.FromInt32(0); d.Spec.MaxUnavailable = &v }, "maxUnavailable must be"},
		{"negative budget", func(d *v1alpha1.DriverRollout) { d.Spec.FailureBudget = -1 }, "spec.failureBudget"},
		{"steady state: target equals previous", func(d *v1alpha1.DriverRollout) { d.Spec.PreviousVersion = d.Spec.TargetVersion }, ""},
		{"negative soak", func(d *v1alpha1.DriverRollout) { d.Spec.Soak.Duration = -time.Minute }, "spec.soak: Invalid value"},
		{"soak longer than a week", func(d *v1alpha1.DriverRollout) { d.Spec.Soak.Duration = 200 * time.Hour }, "from 0s to 168h"},
		{"drain timeout longer than a week", func(d *v1alpha1.DriverRollout) { d.Spec.Timeouts.Drain.Duration = 200 * time.Hour }, "spec.timeouts.drain"},
		{"version is not a version", func(d *v1alpha1.DriverRollout) { d.Spec.TargetVersion = "latest" }, "spec.targetVersion"},
		{"a maintenance domain that fits", func(d *v1alpha1.DriverRollout) {
			d.Spec.MaintenanceDomain = &v1alpha1.MaintenanceDomain{NodeLabel: v1alpha1.LabelGFDClique, MaxNodes: 18}
			d.Spec.ParallelNodes = 18
		}, ""},
		{"a maintenance domain larger than parallelNodes", func(d *v1alpha1.DriverRollout) {
			d.Spec.MaintenanceDomain = &v1alpha1.MaintenanceDomain{NodeLabel: v1alpha1.LabelGFDClique, MaxNodes: 18}
			d.Spec.ParallelNodes = 4
		}, "maintenanceDomain.maxNodes exceeds parallelNodes"},
		{"a maintenance domain larger than a count of maxUnavailable", func(d *v1alpha1.DriverRollout) {
			d.Spec.MaintenanceDomain = &v1alpha1.MaintenanceDomain{NodeLabel: v1alpha1.LabelGFDClique, MaxNodes: 18}
			d.Spec.ParallelNodes = 18
			v := intstr.FromInt32(4)
			d.Spec.MaxUnavailable = &v
		}, "maintenanceDomain.maxNodes exceeds maxUnavailable"},
		{"a maintenance domain on the operator's actuator", func(d *v1alpha1.DriverRollout) {
			d.Spec.MaintenanceDomain = &v1alpha1.MaintenanceDomain{NodeLabel: v1alpha1.LabelGFDClique, MaxNodes: 1}
			d.Spec.Actuator = v1alpha1.ActuatorGPUOperator
		}, "maintenanceDomain needs the gpufleet actuator"},
		{"a maintenance domain without a label", func(d *v1alpha1.DriverRollout) {
			d.Spec.MaintenanceDomain = &v1alpha1.MaintenanceDomain{MaxNodes: 1}
		}, "spec.maintenanceDomain.nodeLabel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := good()
			tt.break_(d)
			b, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			obj := &unstructured.Unstructured{}
			if err := obj.UnmarshalJSON(b); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range set.Validate(context.Background(), obj) {
				got = append(got, p.Message())
			}
			t.Logf("problems: %q", got)
			if tt.want == "" {
				if diff := cmp.Diff([]string(nil), got); diff != "" {
					t.Errorf("valid object refused (-want +got):\n%s", diff)
				}
				return
			}
			if !strings.Contains(strings.Join(got, "\n"), tt.want) {
				t.Errorf("problems %q do not mention %q", got, tt.want)
			}
		})
	}
}
