package lint

import (
	"fmt"
	"regexp"
)

// The Secrets a repository gpufleet rendered lists before anyone has
// written them: `gpufleet secret encrypt` writes them, encrypted, where
// render lists them. lint names the exact command when one is missing.
const (
	// WebhookTokenFile holds the push Receiver's token. It is listed by the
	// webhook folder only, which no other Kustomization depends on: until
	// it is written only the push webhook is down.
	WebhookTokenFile = "infrastructure/webhook/secret-webhook-token.sops.yaml"
	// WebhookTokenCommand writes WebhookTokenFile.
	WebhookTokenCommand = "gpufleet secret encrypt --webhook-token --from-literal token=$(openssl rand -hex 20)"
)

// serviceSecret matches apps/<env>/<service>/secret-<name>.sops.yaml.
var serviceSecret = regexp.MustCompile(`^apps/([^/]+)/([^/]+)/secret-([^/]+)\.sops\.yaml$`)

// missingSecret is the finding for a listed, missing Secret that `gpufleet
// secret encrypt` writes, with the command that writes it.
func missingSecret(p, kf string, line int) (Finding, bool) {
	if p == WebhookTokenFile {
		// A warning: the rest of the stack applies without it.
		return Finding{File: kf, Line: line, Severity: Warning, Rule: "webhook-token-missing",
			Message: "the push Receiver's token " + p + " has not been written: the webhook Kustomization cannot build, so pushes wait for the interval (the rest of the stack is not affected)",
			Fix:     "run `" + WebhookTokenCommand + "` and commit the file"}, true
	}
	if m := serviceSecret.FindStringSubmatch(p); m != nil {
		return Finding{File: kf, Line: line, Severity: Error, Rule: "missing-resource",
			Message: fmt.Sprintf("Secret %s of service %s in %s is listed but has not been written: the service's Kustomization cannot build", m[3], m[2], m[1]),
			Fix:     fmt.Sprintf("run `gpufleet secret encrypt --env %s --service %s --name %s --from-literal KEY=VALUE` and commit the file", m[1], m[2], m[3])}, true
	}
	return Finding{}, false
}
