package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	"github.com/gpufleet/gpufleet/internal/testworld/lab"
	"github.com/gpufleet/gpufleet/internal/testworld/nodesim"
)

// joinFleet is the fleet file of TestJoiningNode: one cluster on the
// gpufleet actuator, a canary that a person approves, one node at a time,
// and one maintenance window (HH:MM, UTC).
func joinFleet(winStart, winEnd string) string {
	src := operatorFleet(winStart, winEnd)
	src = strings.Replace(src, `actuator = "gpu-operator"`+"\n", "", 1)
	src = strings.Replace(src, "# controller moves the nodes, gpufleet releases them one by one.", "# TestJoiningNode: gpufleet's own actuator; nodes join during the story.", 1)
	return src
}

// addNode registers one GPU node in opCluster as a provisioner (an
// autoscaler, a node template) creates it: NFD's labels and the GPU
// product, no gpufleet label, no driver. It returns the node's name and
// when it was created.
func (w *world) addNode(pool string) (string, time.Time) {
	w.T.Helper()
	began := time.Now()
	names, err := w.Sims[opCluster].AddPool(context.Background(), nodesim.Pool{Name: pool, Product: lab.Product, Nodes: 1, Provisioned: true})
	if err != nil {
		w.T.Fatal(err)
	}
	// (nodesim's TestProvisionedPool checks what such a node registers
	// with: the controller may have labelled it by the time it is read.)
	return names[0], began
}

// waitJoined waits until node carries driver as its driver label and runs
// a Ready driver pod of that version. labelled is how long the controller
// took to label it from when the node became one its rollout selects
// (the real GPU Operator's nvidia.com/gpu.present, which the operator puts
// on from NFD's labels in its own time, seconds under load); ready is
// how long the Ready driver pod took from began.
func (w *world) waitJoined(node, driver string, began time.Time) (labelled, ready time.Duration) {
	w.T.Helper()
	ctx := context.Background()
	var selectable, labelledAt time.Time
	w.Eventually(90*time.Second, node+" labelled and running driver "+driver, func() (bool, string) {
		n := w.gpuNodes(opCluster)[node]
		if n == nil {
			return false, "node gone"
		}
		now := time.Now()
		if selectable.IsZero() && n.Labels[v1alpha1.LabelGPUPresent] == "true" {
			selectable = now
		}
		got := n.Labels[v1alpha1.LabelDriver]
		if got != "" && labelledAt.IsZero() {
			labelledAt = now
			if selectable.IsZero() { // both seen in the same read
				selectable = now
			}
			labelled = labelledAt.Sub(selectable)
		}
		if got != driver {
			return false, fmt.Sprintf("driver label %q", got)
		}
		var pods corev1.PodList
		if err := w.Client(opCluster).List(ctx, &pods, client.MatchingLabels{"app.kubernetes.io/component": v1alpha1.ComponentNVIDIADriver}); err != nil {
			return false, err.Error()
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Spec.NodeName == node && p.DeletionTimestamp == nil && planner.PodReady(p) && nodesim.DriverPodVersion(p) == driver {
				ready = time.Since(began)
				return true, ""
			}
		}
		return false, "no Ready driver pod of " + driver + " on it"
	})
	w.T.Logf("%s: a GPU node after %s, labelled %s %s after that, its driver pod Ready after %s", node, selectable.Sub(began).Round(10*time.Millisecond), driver, labelled.Round(10*time.Millisecond), ready.Round(10*time.Millisecond))
	return labelled, ready
}

// TestJoiningNode: nodes that register as a provisioner creates them (no
// gpufleet label, no driver) get their driver label at once and a Ready
// driver pod of the version the rule of "Nodes that join" says
// (docs/spec/v1alpha1/driverrollout.md), on the real GPU Operator: the
// previous driver while the canary waits for its approval,
// the target once it is approved, and the target during a closed
// maintenance window after the rollout completed; the rollout counts them
// and completes.
func TestJoiningNode(t *testing.T) {
	t.Parallel()
	ws, we := windowAround(true)
	w := newOneClusterWorld(t, joinFleet(ws, we))
	s := &story{t: t, w: w}
	var early, late, night string

	s.step("render and first sync: the stable rollout completes", func(w *world) {
		src, err := os.ReadFile(w.FleetFile)
		if err != nil {
			w.T.Fatal(err)
		}
		w.commitFleet(string(src), "gpufleet render: first render")
		w.WaitRollout(opCluster, lab.ReleaseStable, 2*time.Minute, v1alpha1.PhaseCompleted)
	})

	s.step("start the release: the canary passes and waits for its approval", func(w *world) {
		if _, code := w.Mutate("start", lab.ReleaseGood); code != 0 {
			w.T.Fatalf("start exit %d", code)
		}
		w.WaitApplied(opCluster, w.Push())
		w.WaitRollout(opCluster, lab.ReleaseGood, 3*time.Minute, v1alpha1.PhaseWaitingForApproval)
	})

	s.check("a node that joins before the approval gets the previous driver at once", func(w *world) {
		var began time.Time
		early, began = w.addNode("early")
		if labelled, _ := w.waitJoined(early, lab.DriverStable, began); labelled > 15*time.Second {
			w.T.Errorf("%s labelled after %s, want within seconds", early, labelled)
		}
		if dr := w.Rollout(opCluster, lab.ReleaseGood); dr.Status.Phase != v1alpha1.PhaseWaitingForApproval {
			w.T.Errorf("the rollout went on without its approval: %s", dr.Status.Phase)
		}
	})

	s.step("approve: the rollout moves every node, the early joiner too", func(w *world) {
		src := operatorFleetWithPromotion(w, "", "")
		approved := strings.Replace(src, "approved = []", `approved = ["`+lab.ReleaseGood+"/"+opCluster+`"]`, 1)
		if approved == src {
			w.T.Fatalf("no empty approved list in the fleet file:\n%s", src)
		}
		w.commitFleet(approved, "approve "+lab.ReleaseGood+"/"+opCluster)
	})

	s.check("a node that joins after the approval gets the target at once", func(w *world) {
		var began time.Time
		late, began = w.addNode("late")
		if labelled, _ := w.waitJoined(late, lab.DriverGood, began); labelled > 15*time.Second {
			w.T.Errorf("%s labelled after %s, want within seconds", late, labelled)
		}
	})

	s.check("the rollout completes counting both joiners", func(w *world) {
		dr := w.WaitRollout(opCluster, lab.ReleaseGood, 6*time.Minute, v1alpha1.PhaseCompleted)
		if want := int32(opNodes + 2); dr.Status.Total != want || dr.Status.Nodes.Done != want {
			w.T.Errorf("rollout: %d of %d done, want %d of %d", dr.Status.Nodes.Done, dr.Status.Total, want, want)
		}
		for _, name := range []string{early, late} {
			n := w.gpuNodes(opCluster)[name]
			if n.Labels[v1alpha1.LabelGFDDriverFull] != lab.DriverGood || n.Labels[v1alpha1.LabelPhase] != string(v1alpha1.NodeDone) {
				w.T.Errorf("%s: driver %q phase %q, want Done on %s", name, n.Labels[v1alpha1.LabelGFDDriverFull], n.Labels[v1alpha1.LabelPhase], lab.DriverGood)
			}
		}
	})

	s.step("the maintenance window closes", func(w *world) {
		ws, we := windowAround(false)
		w.commitFleet(operatorFleetWithPromotion(w, ws, we), "close the maintenance window")
		w.WaitRollout(opCluster, lab.ReleaseGood, time.Minute, v1alpha1.PhaseCompleted)
	})

	s.check("a node that joins in a closed window after the rollout completed has the release's driver within seconds", func(w *world) {
		var began time.Time
		night, began = w.addNode("night")
		labelled, ready := w.waitJoined(night, lab.DriverGood, began)
		if labelled > 15*time.Second {
			w.T.Errorf("%s labelled after %s, want within seconds", night, labelled)
		}
		if ready > 60*time.Second {
			w.T.Errorf("%s ran a Ready driver pod after %s", night, ready)
		}
		dr := w.WaitRollout(opCluster, lab.ReleaseGood, time.Minute, v1alpha1.PhaseCompleted)
		if want := int32(opNodes + 3); dr.Status.Total != want || dr.Status.Nodes.Done != want {
			w.T.Errorf("rollout: %d of %d done, want %d of %d", dr.Status.Nodes.Done, dr.Status.Total, want, want)
		}
		var evs corev1.EventList
		if err := w.Client(opCluster).List(context.Background(), &evs); err != nil {
			w.T.Fatal(err)
		}
		joined := map[string]bool{}
		for _, e := range evs.Items {
			if e.Reason == "NodeJoined" {
				for _, name := range []string{early, late, night} {
					if strings.Contains(e.Message, name) {
						joined[name] = true
					}
				}
			}
		}
		if len(joined) != 3 {
			w.T.Errorf("NodeJoined Events for %v, want one for each of %s, %s, %s", joined, early, late, night)
		}
	})
}
