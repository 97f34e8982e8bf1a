package admission

import (
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	admissionv1 "k8s.io/api/admissionregistration/v1"

	"github.com/gpufleet/gpufleet/internal/admission/admissiontest"
)

// evaluate runs policy p's variables and validations as the API server
// does, on object and oldObject (nil on a CREATE) for a request by user,
// and returns the first refusal's message, "" when every validation holds.
// Types are dynamic here: the API server also checks them against the
// schema, which TestNodePolicyOnTheAPIServer (internal/render) covers.
func evaluate(t *testing.T, p *admissionv1.ValidatingAdmissionPolicy, object, oldObject map[string]any, user string) string {
	t.Helper()
	env, err := cel.NewEnv(
		cel.Variable("object", cel.DynType), cel.Variable("oldObject", cel.DynType),
		cel.Variable("request", cel.DynType), cel.Variable("variables", cel.DynType))
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]ref.Val{}
	act := map[string]any{
		"object":    object,
		"oldObject": types.NullValue,
		"request":   map[string]any{"userInfo": map[string]any{"username": user}},
		"variables": vars,
	}
	if oldObject != nil {
		act["oldObject"] = oldObject
	}
	eval := func(expr string) ref.Val {
		t.Helper()
		ast, iss := env.Compile(expr)
		if iss.Err() != nil {
			t.Fatalf("%s: %v", expr, iss.Err())
		}
		prg, err := env.Program(ast)
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := prg.Eval(act)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return out
	}
	for _, v := range p.Spec.Variables {
		vars[v.Name] = eval(v.Expression)
	}
	for _, v := range p.Spec.Validations {
		if ok, isBool := eval(v.Expression).Value().(bool); !isBool {
			t.Fatalf("%s is not a bool", v.Expression)
		} else if !ok {
			return eval(v.MessageExpression).Value().(string)
		}
	}
	return ""
}

func node(labels map[string]string) map[string]any {
	if labels == nil {
		return nil
	}
	l := map[string]any{}
	for k, v := range labels {
		l[k] = v
	}
	return map[string]any{"metadata": map[string]any{"name": "gpu-1", "labels": l}, "spec": map[string]any{}}
}

// TestNodePolicyCases holds the node policy's CEL, evaluated in process,
// to the table the real API server is held to.
func TestNodePolicyCases(t *testing.T) {
	p, _ := NodePolicy()
	for _, c := range admissiontest.NodeCases() {
		t.Run(c.Name, func(t *testing.T) {
			user := "jane"
			if c.Controller {
				user = ControllerUser
			}
			got := evaluate(t, p, node(c.After), node(c.Before), user)
			switch {
			case c.Refused == "" && got != "":
				t.Errorf("refused: %s", got)
			case c.Refused != "" && !strings.Contains(got, c.Refused):
				t.Errorf("got %q, want a refusal saying %q", got, c.Refused)
			}
		})
	}
}

// TestNodePolicyCoversEveryControllerLabel: each label only the controller
// writes has its validation, and the policy matches node creation and
// updates, through the status subresource too.
func TestNodePolicyCoversEveryControllerLabel(t *testing.T) {
	p, b := NodePolicy()
	rule := p.Spec.MatchConstraints.ResourceRules[0]
	if got := strings.Join(rule.Resources, ","); got != "nodes,nodes/status" {
		t.Errorf("resources %s", got)
	}
	if got := rule.Operations; len(got) != 2 || got[0] != admissionv1.Create || got[1] != admissionv1.Update {
		t.Errorf("operations %v, want CREATE and UPDATE", got)
	}
	if b.Spec.PolicyName != p.Name || len(b.Spec.ValidationActions) != 1 || b.Spec.ValidationActions[0] != admissionv1.Deny {
		t.Errorf("binding %+v", b.Spec)
	}
}

func TestStatusPolicy(t *testing.T) {
	p, b := StatusPolicy()
	ro := map[string]any{"metadata": map[string]any{"name": "stg-h100"}, "status": map[string]any{"phase": "Completed"}}
	if got := evaluate(t, p, ro, ro, ControllerUser); got != "" {
		t.Errorf("the controller's status write refused: %s", got)
	}
	if got := evaluate(t, p, ro, ro, "jane"); !strings.Contains(got, "DriverRollout stg-h100: jane may not write its status") {
		t.Errorf("someone else's status write: %q", got)
	}
	if got := p.Spec.MatchConstraints.ResourceRules[0].Resources; len(got) != 1 || got[0] != "driverrollouts/status" {
		t.Errorf("resources %v", got)
	}
	if b.Spec.PolicyName != p.Name {
		t.Errorf("binding %+v", b.Spec)
	}
}
