package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// TestDomainMovesAsOne: on the real API server, a maintenance domain of four
// nodes (an NVLink domain by its clique label) is cordoned together, and
// returns together: three nodes that have soaked clean stay out while the
// fourth still waits for its job, and all four go back in the same pass.
func TestDomainMovesAsOne(t *testing.T) {
	env(t)
	ctx := context.Background()
	const ns = "nvl-domain"
	nodes, _ := pool(t, ns, 4, oldDriver)
	for _, name := range nodes {
		n := getNode(t, name)
		before := n.DeepCopy()
		n.Labels[v1alpha1.LabelGFDClique] = "nvl-a"
		if err := suite.c.Patch(ctx, n, client.MergeFrom(before)); err != nil {
			t.Fatalf("label %s: %v", name, err)
		}
	}
	ensureNamespace(t, ns)
	job := map[string]string{"job": "train"}
	pod := slowPod(t, ns, "train-0", nodes[0], 0, job)

	startController(t, RealClock{}, nil)
	ro := newRollout(ns, ns, oldDriver, newDriver)
	ro.Spec.Canary.Count = new(int32(0))
	ro.Spec.ParallelNodes = 4
	ro.Spec.MaxUnavailable = new(intstr.FromInt32(4))
	ro.Spec.MaintenanceDomain = &v1alpha1.MaintenanceDomain{NodeLabel: v1alpha1.LabelGFDClique, MaxNodes: 4}
	ro.Spec.Evict.WaitForCompletion = &v1alpha1.WaitForCompletion{PodSelector: metav1.LabelSelector{MatchLabels: job}, Timeout: metav1.Duration{Duration: 2 * time.Minute}}
	create(t, ro)

	waitFor(t, 20*time.Second, "the domain cordoned", func() (bool, string) {
		var out []string
		for _, name := range nodes {
			if !getNode(t, name).Spec.Unschedulable {
				out = append(out, name)
			}
		}
		return len(out) == 0, fmt.Sprintf("schedulable: %v", out)
	})
	started := map[string]bool{}
	for _, e := range events(t, ns) {
		for _, name := range nodes {
			if strings.HasPrefix(e, "NodeDraining: node "+name+":") && strings.Contains(e, "of maintenance domain nvl-a (4 nodes, starting as one)") {
				started[name] = true
			}
		}
	}
	if len(started) != len(nodes) {
		t.Errorf("started as one: %v of %v; events %q", started, nodes, events(t, ns))
	}

	// The three without a job soak clean (a 1s soak) while the fourth
	// waits for its job: they stay out, cordoned.
	waitFor(t, 40*time.Second, "three nodes soaking", func() (bool, string) {
		ph := phases(t, nodes[1:])
		for _, name := range nodes[1:] {
			if ph[name] != string(v1alpha1.NodeSoaking) {
				return false, fmt.Sprint(ph)
			}
		}
		return true, ""
	})
	morePasses(t, ns, 3)
	for name, ph := range phases(t, nodes) {
		n := getNode(t, name)
		if name == nodes[0] && ph != string(v1alpha1.NodeDraining) || name != nodes[0] && ph != string(v1alpha1.NodeSoaking) || !n.Spec.Unschedulable {
			t.Errorf("while %s waits for its job, %s is %s (unschedulable %t); want it held, cordoned", nodes[0], name, ph, n.Spec.Unschedulable)
		}
	}

	got := &corev1.Pod{}
	if err := suite.c.Get(ctx, client.ObjectKeyFromObject(pod), got); err != nil {
		t.Fatal(err)
	}
	got.Status.Phase = corev1.PodSucceeded
	if err := suite.c.Status().Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, ns, v1alpha1.PhaseCompleted, 60*time.Second)
	assertDone(t, nodes, newDriver)
	// One pass returned them all: each Done since the same instant.
	var since []string
	for _, name := range nodes {
		since = append(since, getNode(t, name).Annotations[v1alpha1.AnnotationSince])
	}
	for _, s := range since[1:] {
		if s != since[0] {
			t.Errorf("the domain returned over several passes: Done since %v", since)
			break
		}
	}
}
