package adopt

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/dra"
	"github.com/gpufleet/gpufleet/internal/gate"
)

// Kubeconfig is the gate's kubeconfig, read once: its contexts and a REST
// config for each, by kubectl's loading rules (an explicit file, else
// $KUBECONFIG, else ~/.kube/config), and a context it lacks is an error,
// never the current context instead.
type Kubeconfig = gate.Kubeconfig

// LoadKubeconfig reads path, or with path empty the standard loading rules.
func LoadKubeconfig(path string) (*Kubeconfig, error) { return gate.LoadKubeconfig(path) }

// ReadError is a cluster that could not be read: unreachable, refused,
// timed out, its context missing. init fails closed on it.
type ReadError struct {
	Context string
	Err     error
}

func (e *ReadError) Error() string {
	return fmt.Sprintf("cannot read context %s: %v", e.Context, e.Err)
}
func (e *ReadError) Unwrap() error { return e.Err }

// ReadOptions say which clusters Read reads and how.
type ReadOptions struct {
	Kubeconfig *Kubeconfig
	// Contexts are read; each becomes one Cluster.
	Contexts []string
	// Timeout bounds the reading of each cluster.
	Timeout time.Duration
	// Concurrency is the most clusters read at once (at least 1).
	Concurrency int
}

// Read reads every context's cluster, several at once. It returns the
// clusters in the order of the contexts, or, when any could not be read,
// every ReadError joined (and nothing else: a fleet file of the clusters
// that answered would describe another fleet).
func Read(ctx context.Context, o ReadOptions) ([]Cluster, error) {
	clusters := make([]Cluster, len(o.Contexts))
	errs := make([]error, len(o.Contexts))
	sem := make(chan struct{}, max(o.Concurrency, 1))
	var wg sync.WaitGroup
	for i, name := range o.Contexts {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			cctx, cancel := context.WithTimeout(ctx, o.Timeout)
			defer cancel()
			c, err := readContext(cctx, o.Kubeconfig, name)
			if err != nil {
				errs[i] = &ReadError{Context: name, Err: err}
				return
			}
			clusters[i] = c
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return clusters, nil
}

func readContext(ctx context.Context, k *Kubeconfig, name string) (Cluster, error) {
	cfg, err := k.RESTConfig(name)
	if err != nil {
		return Cluster{}, err
	}
	cfg.QPS, cfg.Burst = 50, 100
	c, err := NewClient(cfg)
	if err != nil {
		return Cluster{}, err
	}
	return ReadCluster(ctx, c, name)
}

// NewClient is a read client with the kinds ReadCluster reads typed.
func NewClient(cfg *rest.Config) (client.Client, error) {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := appsv1.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := resourcev1.AddToScheme(s); err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: s})
}

// The GPU Operator's kinds, read unstructured (their CRDs may be absent:
// a cluster without the operator).
var (
	gvkClusterPolicyList = schema.GroupVersionKind{Group: "nvidia.com", Version: "v1", Kind: "ClusterPolicyList"}
	gvkNVIDIADriverList  = schema.GroupVersionKind{Group: "nvidia.com", Version: "v1alpha1", Kind: "NVIDIADriverList"}
)

// pageSize is how many objects one list request asks for: a cluster of
// thousands of nodes is read in pages, as kubectl does.
const pageSize = 500

// ReadCluster reads what init judges from one cluster through c: the GPU
// nodes (their metadata only, unless the GPU DRA driver publishes slices:
// see gpuNodes) with what those slices say of them, the operators' Deployments in every
// namespace, the record of each operator's Helm release (its values), the
// ClusterPolicies and the NVIDIADrivers. It only reads.
// A kind the cluster does not serve (no GPU Operator CRDs) reads as none;
// any other failure is an error, never a partial Cluster.
func ReadCluster(ctx context.Context, c client.Client, context string) (Cluster, error) {
	out := Cluster{Context: context}
	gpus, err := draNodes(ctx, c)
	if err != nil {
		return out, err
	}
	nodes, err := gpuNodes(ctx, c, gpus)
	if err != nil {
		return out, err
	}
	out.Nodes = nodes
	if out.Deployments, err = operatorDeployments(ctx, c); err != nil {
		return out, err
	}
	if out.Releases, err = operatorReleases(ctx, c, out.Deployments); err != nil {
		return out, err
	}
	if out.ClusterPolicies, err = clusterPolicies(ctx, c); err != nil {
		return out, err
	}
	if out.NVIDIADrivers, err = foreignNVIDIADrivers(ctx, c); err != nil {
		return out, err
	}
	return out, nil
}

// gpuNodes lists the nodes labelled gpu.present=true and those with a GPU
// product (GFD labels a node the operator has not), by label selector, so
// a cluster's CPU nodes are not read at all, and the nodes the GPU DRA
// driver publishes slices for (draNodes), whatever their labels.
//
// Where the cluster has such slices, the nodes are read whole rather than
// their metadata alone: a node's allocatable GPUs say whether the device
// plugin offers them, and a pool of nodes of both kinds is one init
// refuses (mixedAllocation). Without slices there is nothing to tell apart.
func gpuNodes(ctx context.Context, c client.Client, gpus map[string]*dra.Node) ([]Node, error) {
	byName := map[string]Node{}
	for _, sel := range []string{v1alpha1.LabelGPUPresent + "=true", v1alpha1.LabelGFDProduct} {
		selector, err := labels.Parse(sel)
		if err != nil {
			return nil, err
		}
		if len(gpus) > 0 {
			list := &corev1.NodeList{}
			err = listPages(ctx, c, list, func() {
				for _, n := range list.Items {
					byName[n.Name] = wholeNode(&n)
				}
			}, client.MatchingLabelsSelector{Selector: selector})
		} else {
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
			err = listPages(ctx, c, list, func() {
				for _, n := range list.Items {
					byName[n.Name] = Node{Name: n.Name, Labels: n.Labels}
				}
			}, client.MatchingLabelsSelector{Selector: selector})
		}
		if err != nil {
			return nil, fmt.Errorf("list nodes: %w", err)
		}
	}
	// Nodes whose GPUs only DRA hands out may carry neither label: they
	// are read with the rest of the cluster's nodes, in pages, which costs
	// one list however many they are. (A slice may outlive its node for a
	// moment: a node not found is gone.)
	missing := false
	for name := range gpus {
		if _, ok := byName[name]; !ok {
			missing = true
		}
	}
	if missing {
		list := &corev1.NodeList{}
		err := listPages(ctx, c, list, func() {
			for _, n := range list.Items {
				if _, ok := byName[n.Name]; !ok && gpus[n.Name] != nil {
					byName[n.Name] = wholeNode(&n)
				}
			}
		})
		if err != nil {
			return nil, fmt.Errorf("list nodes: %w", err)
		}
	}
	nodes := make([]Node, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		n := byName[name]
		n.DRA = gpus[name]
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// wholeNode is what init keeps of a node read whole.
func wholeNode(n *corev1.Node) Node {
	return Node{Name: n.Name, Labels: n.Labels, DevicePluginGPUs: devicePluginGPUs(n.Status.Allocatable)}
}

// devicePluginGPUs counts the GPUs the device plugin offers on a node:
// whole GPUs (v1alpha1.ResourceGPU, or a share of them renamed
// "nvidia.com/gpu.shared") and MIG devices (nvidia.com/mig-1g.10gb).
func devicePluginGPUs(allocatable corev1.ResourceList) int64 {
	var n int64
	for name, q := range allocatable {
		if r := string(name); r == v1alpha1.ResourceGPU || strings.HasPrefix(r, v1alpha1.ResourceGPU+".") || strings.HasPrefix(r, v1alpha1.ResourceMIGPrefix) {
			n += q.Value()
		}
	}
	return n
}

// draNodes reads the ResourceSlices of NVIDIA's GPU DRA driver
// (v1alpha1.DRADriverGPU), by node. A cluster that does not serve
// resource.k8s.io/v1 (before Kubernetes 1.34, or with DRA off) has none:
// its GPUs are the device plugin's, and it is read as before.
func draNodes(ctx context.Context, c client.Client) (map[string]*dra.Node, error) {
	var all []resourcev1.ResourceSlice
	list := &resourcev1.ResourceSliceList{}
	err := listPages(ctx, c, list, func() { all = append(all, list.Items...) })
	switch {
	case notServed(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("list resourceslices: %w", err)
	}
	return dra.Nodes(all, v1alpha1.DRADriverGPU), nil
}

// operatorDeployments lists the Deployments of every namespace and keeps
// the operators' (see chartOf). A label selector cannot say "helm.sh/chart
// starts with gpu-operator-", so every Deployment is read, a page at a
// time, and only the operators' are kept.
func operatorDeployments(ctx context.Context, c client.Client) ([]Deployment, error) {
	var out []Deployment
	list := &appsv1.DeploymentList{}
	err := listPages(ctx, c, list, func() {
		for _, d := range list.Items {
			dep := Deployment{Namespace: d.Namespace, Name: d.Name, Labels: d.Labels, Annotations: d.Annotations}
			for _, ct := range d.Spec.Template.Spec.Containers {
				dep.Containers = append(dep.Containers, Container{Name: ct.Name, Image: ct.Image})
			}
			if chartOf(dep) != "" {
				out = append(out, dep)
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("list deployments: %w", err)
	}
	slices.SortFunc(out, func(a, b Deployment) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out, nil
}

// operatorReleases reads the Helm release record of each operator
// Deployment's release (see HelmRelease), once per release. A Deployment
// without a valid release name is judged on its own (installOf): there is
// nothing to read for it.
func operatorReleases(ctx context.Context, c client.Client, ds []Deployment) ([]HelmRelease, error) {
	var out []HelmRelease
	seen := map[string]bool{}
	for _, d := range ds {
		namespace, release, err := releaseOf(d)
		if err != nil || !validRelease(release) || seen[namespace+"/"+release] {
			continue
		}
		seen[namespace+"/"+release] = true
		r, err := readHelmRelease(ctx, c, namespace, release)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func clusterPolicies(ctx context.Context, c client.Client) ([]ClusterPolicy, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvkClusterPolicyList)
	if err := c.List(ctx, list); err != nil {
		if notServed(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("list clusterpolicies: %w", err)
	}
	var out []ClusterPolicy
	for _, u := range list.Items {
		cp := ClusterPolicy{Name: u.GetName()}
		cp.UseNVIDIADriverCRD, _, _ = unstructured.NestedBool(u.Object, "spec", "driver", "useNvidiaDriverCRD")
		if enabled, found, _ := unstructured.NestedBool(u.Object, "spec", "driver", "enabled"); found {
			cp.DriverEnabled = &enabled
		}
		cp.DriverVersion, _, _ = unstructured.NestedString(u.Object, "spec", "driver", "version")
		cp.UsePrecompiled, _, _ = unstructured.NestedBool(u.Object, "spec", "driver", "usePrecompiled")
		cp.State, _, _ = unstructured.NestedString(u.Object, "status", "state")
		out = append(out, cp)
	}
	slices.SortFunc(out, func(a, b ClusterPolicy) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func foreignNVIDIADrivers(ctx context.Context, c client.Client) ([]string, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvkNVIDIADriverList)
	if err := c.List(ctx, list); err != nil {
		if notServed(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("list nvidiadrivers: %w", err)
	}
	var out []string
	for _, u := range list.Items {
		if u.GetLabels()[v1alpha1.LabelManagedBy] != v1alpha1.ManagedByGPUFleet {
			out = append(out, u.GetName())
		}
	}
	slices.Sort(out)
	return out, nil
}

// notServed says the cluster does not serve a kind: its CRD is absent.
func notServed(err error) bool {
	return meta.IsNoMatchError(err) || apierrors.IsNotFound(err)
}

// listPages lists in pages of pageSize, calling each after every page
// (list holds that page).
func listPages(ctx context.Context, c client.Client, list client.ObjectList, each func(), opts ...client.ListOption) error {
	cont := ""
	for {
		page := append(slices.Clone(opts), client.Limit(pageSize))
		if cont != "" {
			page = append(page, client.Continue(cont))
		}
		if err := c.List(ctx, list, page...); err != nil {
			return err
		}
		each()
		if cont = list.(metav1.ListInterface).GetContinue(); cont == "" {
			return nil
		}
	}
}
