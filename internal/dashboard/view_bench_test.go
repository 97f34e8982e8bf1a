package dashboard

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
)

// benchObserved is what the gate reads of a cluster of n GPU nodes, all in
// its DriverRollout, in every phase.
func benchObserved(n int) (gate.Expected, gate.Observed) {
	now := time.Now()
	dr := &v1alpha1.DriverRollout{ObjectMeta: metav1.ObjectMeta{Name: "r2"}}
	dr.Spec.TargetVersion = "580.95.05"
	dr.Spec.FailureBudget = 2
	dr.Spec.NodeSelector = metav1.LabelSelector{MatchLabels: map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}}
	dr.Spec.Windows = []v1alpha1.MaintenanceWindow{{Start: "00:00", End: "23:59"}}
	phases := []v1alpha1.NodePhase{v1alpha1.NodeDone, v1alpha1.NodeSoaking, v1alpha1.NodeInstalling, v1alpha1.NodePending}
	o := gate.Observed{Rollout: dr}
	for i := range n {
		nd := node(fmt.Sprintf("gpu-%03d", i), v1alpha1.NodeState{Rollout: "r2", Phase: phases[i%len(phases)], Since: now}, map[string]string{
			"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", v1alpha1.LabelGFDDriverFull: "570.172.08"})
		nd.Status.Conditions = append(nd.Status.Conditions, corev1.NodeCondition{Type: "GpuXidError", Status: corev1.ConditionFalse})
		o.Nodes = append(o.Nodes, nd)
	}
	e := gate.Expected{Cluster: "c", Release: &fleet.Release{Name: "r2", Driver: "580.95.05"}, Rollout: "r2",
		Pools: []*fleet.Pool{{Name: "h100", Product: "NVIDIA-H100-80GB-HBM3", Nodes: n}}, SignalConditions: []string{"GpuXidError"}, SharedProduct: map[string]bool{}}
	return e, o
}

// BenchmarkViewOf100Nodes is the CPU of one rebuild of a 100-node cluster's
// view once the informers hold it, part by part: the gate's judgement, the
// rollout's nodes and timelines, and the HTML fragment.
func BenchmarkViewOf100Nodes(b *testing.B) {
	e, o := benchObserved(100)
	p, err := newPageTemplates()
	if err != nil {
		b.Fatal(err)
	}
	hist := map[string][]Segment{}
	now := time.Now()
	b.Run("evaluate", func(b *testing.B) {
		for b.Loop() {
			gate.Evaluate(e, o)
		}
	})
	b.Run("rollout", func(b *testing.B) {
		for b.Loop() {
			rolloutView(e, o, hist, now)
		}
	})
	v := &ClusterView{Name: "c", Reachable: true, Verdict: gate.Fail, Checks: gate.Evaluate(e, o), Rollout: rolloutView(e, o, hist, now)}
	b.Run("render", func(b *testing.B) {
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			if err := p.cluster(&buf, v); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(buf.Len())/1024, "KiB")
	})
}
