package admission

import (
	"fmt"
	"strings"

	"github.com/gpufleet/gpufleet/config"
)

// ControllerUser is the user name gpufleet-controller's requests carry:
// its service account's, which is what the policies let through.
const ControllerUser = "system:serviceaccount:" + config.Namespace + ":" + config.ServiceAccount

// isController is the CEL variable that says a request is the
// controller's.
var isController = fmt.Sprintf("request.userInfo.username == %s", quote(ControllerUser))

// quote is s as a CEL string literal. The keys and names quoted here are
// label keys and service account names, which hold no quote or backslash;
// one that did would be a programming error.
func quote(s string) string {
	if strings.ContainsAny(s, `'\`+"\n") {
		panic(fmt.Sprintf("admission: %q cannot be quoted as a plain CEL string", s))
	}
	return "'" + s + "'"
}
