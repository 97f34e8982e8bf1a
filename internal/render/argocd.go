package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpufleet/gpufleet/internal/crdcheck"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gitops"
)

// A cluster on Argo CD (gitops.ArgoCD, rendered by argoCDRenderer) gets
// the same three steps as on Flux, ordered in Argo CD's terms.
//
// Why one Application with sync waves, not an Application per step: Argo
// CD has no dependsOn between Applications. Child Applications under a
// parent are ordered only while the parent syncs them; afterwards each
// child syncs on its own, so a commit that changes a release's
// NVIDIADrivers and its DriverRollout would reach them in either order,
// and the DriverRollout could act before its NVIDIADrivers exist. Sync
// waves inside one Application order every sync: Argo CD applies wave 0
// (the operators), waits until what it applied is healthy, then wave 1
// (the NVIDIADrivers), then wave 2 (the DriverRollout) — what dependsOn
// and the Kustomizations' health checks do on Flux.
//
// What a wave waits for is what each kind's health says (argoHealthChecks):
// the same as the Flux steps wait for, and no more. In particular nothing a
// cluster can leave unready for hours (an NVIDIADriver that selects no
// node, a ClusterPolicy whose operands wait for a NotReady node) holds a
// sync: Argo CD runs one sync at a time, so a sync held in a wave would
// hold every later commit of the cluster, an abort among them. The gate
// judges readiness, as on Flux.
//
// The layout, per cluster:
//
//	clusters/<name>/kustomization.yaml       the three steps: what Application gpu-stack applies
//	clusters/<name>/{operators,config,lifecycle}/
//	clusters/<name>/argocd/                  what Application gpufleet applies:
//	    application-gpufleet.yaml            itself (the one object applied by hand: `gpufleet bootstrap`)
//	    application-gpu-stack.yaml           the steps, by sync waves
//	    appproject-gpufleet.yaml             what gpu-stack may read and write
//	    repository-gpufleet.yaml             the fleet repository (credentials are added beside it by hand)
//	    argocd-cm.yaml                       the health checks (server-side applied: only these keys)
const (
	// ArgoCDNamespace is where Argo CD runs and its Applications live (the
	// namespace its install manifests use).
	ArgoCDNamespace = "argocd"
	// ArgoCDRootApp is the Application a person applies by hand (what `flux
	// bootstrap` is to Flux); it applies the cluster's argocd/ folder,
	// itself included.
	ArgoCDRootApp = "gpufleet"
	// ArgoCDStackApp is the Application of the three steps.
	ArgoCDStackApp = "gpu-stack"
	// argoProject is the AppProject of ArgoCDStackApp.
	argoProject = "gpufleet"
	// ArgoCDDir is the cluster's folder of Argo CD objects.
	ArgoCDDir = "argocd"
	// argoInCluster is the API server of the cluster Argo CD runs in.
	argoInCluster = "https://kubernetes.default.svc"

	annotationSyncWave    = "argocd.argoproj.io/sync-wave"
	annotationSyncOptions = "argocd.argoproj.io/sync-options"
	// annotationIgnoreHealth leaves an object's health out of its
	// Application's (it is still waited for when a sync applies it).
	annotationIgnoreHealth = "argocd.argoproj.io/ignore-healthcheck"
	argoAPIVersion         = "argoproj.io/v1alpha1"
)

// ArgoCDApps are the Applications render writes for a cluster on Argo CD,
// in the order they apply: the gate checks each.
func ArgoCDApps() []string { return []string{ArgoCDRootApp, ArgoCDStackApp} }

// argoWaves are the sync waves of the steps: operators, then config, then
// lifecycle (see the top of this file).
var argoWaves = map[string]string{stepOperators: "0", stepConfig: "1", stepLifecycle: "2"}

// argoCDRenderer renders for Argo CD: the steps by sync waves, applied by
// Application gpu-stack, and the cluster's argocd/ folder (see the top
// of this file).
type argoCDRenderer struct{}

func (argoCDRenderer) prepareStep(p clusterPlan, step string, objs []object) error {
	return inArgoWave(p, step, objs)
}

func (argoCDRenderer) addApplyObjects(p clusterPlan, files map[string][]byte) error {
	// The cluster's folder is the steps, which Application gpu-stack
	// applies; argocd/ holds the Applications.
	dir := ClusterDir(p.cluster.Name)
	if err := addFolderWithExtra(files, dir, nil, []string{stepOperators, stepConfig, stepLifecycle}); err != nil {
		return err
	}
	return addFolder(files, path.Join(dir, ArgoCDDir), argoCDObjects(p))
}

// stackFiles: none. Application gpu-stack applies the folder's
// kustomization.yaml: it lists the three steps and nothing else (a
// cluster on Argo CD has no serving stack).
func (argoCDRenderer) stackFiles(clusterPlan) []string { return nil }

func (argoCDRenderer) keepOnPrune() map[string]string {
	return map[string]string{annotationSyncOptions: "Prune=false"}
}

// inArgoWave readies the objects of a step for Argo CD: each object of
// the config and lifecycle steps gets the step's sync wave; the operators
// step (wave 0, no annotation) has its health left out of the
// Application's where the Flux step does not wait for it (argoHealthOf).
func inArgoWave(p clusterPlan, step string, objs []object) error {
	wave := argoWaves[step]
	for i, o := range objs {
		if wave == "0" {
			if raw, ok := o.obj.(rawManifests); ok {
				b, err := argoHealthOf(p, raw)
				if err != nil {
					return fmt.Errorf("%s: %w", o.file, err)
				}
				objs[i].obj = b
			}
			continue
		}
		if err := setAnnotation(o.obj, annotationSyncWave, wave); err != nil {
			return fmt.Errorf("%s: %w", o.file, err)
		}
	}
	return nil
}

// argoHealthOf marks each object of pre-rendered manifests whose health
// the Flux operators step does not wait for (everything but the operators'
// Deployments and gpufleet-controller's: operatorHealthChecks) with
// Argo CD's ignore-healthcheck, so that the Application is Healthy when
// that step would be Ready. The charts hold NFD's DaemonSets: one NotReady
// node keeps them Progressing for as long as it is down, and an Application
// unhealthy for that would fail the gate where a Flux cluster passes it
// (the node checks say what is wrong with the node).
//
// The objects are written back as render writes its own (sorted keys,
// without the charts' "# Source:" comments).
func argoHealthOf(p clusterPlan, raw rawManifests) (rawManifests, error) {
	waited := map[string]bool{}
	for _, ref := range operatorHealthChecks(p) {
		waited[ref.Kind+"/"+ref.Namespace+"/"+ref.Name] = true
	}
	docs, err := crdcheck.SplitYAML(raw)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	for _, j := range docs {
		var obj map[string]any
		if err := json.Unmarshal(j, &obj); err != nil {
			return nil, err
		}
		u := unstructured.Unstructured{Object: obj}
		if !waited[u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName()] {
			if err := setAnnotation(obj, annotationIgnoreHealth, "true"); err != nil {
				return nil, err
			}
		}
		b, err := encodeObject(obj)
		if err != nil {
			return nil, err
		}
		if out.Len() > 0 {
			out.WriteString("---\n")
		}
		out.Write(b)
	}
	return rawManifests(out.Bytes()), nil
}

// setAnnotation sets an annotation on an object render built, typed or a
// JSON map.
func setAnnotation(obj any, key, value string) error {
	switch o := obj.(type) {
	case metav1.Object:
		a := o.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a[key] = value
		o.SetAnnotations(a)
	case map[string]any:
		annotateMap(o, key, value)
	default:
		return fmt.Errorf("cannot annotate a %T for Argo CD's sync waves", obj)
	}
	return nil
}

// annotateMap sets an annotation on an object render built as a JSON map.
func annotateMap(obj map[string]any, key, value string) {
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		obj["metadata"] = meta
	}
	a, _ := meta["annotations"].(map[string]any)
	if a == nil {
		a = map[string]any{}
		meta["annotations"] = a
	}
	a[key] = value
}

// argoApplication is an Application of p's cluster applying folder source
// of the fleet repository, in project, with syncOptions.
func argoApplication(p clusterPlan, name, project, source string, syncOptions []string) map[string]any {
	g := p.fleet.GitOps
	return map[string]any{
		"apiVersion": argoAPIVersion,
		"kind":       "Application",
		// No resources-finalizer: deleting an Application must never
		// delete the GPU Operator and every driver with it.
		"metadata": map[string]any{"name": name, "namespace": ArgoCDNamespace, "labels": baseLabels(p)},
		"spec": map[string]any{
			"project": project,
			"source": map[string]any{
				"repoURL":        g.Repository,
				"targetRevision": g.Branch,
				"path":           source,
			},
			"destination": map[string]any{"server": argoInCluster},
			"syncPolicy": map[string]any{
				// Automated, pruning and repairing drift: what a Flux
				// Kustomization with prune does on every interval.
				"automated":   map[string]any{"prune": true, "selfHeal": true},
				"syncOptions": syncOptions,
				// A sync that failed is tried again for as long as it
				// fails, as Flux retries a step at every interval, and
				// each try takes the branch's latest commit (refresh):
				// the commit that fixes it, or an abort, is applied at
				// the next try, at most a minute later, not after the
				// retries run out. (Without a retry policy Argo CD
				// gives up after five tries and waits for a commit.)
				"retry": map[string]any{
					"limit":   -1,
					"refresh": true,
					"backoff": map[string]any{"duration": "5s", "factor": 2, "maxDuration": "1m"},
				},
			},
		},
	}
}

// rootApplication is the cluster's root Application: it applies the
// cluster's argocd/ folder, itself included. It is in the project every
// Argo CD install has, since gpufleet's own comes with it.
func rootApplication(p clusterPlan) map[string]any {
	return argoApplication(p, ArgoCDRootApp, "default", path.Join(ClusterDir(p.cluster.Name), ArgoCDDir), []string{"PruneLast=true"})
}

// argoCDObjects are the objects of the cluster's argocd/ folder.
func argoCDObjects(p clusterPlan) []object {
	g := p.fleet.GitOps
	dir := ClusterDir(p.cluster.Name)
	labels := baseLabels(p)
	root := rootApplication(p)
	stack := argoApplication(p, ArgoCDStackApp, argoProject, dir, []string{
		// Server-side apply, as Flux's kustomize-controller applies: no
		// last-applied annotation (the GPU Operator's CRDs are too large
		// for one), fields others own left to them, and Argo CD diffs on
		// the server (defaults are not drift).
		"ServerSideApply=true",
		// Only what a commit changed is applied, and only that is waited
		// for: an approval or an abort (the DriverRollout alone) never
		// waits on the operators' health.
		"ApplyOutOfSyncOnly=true",
		// Deletions after every wave is applied, as Flux prunes after it
		// applies: a revert's DriverRollout retargets before the
		// NVIDIADriver it leaves is deleted.
		"PruneLast=true",
		// Deleted at once, what they own by the garbage collector after,
		// as Flux deletes: Argo CD's default, foreground deletion, would
		// hold the sync until a pruned NVIDIADriver's driver pods are gone,
		// forever for a pod on a node that is down, and every later commit
		// (an abort among them) behind it.
		"PrunePropagationPolicy=background",
	})
	// The root is applied first by hand, then by itself; its children
	// after the project and the health checks they need.
	annotateMap(stack, annotationSyncWave, "1")
	project := map[string]any{
		"apiVersion": argoAPIVersion,
		"kind":       "AppProject",
		"metadata": map[string]any{
			"name": argoProject, "namespace": ArgoCDNamespace, "labels": labels,
			"annotations": map[string]any{annotationSyncWave: "-1"},
		},
		"spec": map[string]any{
			"description": "gpufleet: the GPU stack of cluster " + p.cluster.Name + " (operators, NVIDIADrivers, DriverRollout)",
			"sourceRepos": []any{g.Repository},
			"destinations": []any{
				map[string]any{"server": argoInCluster, "namespace": "*"},
			},
			// The operators' charts hold cluster-scoped objects (CRDs,
			// ClusterRoles, webhooks); gpufleet-controller's install too.
			"clusterResourceWhitelist": []any{map[string]any{"group": "*", "kind": "*"}},
		},
	}
	repoLabels := baseLabels(p)
	repoLabels["argocd.argoproj.io/secret-type"] = "repository"
	repo := &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "gpufleet-repository", Namespace: ArgoCDNamespace,
			Labels:      repoLabels,
			Annotations: map[string]string{annotationSyncWave: "-1"},
		},
		// The URL alone: credentials never go into the fleet repository
		// in plain text (see docs/render-output.md, Argo CD clusters).
		StringData: map[string]string{"type": "git", "url": g.Repository},
	}
	health := &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "argocd-cm", Namespace: ArgoCDNamespace,
			Labels: map[string]string{"app.kubernetes.io/part-of": "argocd"},
			// Server-side applied: gpufleet owns these keys alone, and the
			// rest of Argo CD's configuration stays whoever's it is. Never
			// pruned: Argo CD cannot run without its argocd-cm.
			Annotations: map[string]string{annotationSyncOptions: "ServerSideApply=true,Prune=false", annotationSyncWave: "-1"},
		},
		Data: argoHealthChecks(),
	}
	return []object{
		{file: "application-" + ArgoCDRootApp + ".yaml", obj: root},
		{file: "application-" + ArgoCDStackApp + ".yaml", obj: stack},
		{file: "appproject-" + argoProject + ".yaml", obj: project},
		{file: "repository-gpufleet.yaml", obj: repo},
		{file: "argocd-cm.yaml", obj: health},
	}
}

// ArgoCDBootstrap is the path of the one file a person applies by hand to
// put cluster under Argo CD (`kubectl apply -f`): the root Application.
func ArgoCDBootstrap(cluster string) string {
	return path.Join(ClusterDir(cluster), ArgoCDDir, "application-"+ArgoCDRootApp+".yaml")
}

// ArgoCDRootApplication is the file at ArgoCDBootstrap(cluster), as render
// writes it, for `gpufleet bootstrap` to print: it needs no chart.
func ArgoCDRootApplication(f *fleet.Fleet, cluster string) ([]byte, error) {
	c := f.Clusters[cluster]
	if c == nil {
		return nil, fmt.Errorf("no cluster %q", cluster)
	}
	if f.EngineFor(cluster) != gitops.ArgoCD {
		return nil, fmt.Errorf("cluster %s is on %s, not on Argo CD", cluster, f.EngineFor(cluster))
	}
	b, err := encodeObject(rootApplication(planFor(f, c)))
	if err != nil {
		return nil, err
	}
	return append([]byte(Header), b...), nil
}

// argoHealthChecks are Argo CD's health checks (Lua, argocd-cm keys
// resource.customizations.health.<group>_<kind>) for the objects a wave
// waits on that Argo CD does not know. They say what the Flux steps' health
// checks say:
//
//   - DriverRollout: healthy once gpufleet-controller has taken its spec
//     in (observedGeneration), not when the rollout completes — a rollout
//     takes hours and waits for approvals; degraded when Stalled or
//     CompletedWithFailures, so Argo CD shows the cluster degraded as Flux
//     fails its lifecycle step (see driverRolloutHealth).
//   - NVIDIADriver and ClusterPolicy: progressing until the GPU Operator
//     has reconciled them once (status.state), then healthy, their state in
//     the message: during a rollout one NVIDIADriver always selects no node
//     (notReady by the operator's rule), and a ClusterPolicy waits for every
//     node's operands; a wave waiting on either would hold every later sync
//     (see the top of this file). gpufleet gate judges their readiness.
func argoHealthChecks() map[string]string {
	const prefix = "resource.customizations.health."
	return map[string]string{
		prefix + "gpufleet.io_DriverRollout": strings.TrimSpace(`
hs = {}
if obj.status == nil or obj.status.observedGeneration == nil or obj.status.observedGeneration ~= obj.metadata.generation then
  hs.status = "Progressing"
  hs.message = "waiting for gpufleet-controller to take the spec in"
  return hs
end
if obj.status.conditions ~= nil then
  for _, c in ipairs(obj.status.conditions) do
    if (c.type == "Stalled" or c.type == "CompletedWithFailures") and c.status == "True" then
      hs.status = "Degraded"
      hs.message = c.type .. ": " .. (c.message or "")
      return hs
    end
  end
end
hs.status = "Healthy"
hs.message = "phase " .. (obj.status.phase or "Pending")
return hs`),
		prefix + "nvidia.com_NVIDIADriver":  operatorStateHealth,
		prefix + "nvidia.com_ClusterPolicy": operatorStateHealth,
	}
}

// operatorStateHealth is the health check of the GPU Operator's objects
// with a status.state (see argoHealthChecks).
var operatorStateHealth = strings.TrimSpace(`
hs = {}
if obj.status == nil or obj.status.state == nil or obj.status.state == "" then
  hs.status = "Progressing"
  hs.message = "waiting for the GPU Operator to reconcile it"
  return hs
end
hs.status = "Healthy"
hs.message = "state " .. obj.status.state
if obj.status.state ~= "ready" and obj.status.conditions ~= nil then
  for _, c in ipairs(obj.status.conditions) do
    if c.status == "True" and c.type ~= "Ready" and c.message ~= nil and c.message ~= "" then
      hs.message = hs.message .. ": " .. c.message
    end
  end
end
return hs`)
