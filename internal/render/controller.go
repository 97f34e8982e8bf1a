package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/fluxcd/pkg/apis/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/gpufleet/gpufleet/config"
	"github.com/gpufleet/gpufleet/internal/fleet"
)

// ControllerFile is the file, in the operators step, that holds
// gpufleet-controller's install (several objects, one of them its
// Deployment).
const ControllerFile = "gpufleet-controller.yaml"

// LabelVersion is the label that says which version of a program an
// object belongs to; render sets it on the controller's Deployment and its
// pods, beside the image tag that says the same.
const LabelVersion = "app.kubernetes.io/version"

// controllerRelease is the release whose controller version a cluster
// runs: the release its DriverRollout rolls out (p.rollout), not the one
// its operators run. The two differ only after an abort, and there the
// controller must not go back before the aborted rollout has rolled its
// nodes back: an older controller would take over a rollback whose state a
// newer one wrote. The controller returns to the stable release's version
// when the abort ends (the gate saw every node back), with nothing in flight.
func controllerRelease(p clusterPlan) *fleet.Release { return p.rollout }

// ControllerImage is the image of gpufleet-controller render writes for
// cluster, as fleet.Fleet.ControllerImage spells it ("<[controller]
// image>:<version>", a digest kept where the release pins one, or the
// pinned [controller] image as written); empty where the fleet file names
// no controller version (the controller is installed by hand).
func ControllerImage(f *fleet.Fleet, cluster string) string {
	c := f.Clusters[cluster]
	if c == nil {
		return ""
	}
	return f.ControllerImage(controllerRelease(planFor(f, c)))
}

// gpufleetControllerObjects is gpufleet-controller's install, part of the
// operators step so that it is there, and healthy, before the lifecycle
// step applies a DriverRollout: the CRD, the namespace, the RBAC, the
// Deployment at the release's controller image, the metrics Service, and
// the admission policies (internal/admission) where the cluster's
// Kubernetes serves them. The objects are config/'s own (the generated CRD,
// RBAC and policies), so a rendered install is what `kubectl apply -k
// config/default` installs.
//
// The CRD is never pruned by Flux: deleting it deletes every DriverRollout,
// and with their finalizers gone nothing would hand the nodes back. A fleet
// that stops naming a controller version leaves the CRD in place.
func gpufleetControllerObjects(p clusterPlan) ([]object, error) {
	rel := controllerRelease(p)
	image := p.fleet.ControllerImage(rel)
	if image == "" {
		return nil, nil
	}
	docs, err := installDocs()
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	for _, d := range docs {
		if slices.Contains(config.AdmissionPolicies, d.file) && !p.cluster.ServesAdmissionPolicy() {
			continue
		}
		obj := runtime.DeepCopyJSON(d.obj)
		meta, _ := obj["metadata"].(map[string]any)
		labels, _ := meta["labels"].(map[string]any)
		if labels == nil {
			labels = map[string]any{}
		}
		for k, v := range baseLabels(p) {
			labels[k] = v
		}
		meta["labels"] = labels
		switch obj["kind"] {
		case "CustomResourceDefinition":
			ann := map[string]any{}
			for k, v := range keepOnPrune(p) {
				ann[k] = v
			}
			meta["annotations"] = ann
		case "Deployment":
			// The version label, not the release's: a release that keeps
			// the controller's version leaves its objects unchanged.
			if err := setControllerImage(obj, image, rel.ControllerVersion()); err != nil {
				return nil, err
			}
		}
		b, err := encodeObject(obj)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.file, err)
		}
		if out.Len() > 0 {
			out.WriteString("---\n")
		}
		out.Write(b)
	}
	return []object{{file: ControllerFile, obj: rawManifests(out.Bytes())}}, nil
}

// setControllerImage sets the controller container's image, and the
// version label on the Deployment's pods, so that a new version rolls
// the Deployment.
func setControllerImage(dep map[string]any, image, version string) error {
	spec, _ := dep["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	tmeta, _ := tmpl["metadata"].(map[string]any)
	podSpec, _ := tmpl["spec"].(map[string]any)
	containers, _ := podSpec["containers"].([]any)
	for _, c := range containers {
		c, _ := c.(map[string]any)
		if c["name"] == config.Container {
			c["image"] = image
			if tmeta != nil {
				labels, _ := tmeta["labels"].(map[string]any)
				if labels == nil {
					labels = map[string]any{}
				}
				labels[LabelVersion] = version
				tmeta["labels"] = labels
			}
			dmeta, _ := dep["metadata"].(map[string]any)
			dmeta["labels"].(map[string]any)[LabelVersion] = version
			return nil
		}
	}
	return fmt.Errorf("config/%s has no container %q", "manager/manager.yaml", config.Container)
}

// controllerHealthCheck is the controller's Deployment, as the operators
// step's health checks name it where they are listed (the manifests chart
// mode); nil where render installs no controller.
func controllerHealthCheck(p clusterPlan) []meta.NamespacedObjectKindReference {
	if p.fleet.ControllerImage(controllerRelease(p)) == "" {
		return nil
	}
	return []meta.NamespacedObjectKindReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: config.Deployment, Namespace: config.Namespace}}
}

// installDoc is one object of config/'s install manifests.
type installDoc struct {
	file string
	obj  map[string]any
}

// installDocs are config/'s install manifests as objects, in apply order;
// read once.
var installDocs = sync.OnceValues(func() ([]installDoc, error) {
	var docs []installDoc
	for _, file := range config.Files {
		b, err := config.Install.ReadFile(file)
		if err != nil {
			return nil, err
		}
		for doc := range strings.SplitSeq("\n"+string(b), "\n---\n") {
			j, err := yaml.YAMLToJSON([]byte(doc))
			if err != nil {
				return nil, fmt.Errorf("config/%s: %w", file, err)
			}
			var obj map[string]any
			if err := json.Unmarshal(j, &obj); err != nil {
				return nil, fmt.Errorf("config/%s: %w", file, err)
			}
			if obj == nil {
				continue
			}
			docs = append(docs, installDoc{file: file, obj: obj})
		}
	}
	return docs, nil
})
