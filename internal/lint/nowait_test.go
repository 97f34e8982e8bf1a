package lint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNoWaitWithAReason: a dependency that does not wait is reported,
// unless its annotation says why not waiting is deliberate.
func TestNoWaitWithAReason(t *testing.T) {
	const dep = `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: config
  namespace: flux-system
%s
spec:
  interval: 10m
  timeout: 5m
  prune: true
  path: ./config
  sourceRef:
    kind: GitRepository
    name: flux-system
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: lifecycle
  namespace: flux-system
spec:
  interval: 10m
  timeout: 5m
  prune: true
  wait: true
  path: ./lifecycle
  dependsOn:
  - name: config
  sourceRef:
    kind: GitRepository
    name: flux-system
`
	for _, tc := range []struct {
		name, meta string
		reported   bool
	}{
		{"no reason", "", true},
		{"empty reason", "  annotations:\n    " + AnnotationNoWait + ": \"\"", true},
		{"a reason", "  annotations:\n    " + AnnotationNoWait + ": an NVIDIADriver that selects no node is never ready", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, d := range []string{"config", "lifecycle"} {
				if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			body := strings.Replace(dep, "%s\n", tc.meta+"\n", 1)
			if tc.meta == "" {
				body = strings.Replace(dep, "%s\n", "", 1)
			}
			if err := os.WriteFile(filepath.Join(dir, "flux.yaml"), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			rep, err := Run(dir, Options{ApplyTime: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			got := false
			for _, f := range rep.Findings {
				got = got || f.Rule == "no-wait"
			}
			if got != tc.reported {
				t.Errorf("no-wait reported %t, want %t: %+v", got, tc.reported, rep.Findings)
			}
		})
	}
}
