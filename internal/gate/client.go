package gate

import (
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// Kubeconfig is a kubeconfig file read once, from which the gate builds one
// client per context. Reading it once per gate run rather than once per
// cluster matters at fleet scale: a kubeconfig with a context per cluster
// grows with the fleet, so reading it for each cluster cost the square of
// the cluster count (500 clusters: 2 of the 6 s a run took).
type Kubeconfig struct {
	raw   *clientcmdapi.Config
	rules *clientcmd.ClientConfigLoadingRules
}

// LoadKubeconfig reads an explicit kubeconfig file, or with path empty the
// standard loading rules ($KUBECONFIG, ~/.kube/config).
func LoadKubeconfig(path string) (*Kubeconfig, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules.ExplicitPath = path
	}
	raw, err := rules.Load()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	return &Kubeconfig{raw: raw, rules: rules}, nil
}

// Contexts are the kubeconfig's context names, sorted.
func (k *Kubeconfig) Contexts() []string {
	names := make([]string, 0, len(k.raw.Contexts))
	for name := range k.raw.Contexts {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Has says whether the kubeconfig has a context of that name.
func (k *Kubeconfig) Has(context string) bool {
	_, ok := k.raw.Contexts[context]
	return ok
}

// Client builds a read client for a context, with the gate's scheme. A
// context the kubeconfig lacks is an error, never a fallback to the current
// context.
func (k *Kubeconfig) Client(context string) (client.Client, error) {
	cfg, err := k.RESTConfig(context)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 50, 100
	return newClient(cfg)
}

// RESTConfig is the REST config of a context, by the same rule as Client:
// a context the kubeconfig lacks is an error, never a fallback to the
// current context. Readers that keep their own connection (the dashboard's
// informers) start from it.
func (k *Kubeconfig) RESTConfig(context string) (*rest.Config, error) {
	if !k.Has(context) {
		return nil, fmt.Errorf("context %q is not in the kubeconfig", context)
	}
	cfg, err := clientcmd.NewNonInteractiveClientConfig(*k.raw, context, &clientcmd.ConfigOverrides{}, k.rules).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("context %q: %w", context, err)
	}
	return cfg, nil
}

// ClientFor builds a read client for one context of a kubeconfig file
// (empty: the standard loading rules). To read many contexts, load the
// file once with LoadKubeconfig.
func ClientFor(kubeconfig, context string) (client.Client, error) {
	k, err := LoadKubeconfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	return k.Client(context)
}

func newClient(cfg *rest.Config) (client.Client, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("http client for %s: %w", cfg.Host, err)
	}
	discovered, err := apiutil.NewDynamicRESTMapper(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("rest mapper for %s: %w", cfg.Host, err)
	}
	mapper := meta.FirstHitRESTMapper{MultiRESTMapper: meta.MultiRESTMapper{knownKinds(), discovered}}
	return client.New(cfg, client.Options{Scheme: Scheme(), HTTPClient: hc, Mapper: mapper})
}

// knownKinds maps the kinds the gate reads to their resources without asking
// the cluster. API discovery (a request per API group, on every cluster) was
// the largest cost of checking a cluster after reading the kubeconfig; the
// gate needs none of it, because it knows which versions it reads. A
// cluster that does not serve one of them answers 404 to the read, which
// Observe takes for a missing object, as it took discovery's "no match".
// Kinds outside this list (other callers of ClientFor) fall back to
// discovery.
var knownKinds = sync.OnceValue(func() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	for _, k := range ReadKinds() {
		gvr := k.GVK.GroupVersion().WithResource(k.Resource)
		m.AddSpecific(k.GVK, gvr, gvr, k.scope())
	}
	return m
})

// Scheme holds the typed kinds the gate reads; the rest it reads
// unstructured. It is built once: a scheme is safe for concurrent reads,
// and building one per cluster client cost as much as the client.
var Scheme = sync.OnceValue(func() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = corev1.AddToScheme(s)
	_ = resourcev1.AddToScheme(s)
	_ = v1alpha1.AddToScheme(s)
	return s
})
