package render

import (
	"testing"

	"github.com/google/cel-go/cel"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/testworld/testbed"
)

// TestNewDriverRolloutIsReadableByFluxHealthChecks creates the
// DriverRollout render writes on a real API server, before any controller
// has written its status, and evaluates the lifecycle step's health
// expressions on it the way kustomize-controller does: parsed without
// declared variables, with the object's top-level fields as the activation,
// so a missing status field is an evaluation error (Flux then waits for the
// step's timeout) rather than "not yet". The CRD's default status of {}
// makes it "not yet": InProgress, no error.
func TestNewDriverRolloutIsReadableByFluxHealthChecks(t *testing.T) {
	f, err := fleet.Load(exampleFleet)
	if err != nil {
		t.Fatal(err)
	}
	ro, err := DriverRollout(f, "stg-h100", f.Promotion.Stable)
	if err != nil {
		t.Fatal(err)
	}
	scheme := testbed.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	tb := testbed.New(t, testbed.Options{CRDDirs: []string{"../../config/crd/bases"}, Scheme: scheme})
	c := tb.Clusters()[0].Client
	if err := c.Create(t.Context(), ro); err != nil {
		t.Fatal(err)
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("DriverRollout"))
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(ro), got); err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Object["status"]; !ok {
		t.Fatalf("a new DriverRollout reads without a status field: %v", got.Object)
	}
	env, err := cel.NewEnv(cel.OptionalTypes())
	if err != nil {
		t.Fatal(err)
	}
	exprs := driverRolloutHealth[0].HealthCheckExpressions
	for name, expr := range map[string]string{"current": exprs.Current, "failed": exprs.Failed} {
		ast, iss := env.Parse(expr)
		if iss.Err() != nil {
			t.Fatalf("%s: %v", name, iss.Err())
		}
		prg, err := env.Program(ast)
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := prg.Eval(got.Object)
		if err != nil {
			t.Errorf("%s on a new DriverRollout: %v (Flux would wait for the step's timeout)", name, err)
			continue
		}
		if out.Value() != false {
			t.Errorf("%s on a new DriverRollout = %v, want false (InProgress until the controller observes it)", name, out.Value())
		}
	}
	// Without the default, the same expressions fail to evaluate.
	bare := runtime.DeepCopyJSON(got.Object)
	delete(bare, "status")
	ast, _ := env.Parse(exprs.Current)
	prg, _ := env.Program(ast)
	if _, _, err := prg.Eval(bare); err == nil {
		t.Error("the health expression evaluates on an object without status; this test no longer shows why the default is there")
	}
}
