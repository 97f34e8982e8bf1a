package explain

import "github.com/gpufleet/gpufleet/internal/gate"

// APIVersion and Kind name the JSON form of an Answer, so a program that
// stores or forwards one can tell what it holds.
const (
	APIVersion = "explain.gpufleet.io/v1alpha1"
	Kind       = "Explanation"
)

// Verdict sums an Answer up.
type Verdict string

// Verdicts.
const (
	// Converged: every link holds; the cluster runs what git says.
	Converged Verdict = "converged"
	// Progressing: nothing is broken, something is still on its way
	// (a rollout moving nodes, Flux reconciling).
	Progressing Verdict = "progressing"
	// Broken: a link needs someone: a fix, or a decision such as an
	// approval.
	Broken Verdict = "broken"
)

// State is how one link stands.
type State string

// Link states.
const (
	OK          State = "ok"
	InProgress  State = "progressing"
	BrokenState State = "broken"
	// Blocked: not ok only because an earlier link is broken (a
	// Kustomization at an old revision while its source has not fetched
	// the new one, a dependent of a broken dependency). Fixing that link
	// is what moves this one.
	Blocked State = "blocked"
)

// Step names the kind of link, the place in the chain.
type Step string

// Steps, in the order of the chain.
const (
	StepSource        Step = "source"
	StepKustomization Step = "kustomization"
	// StepApplication is an Argo CD Application, as StepKustomization is a
	// Flux Kustomization; StepSync its sync: running, or failed.
	StepApplication   Step = "application"
	StepSync          Step = "sync"
	StepSuspended     Step = "suspended"
	StepDependsOn     Step = "dependsOn"
	StepHealthCheck   Step = "healthCheck"
	StepTimeout       Step = "timeout"
	StepRevision      Step = "revision"
	StepHelmRelease   Step = "helmRelease"
	StepOperator      Step = "operatorDeployment"
	StepClusterPolicy Step = "clusterPolicy"
	// StepDriverManagement: the ClusterPolicy manages the driver as the
	// fleet file says.
	StepDriverManagement Step = "driverManagement"
	StepNVIDIADriver     Step = "nvidiaDriver"
	StepDaemonSet        Step = "driverDaemonSet"
	StepDriverPod        Step = "driverPod"
	StepRollout          Step = "driverRollout"
	StepApproval         Step = "approval"
	StepNode             Step = "node"
	// StepCheck is a check of the gate that no other link answers for
	// (see walker.uncovered): explain fails closed on it.
	StepCheck Step = "gateCheck"
)

// Answer is what explain found on one cluster.
type Answer struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Cluster    string `json:"cluster"`
	// Context is the kubeconfig context the cluster was read through.
	Context string `json:"context"`
	// Release and Driver are what the fleet file says the cluster runs.
	Release string `json:"release"`
	Driver  string `json:"driver"`
	// Revision is the git commit Flux should have applied; empty when
	// not checked.
	Revision string  `json:"revision,omitempty"`
	Verdict  Verdict `json:"verdict"`
	// Summary is one sentence for people.
	Summary string `json:"summary"`
	// At is the link that decides the verdict: the first broken link, or,
	// when none is broken, the first still progressing. Nil when converged.
	At *Link `json:"at,omitempty"`
	// Chain is every link walked, in chain order, each with its state: a
	// link after At was judged too, but it may only be waiting on At.
	Chain []Link `json:"chain"`
	// Nodes is each GPU node of the cluster's rollout, for a view per node.
	Nodes []Node `json:"nodes"`
}

// Link is one link of the chain.
type Link struct {
	Step   Step   `json:"step"`
	Object Object `json:"object"`
	State  State  `json:"state"`
	// Expected and Observed say what the link should be and what was read.
	Expected string `json:"expected,omitempty"`
	Observed string `json:"observed,omitempty"`
	// Condition is the object's own condition behind the verdict, as its
	// controller wrote it.
	Condition *Condition `json:"condition,omitempty"`
	// Message says in a sentence what is wrong or under way.
	Message string `json:"message,omitempty"`
	// Next is the command that would fix or inspect it.
	Next string `json:"next,omitempty"`
	// Checks are the gate's checks this link answers for: the check of
	// its object, or for a node the checks of its pool it makes fail. A
	// check the gate fails is named by a link that is not ok (but the
	// DriverRollout of an aborted rollout, judged by its nodes as promote
	// does).
	Checks []gate.CheckID `json:"checks,omitempty"`
}

// Object names a Kubernetes object.
type Object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

// Condition is a status condition (or, for the GPU Operator's objects,
// their status.state) as read.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// Node is one GPU node as the rollout sees it.
type Node struct {
	Name string `json:"name"`
	// Phase is the node's phase in Rollout ("Pending" when not started).
	Phase   string `json:"phase"`
	Rollout string `json:"rollout,omitempty"`
	// Driver is the version the node reports, as the gate reads it
	// (gate.NodeDriver): GPU Feature Discovery's label, or where it has
	// none, its GPU DRA ResourceSlices'.
	Driver        string `json:"driver,omitempty"`
	OnTarget      bool   `json:"onTarget"`
	Ready         bool   `json:"ready"`
	Cordoned      bool   `json:"cordoned"`
	AdminCordoned bool   `json:"adminCordoned"`
	Failed        bool   `json:"failed"`
	Since         string `json:"since,omitempty"`
}

// Broken returns the first broken link, nil when none is.
func (a *Answer) Broken() *Link {
	for i := range a.Chain {
		if a.Chain[i].State == BrokenState {
			return &a.Chain[i]
		}
	}
	return nil
}
