package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpufleet/gpufleet/internal/dashboard"
	"github.com/gpufleet/gpufleet/internal/fleet"
)

// dashboardOptions are the flags of `gpufleet dashboard`.
type dashboardOptions struct {
	fleetFile, kubeconfig, listen string
	// allowedHosts are the --allowed-host names, as the check compares them.
	allowedHosts []string
	ttl          time.Duration
}

func newDashboardCommand(s Streams) *cobra.Command {
	o := &dashboardOptions{}
	cmd := &cobra.Command{
		Use:   "dashboard [-f fleet.toml] [--kubeconfig K] [--listen 127.0.0.1:8080] [--allowed-host NAME]...",
		Short: "Serve a live, read-only web view of the fleet (loopback only by default)",
		Long: `dashboard serves one web page of the fleet, live: the waves in order, each
cluster with the release the fleet file gives it, what the promotion waits for
and the exact next command (as gpufleet status says them), and per cluster the
gate's checks, the Flux objects' readiness, the DriverRollout's nodes as a
timeline of phases, its failure budget and maintenance window. A cluster that
cannot be reached is shown as unreachable, with the error.

It is read-only: it writes nothing to the clusters, to git or to the fleet
file, and has no login. It binds to loopback (127.0.0.1:8080) by default;
give --listen another address only behind something that authenticates:
anyone who reaches the port sees the fleet.

It answers only requests whose Host names it as it is known: localhost, a
name ending .localhost, 127.x.x.x and ::1; the host of --listen; for a
wildcard --listen (:8080, 0.0.0.0:8080), also this machine's host name and
interface addresses. Any other Host gets 421 Misdirected Request, so that a
web page of another origin cannot read the dashboard through DNS rebinding.
Give the name a reverse proxy in front of it is reached by with
--allowed-host (repeatable; the port is ignored).

Each cluster is watched once (one informer per kind, one probe of /readyz every
5 s), whatever the number of browsers; its view is rebuilt at most once per
--ttl. The fleet file and its repository's HEAD are read again when they
change. It runs until interrupted.

Exit codes: 0 stopped by a signal; 1 the fleet file is invalid; 2 bad command
line; 3 the fleet file or the listen address could not be used.`,
		Example: `  gpufleet dashboard -f fleet.toml
  gpufleet dashboard --kubeconfig ~/.kube/fleet --listen 127.0.0.1:9000
  gpufleet dashboard --allowed-host dashboard.example.org   # behind a proxy`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return withCode(ExitUsage, err)
			}
			return o.run(cmd.Context(), s.Out, s.Err)
		},
	}
	cmd.Flags().StringVarP(&o.fleetFile, "file", "f", "fleet.toml", "the fleet file")
	cmd.Flags().StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	cmd.Flags().StringVar(&o.listen, "listen", "127.0.0.1:8080", "address to serve on (loopback by default: the page has no login)")
	cmd.Flags().StringArrayVar(&o.allowedHosts, "allowed-host", nil, "a further Host name the page answers, as a reverse proxy's (repeatable)")
	cmd.Flags().DurationVar(&o.ttl, "ttl", dashboard.DefaultTTL, "shortest time between two reads of one cluster's view")
	return cmd
}

func (o *dashboardOptions) validate() error {
	if _, _, err := net.SplitHostPort(o.listen); err != nil {
		return fmt.Errorf("--listen %q: %w", o.listen, err)
	}
	for i, h := range o.allowedHosts {
		n, err := dashboard.ParseAllowedHost(h)
		if err != nil {
			return fmt.Errorf("--allowed-host: %w", err)
		}
		o.allowedHosts[i] = n
	}
	if o.ttl <= 0 {
		return errors.New("--ttl must be positive")
	}
	return nil
}

func (o *dashboardOptions) run(ctx context.Context, out, errOut io.Writer) error {
	if _, err := loadFleet(ctx, o.fleetFile); err != nil {
		return err
	}
	// The page shows every cluster's read and watch errors; the client
	// libraries' own logs would repeat them on the terminal once per retry
	// of every unreachable cluster.
	ctrllog.SetLogger(logr.Discard())
	klog.SetLogger(logr.Discard())
	// The names the page answers beyond loopback; those of the machine are
	// read once, here.
	hosts := append(dashboard.ListenHosts(o.listen), o.allowedHosts...)
	d, err := dashboard.New(dashboard.Options{
		FleetFile: o.fleetFile, Kubeconfig: o.kubeconfig, TTL: o.ttl, Explain: dashboard.ExplainLibrary{},
		AllowedHosts: hosts,
		Logf:         func(format string, args ...any) { fmt.Fprintf(errOut, "dashboard: "+format+"\n", args...) },
	})
	var probs fleet.Problems
	switch {
	case errors.As(err, &probs):
		return withCode(ExitFailed, err)
	case err != nil:
		return withCode(ExitUnknown, err)
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return withCode(ExitUnknown, err)
	}
	if !dashboard.IsLoopback(o.listen) {
		fmt.Fprintf(errOut, "gpufleet: warning: %s is not loopback: the dashboard has no login, anyone who reaches it sees the fleet\n", o.listen)
	}
	fmt.Fprintf(out, "gpufleet dashboard (read-only) on http://%s/\n", ln.Addr())
	if len(hosts) > 0 {
		fmt.Fprintf(out, "answers Host names: loopback, %s (any other gets 421)\n", strings.Join(hosts, ", "))
	}
	return d.Serve(ctx, ln)
}
