package render

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// TestOneDriverRolloutPerCluster: render never writes two DriverRollouts
// that select the same node. Each cluster gets exactly one, over all its
// GPU nodes, in its lifecycle folder; a release change renames it, and the
// controller hands the nodes from the old one to the new one as Flux
// prunes the old (see api/v1alpha1.LabelRollout).
func TestOneDriverRolloutPerCluster(t *testing.T) {
	out := renderFile(t, exampleFleet)
	perCluster := map[string][]*v1alpha1.DriverRollout{}
	for path, b := range out.Files {
		for doc := range strings.SplitSeq(string(b), "\n---\n") {
			if !strings.Contains(doc, "kind: DriverRollout") {
				continue
			}
			ro := &v1alpha1.DriverRollout{}
			if err := yaml.Unmarshal([]byte(doc), ro); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if ro.Kind != v1alpha1.KindDriverRollout {
				continue
			}
			parts := strings.Split(path, "/")
			if len(parts) < 3 || parts[0] != "clusters" {
				t.Errorf("DriverRollout %s written outside a cluster's folder: %s", ro.Name, path)
				continue
			}
			perCluster[parts[1]] = append(perCluster[parts[1]], ro)
		}
	}
	if len(perCluster) == 0 {
		t.Fatal("no DriverRollout rendered")
	}
	gpuNode := labels.Set{v1alpha1.LabelGPUPresent: "true"}
	for cluster, ros := range perCluster {
		if len(ros) != 1 {
			t.Errorf("cluster %s: %d DriverRollouts, want one: two would select the same nodes", cluster, len(ros))
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(&ros[0].Spec.NodeSelector)
		if err != nil || sel.Empty() || !sel.Matches(gpuNode) {
			t.Errorf("cluster %s: DriverRollout %s selects %v, want every GPU node", cluster, ros[0].Name, ros[0].Spec.NodeSelector)
		}
	}
}
