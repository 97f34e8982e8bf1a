package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gitops"
	"github.com/gpufleet/gpufleet/internal/render"
)

type bootstrapOptions struct {
	fleetFile, cluster string
}

func newBootstrapCommand(s Streams) *cobra.Command {
	o := &bootstrapOptions{}
	cmd := &cobra.Command{
		Use:   "bootstrap CLUSTER [-f fleet.toml]",
		Short: "Print what a person applies once to put a cluster under its GitOps engine",
		Long: `bootstrap prints the one thing a person applies by hand to a cluster, once,
so that its GitOps engine applies the cluster's folder from then on; it
reads the fleet file and writes nothing.

On Argo CD (engine = "argocd"): the root Application, Application gpufleet
in namespace argocd, the very file render writes at
clusters/CLUSTER/argocd/application-gpufleet.yaml. Applied once, Argo CD
applies the rest of that folder itself (the Application of the GPU stack,
its AppProject, the repository and the health checks gpufleet's objects
need in argocd-cm), and keeps the root Application as git says. Pipe it
to kubectl: gpufleet bootstrap CLUSTER | kubectl apply -f -

On Flux (the default): the flux bootstrap command whose Kustomization
applies clusters/CLUSTER, with the fleet repository of [gitops] when the
fleet file names it.

Exit codes: 0 printed; 2 bad command line (an unknown cluster); 1 the
fleet file is invalid.`,
		Example: `  gpufleet bootstrap stg-h100 | kubectl --context stg-h100 apply -f -
  gpufleet bootstrap prod-h100-a -f fleet.toml`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeClusters,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.cluster = args[0]
			return o.run(cmd.Context(), s.Out, s.Err)
		},
	}
	cmd.Flags().StringVarP(&o.fleetFile, "file", "f", "fleet.toml", "the fleet file")
	return cmd
}

func (o *bootstrapOptions) run(ctx context.Context, out, errOut io.Writer) error {
	f, err := loadFleet(ctx, o.fleetFile)
	if err != nil {
		return err
	}
	c, ok := f.Clusters[o.cluster]
	if !ok {
		return withCode(ExitUsage, fmt.Errorf("unknown cluster %q (clusters: %s)", o.cluster, orList(f.ClusterNames())))
	}
	return bootstrappers.For(f.EngineFor(o.cluster))(f, c, out, errOut)
}

// bootstrapper prints what a person applies once to put cluster c under
// its GitOps engine: to out what is applied, to errOut how.
type bootstrapper func(f *fleet.Fleet, c *fleet.Cluster, out, errOut io.Writer) error

// bootstrappers are the engines' bootstrappers.
var bootstrappers = gitops.Implementations[bootstrapper](fluxBootstrap, argoCDBootstrap)

// fluxBootstrap prints the flux bootstrap command whose Kustomization
// applies the cluster's folder.
func fluxBootstrap(f *fleet.Fleet, c *fleet.Cluster, out, _ io.Writer) error {
	url := f.GitOps.Repository
	if url == "" {
		url = "<the fleet repository's URL>"
	}
	_, err := fmt.Fprintf(out, "flux bootstrap git --context=%s --url=%s --branch=%s --path=%s\n",
		contextOf(c), url, f.GitOps.Branch, render.ClusterDir(c.Name))
	return err
}

// argoCDBootstrap prints the cluster's root Application, as render
// writes it.
func argoCDBootstrap(f *fleet.Fleet, c *fleet.Cluster, out, errOut io.Writer) error {
	b, err := render.ArgoCDRootApplication(f, c.Name)
	if err != nil {
		return err
	}
	if _, err := out.Write(b); err != nil {
		return err
	}
	fmt.Fprintf(errOut, "# apply it once to cluster %s (context %s): Argo CD then applies %s itself\n",
		c.Name, contextOf(c), render.ClusterDir(c.Name)+"/"+render.ArgoCDDir)
	return nil
}

// contextOf is the kubeconfig context of cluster c.
func contextOf(c *fleet.Cluster) string {
	if c.Context != "" {
		return c.Context
	}
	return c.Name
}
