package lab

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/config"
)

// endAbort is promote after the drill's abort: the gate sees staging back
// on the stable release, and the rollout ends.
func (s *fleetStory) endAbort() {
	s.step("promote ends the drill's abort once the gate sees staging back", func(w *Play) {
		// The gate wants every step of staging applied and healthy at the
		// abort's commit: lifecycle's health check ends only once the
		// aborted rollout has settled, which the abort step does not wait for.
		w.WaitApplied(Staging, s.rev)
		if _, code := w.Mutate("promote"); code != 0 {
			w.T.Fatalf("promote exit %d", code)
		}
		s.rev = w.Push()
		for _, c := range StoryClusters() {
			w.WaitApplied(c, s.rev)
		}
	})
}

// controllerUpgrade ends the drill's abort and rolls out a new
// gpufleet-controller the way a new operator version goes: the release
// that carries it alone (ReleaseController), staging first, the gate
// checking the new Deployment before production gets it, the approval of
// production, then stable. Each cluster's controller process is the one
// the applied Deployment says; a new pod template replaces it.
func (s *fleetStory) controllerUpgrade() {
	s.endAbort()
	s.check("every cluster runs the controller its Deployment names, from the operators step", func(w *Play) {
		for _, c := range StoryClusters() {
			w.waitController(c, ControllerStable)
		}
	})
	s.step("start "+ReleaseController+": staging's controller is replaced first", func(w *Play) {
		if _, code := w.Mutate("start", ReleaseController); code != 0 {
			w.T.Fatalf("start exit %d", code)
		}
		s.rev = w.Push()
		t0 := time.Now()
		w.WaitApplied(Staging, s.rev, "operators")
		w.waitController(Staging, ControllerNext)
		w.Note("%s: gpufleet-controller %s running %s after the start was pushed", Staging, ControllerNext, Since(t0))
		dr := w.WaitRollout(Staging, ReleaseController, 2*time.Minute, v1alpha1.PhaseCompleted)
		w.AssertDrivers(Staging, DriverGood)
		w.Note("%s: DriverRollout %s %s under the new controller; every node still on %s", Staging, dr.Name, dr.Status.Phase, DriverGood)
		w.WaitApplied(Staging, s.rev)
		w.WaitApplied(Prod, s.rev)
	})
	s.check("prod keeps its controller while staging has the new one", func(w *Play) {
		if got := w.controllerImage(Prod); got != ControllerImage+":"+ControllerStable {
			w.T.Errorf("prod's controller Deployment runs %s, want %s", got, ControllerImage+":"+ControllerStable)
		}
	})
	s.check("gate --wave staging checks the new controller's Deployment, and passes", func(w *Play) {
		out, code := w.Gpufleet("gate", "-f", w.FleetFile, "--kubeconfig", w.Testbed.Kubeconfig, "--wave", WaveStaging, "-o", "json")
		if code != 0 || !strings.Contains(out, `"gpufleet-controller/Deployment"`) || !strings.Contains(out, ControllerImage+":"+ControllerNext) {
			w.T.Errorf("gate exit %d; its report does not judge the controller at %s:\n%s", code, ControllerNext, out)
		}
	})
	s.step("approve and promote: production gets the new controller", func(w *Play) {
		if _, code := w.Mutate("approve", ReleaseController+"/"+WaveProduction); code != 0 {
			w.T.Fatalf("approve exit %d", code)
		}
		s.rev = w.Push()
		for _, c := range StoryClusters() {
			w.WaitApplied(c, s.rev)
		}
		if _, code := w.Mutate("promote"); code != 0 {
			w.T.Fatalf("promote exit %d", code)
		}
		s.rev = w.Push()
		w.WaitApplied(Prod, s.rev, "operators")
		w.waitController(Prod, ControllerNext)
		w.WaitRollout(Prod, ReleaseController, 2*time.Minute, v1alpha1.PhaseCompleted)
		w.AssertDrivers(Prod, DriverGood)
		w.WaitApplied(Prod, s.rev)
		if _, code := w.Gate(WaveProduction); code != 0 {
			w.T.Errorf("gate --wave %s exit %d", WaveProduction, code)
		}
	})
	s.step("promote after the last wave: "+ReleaseController+" is stable", func(w *Play) {
		if _, code := w.Mutate("promote"); code != 0 {
			w.T.Fatalf("promote exit %d", code)
		}
		s.rev = w.Push()
		for _, c := range StoryClusters() {
			w.WaitApplied(c, s.rev)
			want := 2 // the first sync, the new version
			if c == Staging {
				want++ // and the rollout restart
			}
			n := 0
			for _, st := range w.Controllers[c].Starts() {
				if !st.Restart {
					n++
				}
			}
			if n != want {
				w.T.Errorf("%s: the controller was started %d times (restarts after an exit aside), want %d", c, n, want)
			}
		}
	})
}

// controllerImage is the image cluster's controller Deployment runs.
func (w *Play) controllerImage(cluster string) string {
	dep := &appsv1.Deployment{}
	if err := w.Client(cluster).Get(w.Context(), client.ObjectKey{Namespace: config.Namespace, Name: config.Deployment}, dep); err != nil {
		return err.Error()
	}
	for _, c := range dep.Spec.Template.Spec.Containers {
		if c.Name == config.Container {
			return c.Image
		}
	}
	return ""
}

// waitController waits until cluster's controller process is the one its
// Deployment names at version, and the Deployment is Available.
func (w *Play) waitController(cluster, version string) {
	want := ControllerImage + ":" + version
	w.Eventually(2*time.Minute, cluster+": gpufleet-controller "+version+" running", func() (bool, string) {
		ctl := w.Controllers[cluster]
		if ctl == nil {
			return false, "no controller process"
		}
		starts := ctl.Starts()
		if len(starts) == 0 || starts[len(starts)-1].Image != want {
			return false, fmt.Sprintf("process starts %v", starts)
		}
		dep := &appsv1.Deployment{}
		if err := w.Client(cluster).Get(w.Context(), client.ObjectKey{Namespace: config.Namespace, Name: config.Deployment}, dep); err != nil {
			return false, err.Error()
		}
		ok := dep.Status.ObservedGeneration == dep.Generation && dep.Status.UpdatedReplicas == *dep.Spec.Replicas && dep.Status.AvailableReplicas == *dep.Spec.Replicas
		return ok, fmt.Sprintf("Deployment updated %d available %d of %d", dep.Status.UpdatedReplicas, dep.Status.AvailableReplicas, *dep.Spec.Replicas)
	})
}

// restartControllerInFlight waits until rollout has a node in flight on
// cluster (draining, installing, validating or soaking), then restarts
// the controller's Deployment as `kubectl rollout restart` does (a new pod
// template), and waits for the process it says to have replaced the old.
// The recorder's checks over the story judge what the rollout did across
// the replacement.
func (w *Play) restartControllerInFlight(cluster, rollout string) {
	ctl := w.Controllers[cluster]
	if ctl == nil {
		return // the controller is not installed by the fleet file
	}
	var inFlight string
	w.Eventually(2*time.Minute, cluster+": a node of "+rollout+" in flight", func() (bool, string) {
		dr := w.Rollout(cluster, rollout)
		if dr == nil {
			return false, "no DriverRollout"
		}
		n := dr.Status.Nodes
		inFlight = fmt.Sprintf("%+v", n)
		return n.Draining+n.Installing+n.Validating+n.Soaking > 0, inFlight
	})
	before := len(ctl.Starts())
	dep := &appsv1.Deployment{}
	if err := w.Client(cluster).Get(w.Context(), client.ObjectKey{Namespace: config.Namespace, Name: config.Deployment}, dep); err != nil {
		w.T.Fatal(err)
	}
	patch := client.MergeFrom(dep.DeepCopy())
	if dep.Spec.Template.Annotations == nil {
		dep.Spec.Template.Annotations = map[string]string{}
	}
	dep.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] = time.Now().Format(time.RFC3339)
	if err := w.Client(cluster).Patch(w.Context(), dep, patch); err != nil {
		w.T.Fatal(err)
	}
	w.Eventually(time.Minute, cluster+": the controller replaced", func() (bool, string) {
		return len(ctl.Starts()) > before, fmt.Sprintf("%d starts", len(ctl.Starts()))
	})
	w.Note("%s: gpufleet-controller replaced by a rollout restart with nodes in flight (%s)", cluster, inFlight)
}
