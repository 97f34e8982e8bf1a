package admission

import (
	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// StatusPolicyName names the policy on DriverRollout status and its
// binding.
const StatusPolicyName = "gpufleet-rollout-status"

// StatusPolicy is the policy on the DriverRollout status subresource: only
// the controller's service account writes it. The status is what the gate,
// `gpufleet status` and Flux's health checks read to let a wave go on (its
// phase, its conditions, the controller version that last acted on it,
// which makes an older controller stand aside): a status written by anyone
// else would be a verdict nobody reached. RBAC alone does not say it,
// since whoever may update every object (cluster-admin, or a wildcard
// role) may update this subresource too.
//
// Nothing else writes it: Flux and Argo CD apply the spec, and the API
// server ignores a status sent with it.
func StatusPolicy() (*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding) {
	return newPolicy(StatusPolicyName, []admissionv1.OperationType{admissionv1.Update},
		admissionv1.Rule{APIGroups: []string{v1alpha1.GroupVersion.Group}, APIVersions: []string{"*"}, Resources: []string{"driverrollouts/status"}},
		[]admissionv1.Variable{{Name: "controller", Expression: isController}},
		[]admissionv1.Validation{{
			Expression: "variables.controller",
			MessageExpression: "'DriverRollout ' + object.metadata.name + ': ' + request.userInfo.username + " +
				quote(" may not write its status: only gpufleet-controller ("+ControllerUser+") does"),
			Reason: ptr.To(metav1.StatusReasonForbidden),
		}})
}
