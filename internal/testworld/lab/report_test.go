package lab

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

func node(name, phase string) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha1.LabelGFDDriverFull: "580.95.05"}}}
	if phase != "" {
		n.Labels[v1alpha1.LabelPhase] = phase
	}
	return n
}

// TestReport records two nodes through a rollout and checks the report
// draws their phases and lists every step.
func TestReport(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	rec := NewRecorder(nil, t0)
	for i, phases := range [][2]string{{"", ""}, {"Draining", ""}, {"Soaking", "Draining"}, {"Done", "RollingBack"}, {"Done", "RolledBack"}} {
		rec.phases([]corev1.Node{node("h100-0", phases[0]), node("h100-1", phases[1])}, t0.Add(time.Duration(i)*10*time.Second))
	}
	sum := &Summary{Took: time.Minute, Steps: []StepResult{{Name: "start r2026-10", Took: 14 * time.Second, Note: "3 nodes on 580.95.05"}, {Name: "promote", Err: errors.New("gate failed")}}}
	var out bytes.Buffer
	if err := writeReport(&out, sum, map[string]*Recorder{"stg": rec}, []reportCluster{{Wave: "staging", Name: "stg", Release: "r2026-10", Nodes: 2}}, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	html := out.String()
	for _, want := range []string{
		"<td>staging</td><td>stg</td><td>r2026-10</td><td>2</td>",
		"<td>start r2026-10</td><td class=\"ok\">ok</td><td>14s</td><td>3 nodes on 580.95.05</td>",
		"<td class=\"failed\">FAILED</td>", "gate failed",
		"<title>h100-0 Draining", "<title>h100-1 RollingBack", "<title>h100-1 RolledBack",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if strings.Contains(html, "<title>h100-0 Pending") {
		t.Error("untouched (Pending) time must not be drawn")
	}
}
