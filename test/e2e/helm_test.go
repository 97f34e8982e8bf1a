package e2e

import (
	"context"
	"fmt"

	"helm.sh/helm/v3/pkg/action"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/gpufleet/gpufleet/internal/charts"
)

// helmInstall installs chart name at version, from the operator charts in
// folder operators (as package charts reads them: a chart taken from the
// operator's git tag at that version, carrying the version a released chart
// does), into one context of kubeconfig with Helm's own install action, as
// `helm install --generate-name --create-namespace -n namespace CHART` does:
// the release gets a generated name (the chart's name and the time), Helm
// keeps its record in a Secret of namespace, and the chart's CRDs are
// installed first. It returns the release's name.
func helmInstall(ctx context.Context, kubeconfig, kubeContext, operators, name, version, namespace string, values map[string]any, logf func(string, ...any)) (string, error) {
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Context, flags.Namespace = &kubeconfig, &kubeContext, &namespace
	cfg := new(action.Configuration)
	if err := cfg.Init(flags, namespace, "secret", func(format string, v ...any) { logf("helm: "+format, v...) }); err != nil {
		return "", fmt.Errorf("helm: %w", err)
	}
	ch, err := (&charts.FolderSource{Dir: operators}).Load(ctx, name, version)
	if err != nil {
		return "", fmt.Errorf("helm: load %s %s: %w", name, version, err)
	}
	install := action.NewInstall(cfg)
	install.Namespace, install.CreateNamespace, install.GenerateName = namespace, true, true
	release, _, err := install.NameAndChart([]string{name})
	if err != nil {
		return "", fmt.Errorf("helm: %w", err)
	}
	install.ReleaseName = release
	rel, err := install.RunWithContext(ctx, ch, values)
	if err != nil {
		return "", fmt.Errorf("helm install %s: %w", release, err)
	}
	return rel.Name, nil
}
