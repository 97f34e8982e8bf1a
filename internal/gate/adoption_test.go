package gate

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
)

// TestAdoptionOf: where a cluster stands in coming under gpufleet, counted
// over its pools' GPU nodes by the rule of its actuator (held with the
// skip label or released on the operator's, labelled on gpufleet's), with
// who runs the driver by the fleet file and by the ClusterPolicy.
func TestAdoptionOf(t *testing.T) {
	for _, tt := range []struct {
		name, cluster string
		break_        func(o *Observed)
		want          Adoption
	}{
		{"ClusterPolicy mode, every node held", "cp", func(*Observed) {},
			Adoption{DriverManagement: "clusterpolicy", LiveDriverManagement: "clusterpolicy", By: AdoptedHeld, Under: 4, Nodes: 4}},
		{"a node not held, one released", "cp", func(o *Observed) {
			delete(o.Nodes[0].Labels, v1alpha1.LabelOperatorUpgradeSkip)
			delete(o.Nodes[1].Labels, v1alpha1.LabelOperatorUpgradeSkip)
			o.Nodes[1].Labels[v1alpha1.LabelPhase] = string(v1alpha1.NodeInstalling)
		}, Adoption{DriverManagement: "clusterpolicy", LiveDriverManagement: "clusterpolicy", By: AdoptedHeld, Under: 3, Nodes: 4}},
		{"NVIDIADriver mode, a node without its label, a node of no pool", "nd", func(o *Observed) {
			delete(o.Nodes[2].Labels, v1alpha1.LabelDriver)
			o.Nodes = append(o.Nodes, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cpu-0", Labels: map[string]string{}}})
		}, Adoption{DriverManagement: "nvidiadriver", LiveDriverManagement: "nvidiadriver", By: AdoptedLabelled, Under: 3, Nodes: 4}},
		{"no ClusterPolicy", "nd", func(o *Observed) { o.ClusterPolicy = nil },
			Adoption{DriverManagement: "nvidiadriver", By: AdoptedLabelled, Under: 4, Nodes: 4}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := adoptedExpect(t, tt.cluster)
			o := healthy(e)
			tt.break_(&o)
			if diff := cmp.Diff(tt.want, AdoptionOf(e, o)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	a := Adoption{DriverManagement: fleet.DriverManagementNVIDIADriver, LiveDriverManagement: fleet.DriverManagementClusterPolicy, By: AdoptedLabelled, Under: 1, Nodes: 4}
	if got, want := a.String(), "nvidiadriver (cluster: clusterpolicy), 1/4 labelled"; got != want {
		t.Errorf("String %q, want %q", got, want)
	}
}
