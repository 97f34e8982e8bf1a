package promote

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/lint"
	"github.com/gpufleet/gpufleet/internal/render"
)

// StatusOptions say what `gpufleet status` reports on.
type StatusOptions struct {
	Fleet *fleet.Fleet
	// Dir is the folder of the fleet file, in the fleet repository: where
	// the notices look and, with Live, the commit the gate expects.
	Dir string
	// Live adds each cluster's gate result (it connects to the clusters).
	Live bool
	// Kubeconfig and Timeout are the gate's, with Live.
	Kubeconfig string
	Timeout    time.Duration
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// UnreadError says the live state of some clusters could not be read
// (unreachable, no such context, timeout): the Status returned with it is
// complete but for them.
type UnreadError struct{ Clusters []string }

func (e *UnreadError) Error() string {
	return "could not read the live state of " + strings.Join(e.Clusters, ", ")
}

// Run builds the status. With an *UnreadError it returns the Status too;
// any other error comes with none.
func (o StatusOptions) Run(ctx context.Context) (*Status, error) {
	st := StatusOf(o.Fleet)
	st.Notices = RepositoryNotices(o.Fleet, o.Dir)
	if !o.Live {
		return st, nil
	}
	rev, err := gate.HeadRevision(o.Dir)
	if err != nil {
		return nil, err
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	rep := gate.Run(ctx, gate.Options{Fleet: o.Fleet, Clusters: o.Fleet.ClusterNames(), Revision: rev, Kubeconfig: o.Kubeconfig, Timeout: o.Timeout, Now: now})
	st.AddGate(rep)
	if unread := unreadClusters(rep); len(unread) > 0 {
		return st, &UnreadError{Clusters: unread}
	}
	return st, nil
}

// unreadClusters lists, sorted, the clusters of rep with a check that could
// not be made (unreachable, no such context, timeout).
func unreadClusters(rep *gate.Report) []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range rep.Checks {
		if c.Status == gate.Unknown && !seen[c.Cluster] {
			seen[c.Cluster] = true
			out = append(out, c.Cluster)
		}
	}
	slices.Sort(out)
	return out
}

// RepositoryNotices are what the fleet repository at dir still lacks for
// its serving stack, with the command to run: the push webhook's token,
// without which only the webhook is down.
func RepositoryNotices(f *fleet.Fleet, dir string) []string {
	if f.Stack == nil {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(render.WebhookSecretFile))); errors.Is(err, fs.ErrNotExist) {
		return []string{fmt.Sprintf("push webhook down: %s is missing; run `%s` and commit it", render.WebhookSecretFile, lint.WebhookTokenCommand)}
	}
	return nil
}
