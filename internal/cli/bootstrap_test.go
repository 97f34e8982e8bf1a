package cli

import (
	"context"
	"os"
	"strings"
	"testing"
)

// TestBootstrap: on an Argo CD cluster bootstrap prints the root
// Application render writes, byte for byte; on a Flux cluster the flux
// bootstrap command for the cluster's folder.
func TestBootstrap(t *testing.T) {
	const file = "../render/testdata/argocd/fleet.toml"
	run := func(args ...string) (string, string, int) {
		var out, errOut strings.Builder
		code := Run(context.Background(), append(args, "-f", file), Streams{In: strings.NewReader(""), Out: &out, Err: &errOut})
		return out.String(), errOut.String(), code
	}
	out, hint, code := run("bootstrap", "stg")
	want, err := os.ReadFile("../render/testdata/argocd/golden/clusters/stg/argocd/application-gpufleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 || out != string(want) {
		t.Errorf("bootstrap stg: exit %d, printed\n%s\nwant the rendered root Application\n%s", code, out, want)
	}
	if !strings.Contains(hint, "clusters/stg/argocd") {
		t.Errorf("bootstrap stg says on stderr: %q", hint)
	}
	out, _, code = run("bootstrap", "prod")
	if code != 0 || out != "flux bootstrap git --context=prod --url=https://git.internal.example/platform/fleet.git --branch=main --path=clusters/prod\n" {
		t.Errorf("bootstrap prod: exit %d, %q", code, out)
	}
	if _, _, code = run("bootstrap", "nowhere"); code != ExitUsage {
		t.Errorf("bootstrap of an unknown cluster: exit %d, want %d", code, ExitUsage)
	}
}
