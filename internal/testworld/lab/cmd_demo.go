package lab

import (
	"context"
	"errors"
	"io"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/internal/cli"
)

// demoOptions are the flags of "gpufleet-lab demo".
type demoOptions struct {
	root, dir, report string
	keep, argocd      bool
}

func newDemoCommand(out io.Writer) *cobra.Command {
	o := &demoOptions{}
	cmd := &cobra.Command{
		Use:   "demo [--argocd] [--keep] [--report FILE] [--dir DIR]",
		Short: "Play a release's whole story on a local testbed of two clusters",
		Long: `demo starts a local testbed — two clusters (stg and prod), each with its own
kube-apiserver, etcd, kube-controller-manager and kube-scheduler, Flux
source-controller and kustomize-controller, kwok, the real GPU Operator, the
lifecycle controller and three simulated GPU nodes, plus a git server holding
the fleet repository — and plays the story with progress output: render and
first sync, a release started, gated, approved and promoted to prod, drift
repaired by Flux, and a drill release that fails at the staging canary node,
is refused by the gate and is aborted. It ends with a summary and an HTML
report (--report) of the waves, clusters, steps and each node's phases over time.
With --argocd staging runs the real Argo CD (application-controller, repo-server
and a redis) instead of Flux, bootstrapped with what gpufleet bootstrap prints,
and prod stays on Flux: the story with sync waves and self-heal.

Needs the programs of "make testbin" and ../shared/operators; run it from the
repository root (or give --root). --keep leaves the testbed running and prints
its kubeconfig; Ctrl-C stops everything.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), out)
		},
	}
	cmd.Flags().BoolVar(&o.keep, "keep", false, "leave the testbed running after the story, until Ctrl-C")
	cmd.Flags().BoolVar(&o.argocd, "argocd", false, "staging on Argo CD (needs redis-server on PATH), prod on Flux")
	cmd.Flags().StringVar(&o.dir, "dir", "", "folder for the testbed (kubeconfig, logs, fleet repository); temporary when empty")
	cmd.Flags().StringVar(&o.root, "root", ".", "the gpufleet repository root (CRDs; ../shared/operators beside it)")
	cmd.Flags().StringVar(&o.report, "report", "gpufleet-demo.html", "where to write the HTML report (waves, clusters, nodes and their phases over time); empty for none")
	return cmd
}

// run plays the story: exit 3 when the testbed could not start, 1 when a
// step failed, 0 when it was played or interrupted.
func (o *demoOptions) run(ctx context.Context, out io.Writer) error {
	sum, err := Demo(ctx, DemoOptions{Out: out, Root: o.root, Dir: o.dir, Keep: o.keep, Report: o.report, ArgoCD: o.argocd})
	switch {
	case sum == nil && err != nil:
		return withCode(cli.ExitUnknown, err)
	case err != nil && errors.Is(err, context.Canceled):
		return nil
	case err != nil:
		return withCode(cli.ExitFailed, err)
	}
	return nil
}
