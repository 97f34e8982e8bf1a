package explain

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// gpuOperator judges the ClusterPolicy and the release's NVIDIADrivers.
func (w *walker) gpuOperator() {
	l := Link{Step: StepClusterPolicy, Object: objectOfKind(gate.KindClusterPolicy, "cluster-policy"), Expected: "ready", Checks: []gate.CheckID{gate.ClusterPolicyCheck()}}
	if u := w.o.ClusterPolicy; u != nil {
		l.Object.Name = u.GetName()
	}
	check, ok := w.passed(gate.ClusterPolicyCheck())
	l.Observed = check.Observed
	switch {
	case ok:
		l.State = OK
	case w.o.ClusterPolicy == nil:
		l.State, l.Message, l.Next = BrokenState, "there is no ClusterPolicy: the GPU Operator's chart makes one", w.applyCommand("operators")
	default:
		l.State, l.Condition = BrokenState, stateCondition(w.o.ClusterPolicy)
		l.Message = "the GPU Operator reports its ClusterPolicy " + cmp.Or(check.Observed, "without a state") + stateDetail(l.Condition)
		l.Next = "kubectl describe clusterpolicy " + l.Object.Name
	}
	w.add(l)
	w.driverManagement(l.Object)
	for _, name := range w.e.NVIDIADrivers {
		id := gate.NVIDIADriverCheck(name)
		l := Link{Step: StepNVIDIADriver, Object: objectOfKind(gate.KindNVIDIADriver, name), Expected: "ready", Checks: []gate.CheckID{id}}
		check, ok := w.passed(id)
		l.Observed = check.Observed
		u := w.o.NVIDIADrivers[name]
		switch {
		case ok:
			l.State = OK
		case u == nil:
			l.State, l.Message, l.Next = BrokenState, "the NVIDIADriver does not exist: the config step writes it", w.applyCommand("config")
			w.blockedBy(&l, "config")
		default:
			l.State, l.Condition = BrokenState, stateCondition(u)
			l.Message = "the GPU Operator reports the NVIDIADriver " + cmp.Or(check.Observed, "without a state") + stateDetail(l.Condition)
			l.Next = "kubectl describe nvidiadriver " + name
		}
		w.add(l)
	}
}

// driverManagement judges who runs the driver against what the fleet file
// says, on the ClusterPolicy cp names: a mismatch is broken (or blocked
// while the operators step, which would change it, is not ok), and names
// the command that prints the fleet file's table as the cluster runs.
func (w *walker) driverManagement(cp Object) {
	id := gate.DriverManagementCheck()
	l := Link{Step: StepDriverManagement, Object: cp, Expected: "driver managed by " + w.e.DriverManagement, Checks: []gate.CheckID{id}}
	check, ok := w.passed(id)
	l.Observed = check.Observed
	switch {
	case ok:
		l.State = OK
	case w.o.ClusterPolicy == nil:
		// The ClusterPolicy's own link says it is missing.
		l.State, l.Message, l.Next = Blocked, check.Message, w.applyCommand("operators")
	default:
		l.State, l.Message = BrokenState, check.Message
		l.Condition = &Condition{Type: "spec.driver.useNvidiaDriverCRD", Status: fmt.Sprint(check.Observed == fleet.DriverManagementNVIDIADriver)}
		l.Next = "gpufleet init --context " + w.context() + " --dry-run"
		w.blockedBy(&l, "operators")
	}
	w.add(l)
}

// stateCondition is the condition behind a GPU Operator object's state:
// its Error condition when True, else its Ready condition when not True.
func stateCondition(u *unstructured.Unstructured) *Condition {
	if c := condition(u, "Error"); c != nil && c.Status == "True" {
		return c
	}
	if c := condition(u, "Ready"); c != nil && c.Status != "True" {
		return c
	}
	state, _, _ := unstructured.NestedString(u.Object, "status", "state")
	return &Condition{Type: "state", Status: cmp.Or(state, "none")}
}

func stateDetail(c *Condition) string {
	if c == nil || c.Message == "" {
		return ""
	}
	return ": " + c.Message
}

// crashReasons are container waiting reasons that mean the driver does not
// come up by itself.
var crashReasons = []string{"CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "CreateContainerConfigError", "CreateContainerError", "InvalidImageName", "RunContainerError"}

// driverPods judges the driver DaemonSets and each driver pod: a pod that
// crash-loops or cannot pull its image is broken; one not Ready yet on a
// node the rollout is moving is on its way; one not Ready on a node the
// rollout does not move is broken (the node should be serving).
func (w *walker) driverPods() {
	for _, ds := range w.o.DriverDaemonSets {
		w.add(Link{Step: StepDaemonSet, Object: objectOf("apps/v1", "DaemonSet", ds.Namespace, ds.Name), State: OK,
			Observed: fmt.Sprintf("%d of %d scheduled pods ready", ds.Status.NumberReady, ds.Status.DesiredNumberScheduled)})
	}
	pods := slices.Clone(w.o.DriverPods)
	slices.SortFunc(pods, func(a, b corev1.Pod) int {
		return strings.Compare(a.Spec.NodeName+"/"+a.Name, b.Spec.NodeName+"/"+b.Name)
	})
	for _, p := range pods {
		if planner.PodReady(&p) || p.DeletionTimestamp != nil {
			continue
		}
		l := Link{Step: StepDriverPod, Object: objectOf("v1", "Pod", p.Namespace, p.Name), Expected: "Ready", Observed: string(p.Status.Phase)}
		if c, cs := crashing(p); c != nil {
			l.State, l.Condition = BrokenState, c
			l.Message = fmt.Sprintf("the driver pod on node %s does not come up: %s", p.Spec.NodeName, c.Reason)
			if c.Message != "" {
				l.Message += ": " + c.Message
			}
			l.Next = fmt.Sprintf("kubectl -n %s logs %s -c %s --previous", p.Namespace, p.Name, cs)
			if c.Reason == "ImagePullBackOff" || c.Reason == "ErrImagePull" || c.Reason == "InvalidImageName" {
				l.Next = fmt.Sprintf("kubectl -n %s describe pod %s", p.Namespace, p.Name)
			}
			w.add(l)
			continue
		}
		if w.moving(p.Spec.NodeName) {
			l.State, l.Message = InProgress, fmt.Sprintf("the driver is installing on node %s", p.Spec.NodeName)
		} else {
			l.State, l.Message = BrokenState, fmt.Sprintf("the driver pod on node %s is not Ready, and the rollout is not moving that node", p.Spec.NodeName)
		}
		l.Next = fmt.Sprintf("kubectl -n %s describe pod %s", p.Namespace, p.Name)
		w.add(l)
	}
}

// moving says the rollout has the node in flight.
func (w *walker) moving(node string) bool {
	for _, n := range w.o.Nodes {
		if n.Name == node {
			return nodeStateOf(n).Phase.InFlight()
		}
	}
	return false
}

// crashing returns the waiting state of a container that does not come up
// by itself, and the container's name.
func crashing(p corev1.Pod) (*Condition, string) {
	for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		if wt := cs.State.Waiting; wt != nil && slices.Contains(crashReasons, wt.Reason) {
			return &Condition{Type: "ContainerWaiting", Status: "True", Reason: wt.Reason, Message: wt.Message}, cs.Name
		}
	}
	return nil, ""
}
