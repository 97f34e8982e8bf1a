package admission

import (
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// NodePolicyName names the policy on Nodes and its binding.
const NodePolicyName = "gpufleet-node-ownership"

// NodePolicy is the policy on Nodes. It keeps, on every CREATE and UPDATE
// of a node (through the status subresource too):
//
//   - one owner per node, for everyone: gpufleet.io/rollout may be set where
//     absent or removed, never changed from one rollout to another. Taking a
//     node is then always "set where absent", which the controller does
//     with the node's resourceVersion as a precondition, so of two rollouts
//     (or two controllers) that saw the node free only one wins;
//   - the controller's labels to the controller: every label of
//     v1alpha1.ControllerNodeLabels may be added, changed or removed, and a
//     node created carrying it, only by the controller's service account,
//     but for the exceptions each names;
//   - an admin's cordon to the admin: the controller never uncordons a node
//     marked gpufleet.io/admin-cordoned=true, and never drops that mark
//     while the node stays cordoned.
//
// What a rule cannot refuse: two DriverRollouts whose selectors overlap (a
// rule sees one object). The controller gives each node to one of them and
// the other reports the Overlap condition.
func NodePolicy() (*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding) {
	owner := func(labels string) string {
		return fmt.Sprintf("%s in %s ? %s[%s] : ''", quote(v1alpha1.LabelRollout), labels, labels, quote(v1alpha1.LabelRollout))
	}
	mark := quote(v1alpha1.AnnotationAdminCordoned)
	vars := []admissionv1.Variable{
		{Name: "controller", Expression: isController},
		// A label map, empty where the object has none; no old object on
		// CREATE.
		{Name: "oldLabels", Expression: "oldObject != null && has(oldObject.metadata.labels) ? oldObject.metadata.labels : {}"},
		{Name: "newLabels", Expression: "has(object.metadata.labels) ? object.metadata.labels : {}"},
		// What the node reported before the request (GPU Feature
		// Discovery's labels), or on CREATE what it registers with.
		{Name: "reported", Expression: "oldObject != null ? variables.oldLabels : variables.newLabels"},
		{Name: "oldOwner", Expression: owner("variables.oldLabels")},
		{Name: "newOwner", Expression: owner("variables.newLabels")},
		{Name: "adminHeld", Expression: lines(
			"oldObject != null && has(oldObject.spec.unschedulable) && oldObject.spec.unschedulable &&",
			fmt.Sprintf("has(oldObject.metadata.annotations) && %s in oldObject.metadata.annotations &&", mark),
			fmt.Sprintf("oldObject.metadata.annotations[%s] == 'true'", mark))},
	}
	validations := []admissionv1.Validation{{
		Expression: "variables.oldOwner == '' || variables.newOwner == '' || variables.oldOwner == variables.newOwner",
		MessageExpression: lines(
			"'node ' + object.metadata.name + ' belongs to DriverRollout ' + variables.oldOwner +",
			fmt.Sprintf("': %s may be set where absent or removed, never moved to ' + variables.newOwner", v1alpha1.LabelRollout)),
		Reason: ptr.To(metav1.StatusReasonForbidden),
	}}
	for _, l := range v1alpha1.ControllerNodeLabels {
		validations = append(validations, labelValidation(l))
	}
	validations = append(validations,
		admissionv1.Validation{
			Expression: "!variables.controller || !variables.adminHeld || (has(object.spec.unschedulable) && object.spec.unschedulable)",
			MessageExpression: fmt.Sprintf("'node ' + object.metadata.name + ' is cordoned by someone else (%s): the lifecycle controller never uncordons it'",
				v1alpha1.AnnotationAdminCordoned),
			Reason: ptr.To(metav1.StatusReasonForbidden),
		},
		admissionv1.Validation{
			Expression: lines(
				"!variables.controller || !variables.adminHeld ||",
				fmt.Sprintf("(has(object.metadata.annotations) && %s in object.metadata.annotations &&", mark),
				fmt.Sprintf("object.metadata.annotations[%s] == 'true')", mark)),
			MessageExpression: fmt.Sprintf("'node ' + object.metadata.name + ' is cordoned by someone else: the lifecycle controller never drops its %s mark'",
				v1alpha1.AnnotationAdminCordoned),
			Reason: ptr.To(metav1.StatusReasonForbidden),
		})
	return newPolicy(NodePolicyName, []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
		admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"nodes", "nodes/status"}},
		vars, validations)
}

// labelValidation is the rule that keeps label l to the controller: the
// label is as it was (absent on a new node), or the request is the
// controller's, or it is one of the exceptions l allows.
func labelValidation(l v1alpha1.ControllerNodeLabel) admissionv1.Validation {
	k := quote(l.Key)
	in := func(m string) string { return fmt.Sprintf("%s in variables.%s", k, m) }
	allowed := []string{
		"variables.controller",
		fmt.Sprintf("((%s) == (%s) && (!(%s) || variables.newLabels[%s] == variables.oldLabels[%s]))", in("newLabels"), in("oldLabels"), in("newLabels"), k, k),
	}
	var also []string
	if l.OthersMayRemove {
		allowed = append(allowed, fmt.Sprintf("!(%s)", in("newLabels")))
		also = append(also, "anyone may remove it")
	}
	if l.OthersMayRecordDriver {
		reports := func(gfd string) string {
			g := quote(gfd)
			return fmt.Sprintf("(%s in variables.reported && variables.newLabels[%s] == variables.reported[%s])", g, k, g)
		}
		allowed = append(allowed, fmt.Sprintf("(%s && (%s || %s))", in("newLabels"), reports(v1alpha1.LabelGFDDriverFull), reports(v1alpha1.LabelGFDDriverMajor)))
		also = append(also, fmt.Sprintf("anyone may set it to the driver the node reported running before the request (%s, or %s for a precompiled branch)",
			v1alpha1.LabelGFDDriverFull, v1alpha1.LabelGFDDriverMajor))
	}
	msg := fmt.Sprintf(" may not write node label %s: only gpufleet-controller (%s) adds, changes or removes it, or creates a node carrying it", l.Key, ControllerUser)
	if len(also) > 0 {
		msg += "; " + strings.Join(also, "; ")
	}
	return admissionv1.Validation{
		Expression:        strings.Join(allowed, " ||\n"),
		MessageExpression: "'node ' + object.metadata.name + ': ' + request.userInfo.username + " + quote(msg),
		Reason:            ptr.To(metav1.StatusReasonForbidden),
	}
}

// binding binds policy name to every object it matches, refusing what it
// refuses.
// newPolicy is a policy that fails closed on the operations of rule, and
// its binding.
func newPolicy(name string, ops []admissionv1.OperationType, rule admissionv1.Rule, vars []admissionv1.Variable,
	validations []admissionv1.Validation) (*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding) {
	policy := &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{Operations: ops, Rule: rule},
			}}},
			Variables:   vars,
			Validations: validations,
		},
	}
	return policy, binding(name)
}

func binding(name string) *admissionv1.ValidatingAdmissionPolicyBinding {
	return &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}
}

// lines joins the lines of one CEL expression, so that the YAML shows it
// as written here.
func lines(l ...string) string { return strings.Join(l, "\n") }
