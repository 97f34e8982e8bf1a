package render

import (
	"path"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/kustomize"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/lint"
)

// The three steps of a cluster, applied in this order.
const (
	stepOperators = "operators"
	stepConfig    = "config"
	stepLifecycle = "lifecycle"
)

const (
	// fluxNamespace holds Flux's own objects and the GitRepository
	// (flux-system, as `flux bootstrap` makes it) that every step applies from.
	fluxNamespace = "flux-system"
	fluxSource    = "flux-system"
	// chartRepository is the HelmRepository both operator charts come from.
	chartRepository = "nvidia"
)

// step says how one cluster step is reconciled. The intervals trade drift
// repair time (on average interval/2 plus apply time) against API load:
// operators change rarely and reinstall slowly; lifecycle carries approvals
// and pauses, which should take effect quickly.
type step struct {
	name      string
	dependsOn string
	interval  time.Duration
	timeout   time.Duration
	// noWait: the step is Ready once applied, without waiting for its
	// objects to be healthy.
	noWait bool
}

var steps = []step{
	// Installing both operators can take minutes (CRDs, NFD, webhooks).
	{name: stepOperators, interval: 10 * time.Minute, timeout: 15 * time.Minute},
	// NVIDIADriver objects need the operator's CRDs and controller first.
	//
	// The step does not wait for its NVIDIADrivers to be healthy: the GPU
	// Operator reports an NVIDIADriver that selects no node "notReady" (no
	// nodes matching the given node selector), and during a rollout one of
	// the two always selects none for a while, the new one before the first
	// node moves and the old one after the last. Waiting would hold the
	// lifecycle step, which moves the nodes, for the whole timeout on every
	// pass: on the real operator a git revert of a finished rollout
	// deadlocked that way. (A CEL health check cannot say "reconciled"
	// either: Flux fails an expression on an object with no status yet,
	// which a new NVIDIADriver is.) Each node's driver pod is judged by the
	// controller as it moves the node, and every NVIDIADriver of the release
	// by `gpufleet gate`.
	{name: stepConfig, dependsOn: stepOperators, interval: 10 * time.Minute, timeout: 5 * time.Minute, noWait: true},
	// A DriverRollout applied before its NVIDIADriver objects would stall.
	{name: stepLifecycle, dependsOn: stepConfig, interval: 2 * time.Minute, timeout: 5 * time.Minute},
}

// operatorHealthChecks are the operators step's health checks in the
// manifests chart mode: each operator's Deployment, in the namespace and
// under the name the cluster's install gives it (Operator.Deployment),
// which the gate judges too.
func operatorHealthChecks(p clusterPlan) []meta.NamespacedObjectKindReference {
	var refs []meta.NamespacedObjectKindReference
	for _, op := range operatorInstalls(p.cluster, p.release) {
		refs = append(refs, meta.NamespacedObjectKindReference{APIVersion: "apps/v1", Kind: "Deployment", Name: op.Deployment, Namespace: op.Namespace})
	}
	return append(refs, controllerHealthCheck(p)...)
}

// noWaitReason is why the config step does not wait, written on it for
// people and for `gpufleet lint` (see steps).
const noWaitReason = "an NVIDIADriver that selects no node is never ready, and during a rollout one always selects none; " +
	"the lifecycle controller judges each node's driver pod, gpufleet gate every NVIDIADriver of the release"

// driverRolloutHealth tells Flux when a DriverRollout is healthy: once the
// controller has taken in its spec, not when the rollout completes. A
// rollout takes hours and waits for approvals and windows; if the lifecycle
// step waited for that, Flux would hold the step for its whole timeout on
// every pass, and the next commit (an approval, a pause, an abort) would
// reach the cluster minutes late. A rollout that will not go on by itself
// fails the step, so Flux alerts on it: Stalled, and CompletedWithFailures
// (finished, with nodes rolled back or quarantined: not on the release's
// driver, whatever the failure budget allowed). The controller sets Stalled
// with the latter too; naming both keeps the step failing if that ever
// changes. `gpufleet gate` checks completion.
var driverRolloutHealth = []kustomize.CustomHealthCheck{{
	APIVersion: "gpufleet.io/v1alpha1",
	Kind:       "DriverRollout",
	HealthCheckExpressions: kustomize.HealthCheckExpressions{
		Current: "has(status.observedGeneration) && status.observedGeneration == metadata.generation",
		Failed:  "has(status.conditions) && status.conditions.exists(c, (c.type == 'Stalled' || c.type == 'CompletedWithFailures') && c.status == 'True')",
	},
}}

// fluxKustomizations are the cluster's three Flux Kustomizations, chained
// by dependsOn, each applying one sub-folder of the cluster's folder.
func fluxKustomizations(p clusterPlan) []object {
	var objs []object
	for _, s := range steps {
		k := &kustomizev1.Kustomization{
			TypeMeta:   metav1.TypeMeta{APIVersion: kustomizev1.GroupVersion.String(), Kind: kustomizev1.KustomizationKind},
			ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: fluxNamespace, Labels: baseLabels(p)},
			Spec: kustomizev1.KustomizationSpec{
				Interval:  metav1.Duration{Duration: s.interval},
				Path:      "./" + path.Join(ClusterDir(p.cluster.Name), s.name),
				Prune:     true,
				Wait:      !s.noWait,
				Timeout:   &metav1.Duration{Duration: s.timeout},
				SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: fluxSource},
			},
		}
		if s.dependsOn != "" {
			k.Spec.DependsOn = []meta.DependencyReference{{Name: s.dependsOn}}
		}
		if s.name == stepLifecycle {
			k.Spec.HealthCheckExprs = driverRolloutHealth
		}
		if s.noWait {
			k.Annotations = map[string]string{lint.AnnotationNoWait: noWaitReason}
		}
		if s.name == stepOperators && p.fleet.Charts.Mode == fleet.ModeManifests {
			// The pre-rendered charts hold the operands' DaemonSets too (NFD's
			// worker on every node): waiting for all their objects would make
			// one NotReady node hold the whole chain, the driver rollout
			// included, for the step's timeout (seen on the real operator).
			// The step is healthy when the operators themselves run; the
			// operands are the operators' to reconcile and the gate's to judge.
			k.Spec.Wait = false
			k.Spec.HealthChecks = operatorHealthChecks(p)
		}
		objs = append(objs, object{file: "flux-" + s.name + ".yaml", obj: k})
	}
	return objs
}

// fluxRenderer renders for Flux: a Kustomization per step, chained by
// dependsOn, in the cluster's folder (fluxKustomizations).
type fluxRenderer struct{}

// prepareStep: Flux applies the steps' objects as they are.
func (fluxRenderer) prepareStep(clusterPlan, string, []object) error { return nil }

func (fluxRenderer) addApplyObjects(p clusterPlan, files map[string][]byte) error {
	return addFolder(files, ClusterDir(p.cluster.Name), append(fluxKustomizations(p), stackKustomizations(p)...))
}

// stackFiles: the serving stack's Kustomizations, and the folder's
// kustomization.yaml that lists them beside the steps'.
func (fluxRenderer) stackFiles(p clusterPlan) []string {
	files := []string{"kustomization.yaml"}
	for _, o := range stackKustomizations(p) {
		files = append(files, o.file)
	}
	return files
}

func (fluxRenderer) keepOnPrune() map[string]string {
	return map[string]string{kustomizePrune: kustomizePruneDisabled}
}

// baseLabels mark every object render writes for a cluster. The release is
// not among them: a promotion then changes only the objects whose content
// changes, and a pull request shows just those.
func baseLabels(p clusterPlan) map[string]string {
	return map[string]string{
		v1alpha1.LabelManagedBy: v1alpha1.ManagedByGPUFleet,
		"gpufleet.io/cluster":   p.cluster.Name,
	}
}

// releaseLabels add the release to the objects that carry its versions (the
// HelmReleases), so `kubectl get -l gpufleet.io/release=...` finds them.
func releaseLabels(p clusterPlan, release string) map[string]string {
	l := baseLabels(p)
	l["gpufleet.io/release"] = release
	return l
}

// operatorObjects is the operators step: the operators at the release's
// versions (operatorHelmReleases, or operatorManifests in the manifests
// chart mode) and gpufleet-controller's install (gpufleetControllerObjects).
//
// In the helmrelease chart mode: the chart repository, a namespace per
// operator and a HelmRelease per operator.
//
// An adopted install (Operator.Adopted) gets its HelmRelease in the
// namespace it was found in, with spec.releaseName naming the release it
// was installed as, so helm-controller upgrades that release in place
// (its storage is the HelmRelease's namespace) rather than installing a
// second operator beside it; the object keeps the chart's name.
func operatorObjects(p clusterPlan) ([]object, error) {
	ctrl, err := gpufleetControllerObjects(p)
	if err != nil {
		return nil, err
	}
	var objs []object
	if p.fleet.Charts.Mode == fleet.ModeManifests {
		objs, err = operatorManifests(p)
	} else {
		objs, err = operatorHelmReleases(p)
	}
	return append(objs, ctrl...), err
}

// operatorHelmReleases are the operators step's chart repository,
// namespaces and HelmReleases (the helmrelease chart mode).
func operatorHelmReleases(p clusterPlan) ([]object, error) {
	repo := &sourcev1.HelmRepository{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.HelmRepositoryKind},
		ObjectMeta: metav1.ObjectMeta{Name: chartRepository, Namespace: fluxNamespace, Labels: baseLabels(p)},
		Spec: sourcev1.HelmRepositorySpec{
			URL:      p.fleet.Charts.Repository,
			Interval: metav1.Duration{Duration: time.Hour},
		},
	}
	if strings.HasPrefix(p.fleet.Charts.Repository, "oci://") {
		repo.Spec.Type = sourcev1.HelmRepositoryTypeOCI
	}
	ops := operators(p)
	objs := []object{{file: "helmrepository.yaml", obj: repo}}
	objs = append(objs, namespaceObjects(p, ops)...)
	for _, op := range ops {
		values, err := jsonValues(op.values)
		if err != nil {
			return nil, err
		}
		releaseName := ""
		if op.Adopted {
			releaseName = op.Release
		}
		objs = append(objs,
			object{file: "helmrelease-" + op.Chart + ".yaml", obj: &helmv2.HelmRelease{
				TypeMeta:   metav1.TypeMeta{APIVersion: helmv2.GroupVersion.String(), Kind: helmv2.HelmReleaseKind},
				ObjectMeta: metav1.ObjectMeta{Name: op.Chart, Namespace: op.Namespace, Labels: releaseLabels(p, p.release.Name)},
				Spec: helmv2.HelmReleaseSpec{
					ReleaseName: releaseName,
					Interval:    metav1.Duration{Duration: 30 * time.Minute},
					Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
						Chart:     op.Chart,
						Version:   op.Version,
						SourceRef: helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: chartRepository, Namespace: fluxNamespace},
					}},
					Timeout: &metav1.Duration{Duration: 10 * time.Minute},
					// The operators' CRDs change between versions (see
					// `gpufleet crd-diff`): keep them in step with the chart.
					Install: &helmv2.Install{CRDs: helmv2.CreateReplace, Remediation: &helmv2.InstallRemediation{Retries: 3}},
					Upgrade: &helmv2.Upgrade{CRDs: helmv2.CreateReplace, Remediation: &helmv2.UpgradeRemediation{Retries: 3}},
					Values:  values,
				},
			}},
		)
	}
	return objs, nil
}

// operator is one operator chart as a cluster installs it, with its values.
type operator struct {
	Operator
	values map[string]any
}

// Namespaces the operators are installed into by default, as NVIDIA's docs
// name them. A cluster's own install may say otherwise: see Operators.
const (
	GPUOperatorNamespace     = fleet.DefaultGPUOperatorNamespace
	NetworkOperatorNamespace = fleet.DefaultNetworkOperatorNamespace
)

// operators are the operators of p's cluster at its release, with their
// values (the cluster's own, gpufleet's merged over them): the Network
// Operator only when the release has one.
func operators(p clusterPlan) []operator {
	var ops []operator
	for _, op := range operatorInstalls(p.cluster, p.release) {
		o := operator{Operator: op}
		switch op.Chart {
		case GPUOperatorChart:
			o.values = gpuChartValues(p, p.release, p.movesDriver())
		case NetworkOperatorChart:
			o.values = networkChartValues(p.cluster, p.release)
		}
		ops = append(ops, o)
	}
	return ops
}

func jsonValues(v map[string]any) (*apiextensionsv1.JSON, error) {
	b, err := jsonMarshal(v)
	if err != nil {
		return nil, err
	}
	return &apiextensionsv1.JSON{Raw: b}, nil
}

// operatorManifests is the operators step in the "manifests" chart mode:
// each chart rendered to plain objects with the values a HelmRelease would
// use, so a pull request shows every object a release changes.
//
// Each chart is rendered as the cluster's install names its release and
// namespace: object names in the charts and their subcharts follow the
// release name, so an adopted install keeps the objects it runs.
func operatorManifests(p clusterPlan) ([]object, error) {
	ops := operators(p)
	objs := namespaceObjects(p, ops)
	for _, op := range ops {
		b, err := p.charts.RenderChart(op.Chart, op.Version, op.Release, op.Namespace, op.values)
		if err != nil {
			return nil, err
		}
		objs = append(objs, object{file: op.Chart + "-" + op.Version + ".yaml", obj: rawManifests(b)})
	}
	return objs, nil
}

// namespaceObjects are the operators' namespaces, each once (two adopted
// operators may share one), each in its own file.
//
// The namespace of an adopted install existed before gpufleet and holds
// more than what gpufleet writes (the Helm release's storage, objects of
// the operator's own): Flux is told never to prune it, so a fleet file that
// stops naming it, or a release without that operator, does not delete
// the namespace and everything in it.
func namespaceObjects(p clusterPlan, ops []operator) []object {
	var objs []object
	seen := map[string]bool{}
	for _, op := range ops {
		if seen[op.Namespace] {
			continue
		}
		seen[op.Namespace] = true
		ns := &corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: op.Namespace, Labels: baseLabels(p)},
		}
		if op.Adopted {
			ns.Annotations = keepOnPrune(p)
		}
		objs = append(objs, object{file: "namespace-" + op.Namespace + ".yaml", obj: ns})
	}
	return objs
}

// kustomize-controller's annotation that keeps an object it applied from
// being pruned once the source no longer has it.
const (
	kustomizePrune         = "kustomize.toolkit.fluxcd.io/prune"
	kustomizePruneDisabled = "disabled"
)
