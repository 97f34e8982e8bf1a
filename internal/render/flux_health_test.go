package render

import (
	"testing"

	"github.com/google/cel-go/cel"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// TestDriverRolloutHealth evaluates the lifecycle Kustomization's health
// check expressions the way kustomize-controller does (CEL over the object's
// top-level fields; Failed wins over Current): healthy once the controller
// took in the spec, failed when the rollout is Stalled or completed with
// failures, as docs/render-output.md says.
func TestDriverRolloutHealth(t *testing.T) {
	exprs := driverRolloutHealth[0].HealthCheckExpressions
	env, err := cel.NewEnv(cel.Variable("metadata", cel.DynType), cel.Variable("status", cel.DynType), cel.Variable("spec", cel.DynType))
	if err != nil {
		t.Fatal(err)
	}
	eval := func(expr string, obj map[string]any) bool {
		t.Helper()
		ast, iss := env.Compile(expr)
		if iss.Err() != nil {
			t.Fatalf("%s: %v", expr, iss.Err())
		}
		prg, err := env.Program(ast)
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := prg.Eval(obj)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return out.Value() == true
	}
	rollout := func(observed int64, phase v1alpha1.RolloutPhase, conds ...string) map[string]any {
		ro := &v1alpha1.DriverRollout{ObjectMeta: metav1.ObjectMeta{Name: "r", Generation: 2}}
		ro.Status.ObservedGeneration, ro.Status.Phase = observed, phase
		for _, c := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionStalled, v1alpha1.ConditionCompleted, v1alpha1.ConditionCompletedWithFailures} {
			st := metav1.ConditionFalse
			for _, on := range conds {
				if on == c {
					st = metav1.ConditionTrue
				}
			}
			ro.Status.Conditions = append(ro.Status.Conditions, metav1.Condition{Type: c, Status: st, Reason: "R", LastTransitionTime: metav1.Now()})
		}
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ro)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := obj["spec"]; !ok {
			obj["spec"] = map[string]any{}
		}
		return obj
	}
	tests := []struct {
		name string
		obj  map[string]any
		want string // Failed, Current or InProgress
	}{
		{"spec not taken in yet", rollout(1, v1alpha1.PhaseProgressing), "InProgress"},
		{"progressing", rollout(2, v1alpha1.PhaseProgressing), "Current"},
		{"completed", rollout(2, v1alpha1.PhaseCompleted, v1alpha1.ConditionReady, v1alpha1.ConditionCompleted), "Current"},
		{"stalled", rollout(2, v1alpha1.PhaseStalled, v1alpha1.ConditionStalled), "Failed"},
		{"completed with failures", rollout(2, v1alpha1.PhaseCompletedWithFailures, v1alpha1.ConditionStalled, v1alpha1.ConditionCompletedWithFailures), "Failed"},
		{"completed with failures, even without Stalled", rollout(2, v1alpha1.PhaseCompletedWithFailures, v1alpha1.ConditionCompletedWithFailures), "Failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := "InProgress"
			switch {
			case eval(exprs.Failed, tt.obj):
				got = "Failed"
			case eval(exprs.Current, tt.obj):
				got = "Current"
			}
			if got != tt.want {
				t.Errorf("health %s, want %s", got, tt.want)
			}
		})
	}
}
