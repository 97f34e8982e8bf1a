// Package plannertest holds fluent builders of rollouts and nodes for the
// tests of the planner, the simulator and the commands built on them.
package plannertest

import (
	"maps"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// Versions the builders use unless told otherwise.
const (
	Target   = "580.95.05"
	Previous = "570.172.08"
	Pool     = "h100"
	// OFEDTarget and OFEDPrevious are the OFED versions OFED and RunsOFED
	// use.
	OFEDTarget   = "doca3.2.0-25.10-1.2.8.0-2"
	OFEDPrevious = "25.04-0.6.1.0-2"
	// CliqueLabel is the maintenance domain label InDomain sets.
	CliqueLabel = v1alpha1.LabelGFDClique
)

// RolloutBuilder builds a DriverRollout.
type RolloutBuilder struct{ r *v1alpha1.DriverRollout }

// Rollout starts a rollout called name over the h100 pool: no canary, one
// node at a time, everything else at its default.
func Rollout(name string) *RolloutBuilder {
	return &RolloutBuilder{r: &v1alpha1.DriverRollout{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.KindDriverRollout},
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1},
		Spec: v1alpha1.DriverRolloutSpec{
			TargetVersion:   Target,
			PreviousVersion: Previous,
			NodeSelector:    metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.LabelPool: Pool}},
			ParallelNodes:   1,
		},
	}}
}

// Canary sets a canary count.
func (b *RolloutBuilder) Canary(n int32) *RolloutBuilder { b.r.Spec.Canary.Count = &n; return b }

// CanaryNodes names the canary nodes.
func (b *RolloutBuilder) CanaryNodes(names ...string) *RolloutBuilder {
	b.r.Spec.Canary.Nodes = names
	return b
}

// AutoApprove lets a clean canary approve the rollout.
func (b *RolloutBuilder) AutoApprove() *RolloutBuilder {
	b.r.Spec.Canary.AutoApproveAfterSoak = true
	return b
}

// Approval sets spec.approval.
func (b *RolloutBuilder) Approval(s string) *RolloutBuilder { b.r.Spec.Approval = s; return b }

// Approved sets spec.approval to the rollout's own name.
func (b *RolloutBuilder) Approved() *RolloutBuilder { return b.Approval(b.r.Name) }

// Parallel sets parallelNodes.
func (b *RolloutBuilder) Parallel(n int32) *RolloutBuilder { b.r.Spec.ParallelNodes = n; return b }

// MaxUnavailable sets a count.
func (b *RolloutBuilder) MaxUnavailable(n int32) *RolloutBuilder {
	v := intstr.FromInt32(n)
	b.r.Spec.MaxUnavailable = &v
	return b
}

// MaxUnavailablePercent sets a percentage such as "10%".
func (b *RolloutBuilder) MaxUnavailablePercent(p string) *RolloutBuilder {
	v := intstr.FromString(p)
	b.r.Spec.MaxUnavailable = &v
	return b
}

// Window adds a maintenance window.
func (b *RolloutBuilder) Window(start, end, tz string, days ...v1alpha1.Weekday) *RolloutBuilder {
	b.r.Spec.Windows = append(b.r.Spec.Windows, v1alpha1.MaintenanceWindow{Days: days, Start: start, End: end, TimeZone: tz})
	return b
}

// Freeze adds a freeze.
func (b *RolloutBuilder) Freeze(start, end time.Time, reason string) *RolloutBuilder {
	b.r.Spec.Freezes = append(b.r.Spec.Freezes, v1alpha1.FreezePeriod{Start: metav1.NewTime(start), End: metav1.NewTime(end), Reason: reason})
	return b
}

// Paused sets spec.paused.
func (b *RolloutBuilder) Paused() *RolloutBuilder { b.r.Spec.Paused = true; return b }

// Abort sets spec.abort.
func (b *RolloutBuilder) Abort() *RolloutBuilder { b.r.Spec.Abort = true; return b }

// Budget sets the failure budget.
func (b *RolloutBuilder) Budget(n int32) *RolloutBuilder { b.r.Spec.FailureBudget = n; return b }

// Soak sets the soak.
func (b *RolloutBuilder) Soak(d time.Duration) *RolloutBuilder {
	b.r.Spec.Soak = metav1.Duration{Duration: d}
	return b
}

// Timeouts sets the drain, install and validate timeouts.
func (b *RolloutBuilder) Timeouts(drain, install, validate time.Duration) *RolloutBuilder {
	b.r.Spec.Timeouts = v1alpha1.StepTimeouts{
		Drain: metav1.Duration{Duration: drain}, Install: metav1.Duration{Duration: install},
		Validate: metav1.Duration{Duration: validate},
	}
	return b
}

// OutOfService adds a selector of nodes out for other reasons.
func (b *RolloutBuilder) OutOfService(key, value string) *RolloutBuilder {
	b.r.Spec.OutOfService = append(b.r.Spec.OutOfService, metav1.LabelSelector{MatchLabels: map[string]string{key: value}})
	return b
}

// Versions sets the target and previous driver versions.
func (b *RolloutBuilder) Versions(target, previous string) *RolloutBuilder {
	b.r.Spec.TargetVersion, b.r.Spec.PreviousVersion = target, previous
	return b
}

// Selector replaces the rollout's node selector by the labels kv (key,
// value, ...).
func (b *RolloutBuilder) Selector(kv ...string) *RolloutBuilder {
	sel := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		sel[kv[i]] = kv[i+1]
	}
	b.r.Spec.NodeSelector = metav1.LabelSelector{MatchLabels: sel}
	return b
}

// Pool adds a pool to the spec whose selector matches the labels kv
// (key, value, ...).
func (b *RolloutBuilder) Pool(name string, kv ...string) *RolloutBuilder {
	sel := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		sel[kv[i]] = kv[i+1]
	}
	b.r.Spec.Pools = append(b.r.Spec.Pools, v1alpha1.PoolSpec{Name: name, NodeSelector: metav1.LabelSelector{MatchLabels: sel}})
	return b
}

// Actuator sets who moves the nodes.
func (b *RolloutBuilder) Actuator(a v1alpha1.Actuator) *RolloutBuilder {
	b.r.Spec.Actuator = a
	return b
}

// WaitForJobs has a drain leave the pods labelled key=value to finish, for
// at most timeout.
func (b *RolloutBuilder) WaitForJobs(key, value string, timeout time.Duration) *RolloutBuilder {
	b.r.Spec.Evict.WaitForCompletion = &v1alpha1.WaitForCompletion{
		PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{key: value}},
		Timeout:     metav1.Duration{Duration: timeout},
	}
	return b
}

// Domains groups the nodes by label into maintenance domains of at most
// maxNodes nodes.
func (b *RolloutBuilder) Domains(label string, maxNodes int32) *RolloutBuilder {
	b.r.Spec.MaintenanceDomain = &v1alpha1.MaintenanceDomain{NodeLabel: label, MaxNodes: maxNodes}
	return b
}

// Build returns the rollout.
func (b *RolloutBuilder) Build() *v1alpha1.DriverRollout { return b.r.DeepCopy() }

// NodeBuilder builds a planner.Node.
type NodeBuilder struct{ n planner.Node }

// Node starts a Ready, schedulable h100 node on the previous driver,
// labelled with it (v1alpha1.LabelDriver) as every node gpufleet manages is.
func Node(name string) *NodeBuilder {
	return &NodeBuilder{n: planner.Node{
		Name: name, Labels: map[string]string{v1alpha1.LabelPool: Pool, v1alpha1.LabelDriver: Previous}, Ready: true,
		DriverReady: true, DriverVersion: Previous,
	}}
}

// Labels replaces the node's labels.
func (b *NodeBuilder) Labels(kv ...string) *NodeBuilder {
	b.n.Labels = map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		b.n.Labels[kv[i]] = kv[i+1]
	}
	return b
}

// Cordoned marks the node unschedulable (by someone).
func (b *NodeBuilder) Cordoned() *NodeBuilder { b.n.Unschedulable = true; return b }

// AdminCordoned marks the node as cordoned by an admin before the rollout.
func (b *NodeBuilder) AdminCordoned() *NodeBuilder {
	b.n.Unschedulable, b.n.AdminCordoned = true, true
	return b
}

// Uncordoned makes the node schedulable, keeping any admin-cordon mark: a
// mark whose cordon someone has lifted since.
func (b *NodeBuilder) Uncordoned() *NodeBuilder { b.n.Unschedulable = false; return b }

// NotReady marks the node NotReady.
func (b *NodeBuilder) NotReady() *NodeBuilder { b.n.Ready = false; return b }

// In puts the node in phase since t. In flight phases are cordoned.
func (b *NodeBuilder) In(p v1alpha1.NodePhase, since time.Time) *NodeBuilder {
	b.n.Phase, b.n.Since = p, since
	if p.HoldsCordon() {
		b.n.Unschedulable = true
	}
	return b
}

// Owner says which rollout the node belongs to (label gpufleet.io/rollout).
// A node of another rollout carries no progress of the planned one: In,
// Failed and the like describe the planned rollout's own nodes only.
func (b *NodeBuilder) Owner(rollout string) *NodeBuilder { b.n.Owner = rollout; return b }

// Failed marks the node as failed.
func (b *NodeBuilder) Failed() *NodeBuilder { b.n.Failed = true; return b }

// Drained marks the node drained.
func (b *NodeBuilder) Drained() *NodeBuilder { b.n.Drained = true; return b }

// Driver sets the driver pod state and the reported version, and the
// driver label to that version when the node carries one.
func (b *NodeBuilder) Driver(ready bool, version string) *NodeBuilder {
	b.n.DriverReady, b.n.DriverVersion = ready, version
	if _, ok := b.n.Labels[v1alpha1.LabelDriver]; ok && version != "" {
		b.n.Labels = maps.Clone(b.n.Labels)
		b.n.Labels[v1alpha1.LabelDriver] = version
	}
	return b
}

// Unlabelled removes the node's driver label, as a node a provisioner just
// created (or one adopted from a fleet that never had the label) lacks it.
func (b *NodeBuilder) Unlabelled() *NodeBuilder {
	b.n.Labels = maps.Clone(b.n.Labels)
	delete(b.n.Labels, v1alpha1.LabelDriver)
	return b
}

// DriverFailed marks the driver pod failed.
func (b *NodeBuilder) DriverFailed() *NodeBuilder {
	b.n.DriverReady, b.n.DriverFailed, b.n.DriverVersion = false, true, ""
	return b
}

// Signal adds a health signal.
func (b *NodeBuilder) Signal(at time.Time, reason string) *NodeBuilder {
	b.n.Signals = append(b.n.Signals, planner.Signal{At: at, Source: "event", Reason: reason})
	return b
}

// GPUWork says the node runs pods GPU pods with gpuHours of GPU work in
// flight.
func (b *NodeBuilder) GPUWork(pods int, gpuHours float64) *NodeBuilder {
	b.n.GPUPods, b.n.GPUWork = pods, gpuHours*3600
	return b
}

// InDomain puts the node in maintenance domain key: label CliqueLabel.
func (b *NodeBuilder) InDomain(key string) *NodeBuilder {
	b.n.Labels = maps.Clone(b.n.Labels)
	b.n.Labels[CliqueLabel] = key
	return b
}

// OFED makes the rollout move the OFED driver from OFEDPrevious to
// OFEDTarget too, its nodes using GPUDirect RDMA (peermem) or not.
func (b *RolloutBuilder) OFED(peermem bool) *RolloutBuilder {
	b.r.Spec.OFED = &v1alpha1.OFEDSpec{TargetVersion: OFEDTarget, PreviousVersion: OFEDPrevious, Peermem: peermem}
	return b
}

// OFEDVersions sets the rollout's OFED versions (after OFED).
func (b *RolloutBuilder) OFEDVersions(target, previous string) *RolloutBuilder {
	b.r.Spec.OFED.TargetVersion, b.r.Spec.OFED.PreviousVersion = target, previous
	return b
}

// RunsOFED gives the node a Ready OFED pod of version (an image tag with
// the OS after it), the Network Operator's state, mofed.wait=false and the
// OFED skip label when held.
func (b *NodeBuilder) RunsOFED(version, state string, held bool) *NodeBuilder {
	b.n.OFEDVersion, b.n.OFEDReady, b.n.OFEDFailed = version+"-ubuntu22.04-amd64", true, false
	b.n.Labels = maps.Clone(b.n.Labels)
	b.n.Labels[v1alpha1.LabelMOFEDWait] = "false"
	delete(b.n.Labels, v1alpha1.LabelOFEDUpgradeState)
	if state != "" {
		b.n.Labels[v1alpha1.LabelOFEDUpgradeState] = state
	}
	delete(b.n.Labels, v1alpha1.LabelOFEDUpgradeSkip)
	if held {
		b.n.Labels[v1alpha1.LabelOFEDUpgradeSkip] = "true"
	}
	return b
}

// OFEDNotReady makes the node's OFED pod (of version) not Ready, failed
// or not, as the Network Operator's node label then says.
func (b *NodeBuilder) OFEDNotReady(version string, failed bool) *NodeBuilder {
	b.n.OFEDVersion, b.n.OFEDReady, b.n.OFEDFailed = version+"-ubuntu22.04-amd64", false, failed
	b.n.Labels = maps.Clone(b.n.Labels)
	b.n.Labels[v1alpha1.LabelMOFEDWait] = "true"
	return b
}

// DriverStale marks the node's GPU driver pod as started before its OFED.
func (b *NodeBuilder) DriverStale() *NodeBuilder { b.n.DriverStale = true; return b }

// Build returns the node.
func (b *NodeBuilder) Build() planner.Node { return b.n }

// NodeFrom goes on building n.
func NodeFrom(n planner.Node) *NodeBuilder { return &NodeBuilder{n: n} }

// Nodes builds n (at most 100) default nodes named prefix-00 … in name order.
func Nodes(prefix string, n int) []planner.Node {
	out := make([]planner.Node, n)
	for i := range out {
		out[i] = Node(name(prefix, i)).Build()
	}
	return out
}

func name(prefix string, i int) string {
	return prefix + "-" + string(rune('0'+i/10)) + string(rune('0'+i%10))
}

// RunsDriver makes n report driver version and carry it as its driver
// label, as a node that runs it under gpufleet does; the label map is
// copied, as nodes built together share one.
func RunsDriver(n *planner.Node, version string) {
	n.DriverVersion = version
	n.Labels = maps.Clone(n.Labels)
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[v1alpha1.LabelDriver] = version
}

// DRA makes the node run NVIDIA's DRA kubelet plugin, Ready, its
// ResourceSlices publishing driver version (in semver form, as the
// plugin writes it) unless it is empty.
func (b *NodeBuilder) DRA(version string) *NodeBuilder {
	b.n.DRA, b.n.DRAPluginRunning, b.n.DRAPluginReady = true, true, true
	b.n.DRASliceVersions = nil
	if version != "" {
		b.n.DRASliceVersions = []string{planner.SemverForm(version)}
	}
	return b
}

// Plugin sets the node's DRA plugin label (v1alpha1.LabelDRAPlugin) and
// whether a plugin pod runs there and is Ready.
func (b *NodeBuilder) Plugin(label string, running, ready bool) *NodeBuilder {
	b.n.Labels = maps.Clone(b.n.Labels)
	delete(b.n.Labels, v1alpha1.LabelDRAPlugin)
	if label != "" {
		b.n.Labels[v1alpha1.LabelDRAPlugin] = label
	}
	b.n.DRAPluginRunning, b.n.DRAPluginReady = running, ready
	return b
}

// Claims sets the GPU claims still allocated on the node, "ns/name".
func (b *NodeBuilder) Claims(names ...string) *NodeBuilder { b.n.DRAClaims = names; return b }

// ComputeDomain puts the node in ComputeDomain uid, as its claims say.
func (b *NodeBuilder) ComputeDomain(uid string) *NodeBuilder { b.n.ComputeDomain = uid; return b }
