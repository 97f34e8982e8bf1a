package render_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpufleet/gpufleet/internal/charts"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/render"
	"github.com/gpufleet/gpufleet/internal/testworld/sharedtest"
)

// TestAdoptedClusterPolicyRealCharts renders a cluster adopted with its
// driver managed by the ClusterPolicy at every GPU Operator version of
// ../shared/operators (v24.6.2 … v26.7.0), with the real chart, in the
// manifests mode: the ClusterPolicy stays in ClusterPolicy mode at the
// release's driver with the operator's automatic upgrade off at rest, and
// every object lives where the adopted release does and is named for it
// (the operator's Deployment gpu-operator, labelled with the release; the
// Node Feature Discovery subchart's objects carry the release's name).
func TestAdoptedClusterPolicyRealCharts(t *testing.T) {
	ops := sharedtest.Operators(t)
	gpuVersions := versionsIn(t, filepath.Join(ops, "gpu-operator"))
	netVersions := versionsIn(t, filepath.Join(ops, "network-operator"))
	src := &charts.FolderSource{Dir: ops}
	ctx := t.Context()
	for i, gpu := range gpuVersions {
		net := netVersions[min(i, len(netVersions)-1)]
		t.Run(gpu, func(t *testing.T) {
			f, err := fleet.Parse("fleet.toml", []byte(fmt.Sprintf(applyFleet, gpu, net, gpu, net)+applyAdoptedClusterPolicy))
			if err != nil {
				t.Fatal(err)
			}
			var policy, deployment *unstructured.Unstructured
			releaseNamed := 0
			for _, o := range renderedSteps(ctx, t, f, src) {
				switch {
				case o.GetKind() == "ClusterPolicy":
					policy = o
				case o.GetKind() == "Deployment" && o.GetName() == "gpu-operator":
					deployment = o
				case o.GetKind() == "NVIDIADriver":
					t.Errorf("NVIDIADriver %s rendered for a ClusterPolicy-managed cluster", o.GetName())
				}
				if ns := o.GetNamespace(); ns != "" && ns != "nvidia-gpu-operator" && ns != render.NetworkOperatorNamespace {
					t.Errorf("%s %s in namespace %s, not the adopted release's", o.GetKind(), o.GetName(), ns)
				}
				if strings.HasPrefix(o.GetName(), "gpu-operator-1712345678-") {
					releaseNamed++
				}
			}
			if policy == nil || deployment == nil {
				t.Fatalf("ClusterPolicy %v, operator Deployment %v", policy != nil, deployment != nil)
			}
			driver, _, _ := unstructured.NestedMap(policy.Object, "spec", "driver")
			if driver["useNvidiaDriverCRD"] != false || driver["version"] != "580.95.05" {
				t.Errorf("ClusterPolicy driver: useNvidiaDriverCRD %v version %v; want ClusterPolicy mode at 580.95.05", driver["useNvidiaDriverCRD"], driver["version"])
			}
			if up, _ := driver["upgradePolicy"].(map[string]any); up["autoUpgrade"] != false {
				t.Errorf("ClusterPolicy upgradePolicy %v: want autoUpgrade off at rest", driver["upgradePolicy"])
			}
			if deployment.GetNamespace() != "nvidia-gpu-operator" || deployment.GetLabels()["app.kubernetes.io/instance"] != "gpu-operator-1712345678" {
				t.Errorf("operator Deployment %s/%s labels %v", deployment.GetNamespace(), deployment.GetName(), deployment.GetLabels())
			}
			if releaseNamed == 0 {
				t.Error("no object named after the adopted release (the NFD subchart's should be)")
			}
		})
	}
}

// TestAdoptedValuesRealCharts renders a cluster adopted with its releases'
// own values at every operator version of ../shared/operators, with the
// real charts, in the manifests mode: what the team set reaches the
// objects (the ClusterPolicy's driver pulls from the mirror, with RDMA, and
// runs no toolkit; no NodeFeatureRule), and gpufleet's own values still
// hold beside them (ClusterPolicy mode at the release's driver).
func TestAdoptedValuesRealCharts(t *testing.T) {
	ops := sharedtest.Operators(t)
	gpuVersions := versionsIn(t, filepath.Join(ops, "gpu-operator"))
	netVersions := versionsIn(t, filepath.Join(ops, "network-operator"))
	src := &charts.FolderSource{Dir: ops}
	ctx := t.Context()
	const adopted = `
[clusters.stg.gpu-operator]
release = "gpu-operator-1712345678"
namespace = "nvidia-gpu-operator"
driver-management = "clusterpolicy"
values = '''
driver:
  repository: registry.example.com/nvidia
  rdma:
    enabled: true
toolkit:
  enabled: false
'''

[clusters.stg.network-operator]
values = '''
nfd:
  deployNodeFeatureRules: false
'''

[policy]
actuator = "gpu-operator"
`
	for i, gpu := range gpuVersions {
		net := netVersions[min(i, len(netVersions)-1)]
		t.Run(gpu, func(t *testing.T) {
			f, err := fleet.Parse("fleet.toml", []byte(fmt.Sprintf(applyFleet, gpu, net, gpu, net)+adopted))
			if err != nil {
				t.Fatal(err)
			}
			var policy *unstructured.Unstructured
			for _, o := range renderedSteps(ctx, t, f, src) {
				switch o.GetKind() {
				case "ClusterPolicy":
					policy = o
				case "NodeFeatureRule":
					if o.GetNamespace() == render.NetworkOperatorNamespace {
						t.Errorf("NodeFeatureRule %s rendered, yet the Network Operator's values turn them off", o.GetName())
					}
				}
			}
			if policy == nil {
				t.Fatal("no ClusterPolicy")
			}
			driver, _, _ := unstructured.NestedMap(policy.Object, "spec", "driver")
			rdma, _ := driver["rdma"].(map[string]any)
			if driver["repository"] != "registry.example.com/nvidia" || rdma["enabled"] != true {
				t.Errorf("ClusterPolicy driver repository %v rdma %v: the release's own values are lost", driver["repository"], driver["rdma"])
			}
			if toolkit, _, _ := unstructured.NestedBool(policy.Object, "spec", "toolkit", "enabled"); toolkit {
				t.Error("ClusterPolicy toolkit enabled: the release's toolkit.enabled=false is lost")
			}
			if driver["useNvidiaDriverCRD"] != false || driver["version"] != "580.95.05" {
				t.Errorf("ClusterPolicy driver: useNvidiaDriverCRD %v version %v; want gpufleet's ClusterPolicy mode at 580.95.05", driver["useNvidiaDriverCRD"], driver["version"])
			}
		})
	}
}
