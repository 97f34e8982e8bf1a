package promote

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/render"
)

// TestStatusRunNotices: a serving stack whose repository lacks the push
// webhook's token gets the notice that says what to run; once the file is
// there, none. Without --live nothing is connected to.
func TestStatusRunNotices(t *testing.T) {
	f, err := fleet.Load("../../examples/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	if f.Stack == nil {
		t.Skip("the example has no serving stack")
	}
	dir := t.TempDir()
	st, err := StatusOptions{Fleet: f, Dir: dir}.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Notices) != 1 || !strings.Contains(st.Notices[0], render.WebhookSecretFile+" is missing") {
		t.Errorf("notices %q, want the missing webhook token", st.Notices)
	}
	if st.Live || st.Stable != f.Promotion.Stable {
		t.Errorf("status live %v, stable %q; want not live, %q", st.Live, st.Stable, f.Promotion.Stable)
	}
	p := filepath.Join(dir, filepath.FromSlash(render.WebhookSecretFile))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if st, err := (StatusOptions{Fleet: f, Dir: dir}).Run(t.Context()); err != nil || len(st.Notices) != 0 {
		t.Errorf("with the token: notices %q, err %v; want none", st.Notices, err)
	}
}

// TestStatusRunLiveOutsideGit: --live needs the commit Flux should have
// applied; outside a git repository that is an error, with no status.
func TestStatusRunLiveOutsideGit(t *testing.T) {
	f, err := fleet.Load("../../examples/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	st, err := StatusOptions{Fleet: f, Dir: t.TempDir(), Live: true}.Run(t.Context())
	var unread *UnreadError
	if err == nil || st != nil || errors.As(err, &unread) {
		t.Errorf("got %v, %v; want an error and no status", st, err)
	}
}

func TestUnreadClusters(t *testing.T) {
	rep := &gate.Report{Checks: []gate.Check{
		{Cluster: "b", Status: gate.Unknown}, {Cluster: "a", Status: gate.Pass},
		{Cluster: "c", Status: gate.Unknown}, {Cluster: "b", Status: gate.Unknown},
	}}
	if got := unreadClusters(rep); !slices.Equal(got, []string{"b", "c"}) {
		t.Errorf("unread %v, want [b c]", got)
	}
	if msg := (&UnreadError{Clusters: []string{"b", "c"}}).Error(); msg != "could not read the live state of b, c" {
		t.Errorf("message %q", msg)
	}
}
