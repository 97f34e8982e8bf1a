package nodesim

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Fault is a node condition type a GPU node problem detector sets.
type Fault corev1.NodeConditionType

// The faults the simulator can raise. Their condition types and event
// reasons follow what GPU node problem detectors report.
const (
	FaultXID Fault = "GpuXidError"
	FaultECC Fault = "GpuEccError"
)

// Event reasons of raised faults.
const (
	ReasonXID = "XidError"
	ReasonECC = "EccError"
)

// EventSource is the component name on the simulator's fault events.
const EventSource = "gpu-node-problem-detector"

// xidMeanings describes the XIDs operators meet most.
var xidMeanings = map[int]string{
	13: "graphics engine exception",
	31: "GPU memory page fault",
	43: "GPU stopped processing",
	45: "preemptive cleanup, due to previous errors",
	48: "double bit ECC error",
	63: "ECC page retirement or row remapping recording event",
	64: "ECC page retirement or row remapper recording failure",
	74: "NVLink error",
	79: "GPU has fallen off the bus",
	94: "contained ECC error",
	95: "uncontained ECC error",
}

// SetNotReady stops node's kubelet until SetReady: kwok no longer renews
// its Lease, and the node lifecycle controller marks it NotReady.
func (s *Sim) SetNotReady(ctx context.Context, node string) error {
	return s.setReady(ctx, node, false)
}

// SetReady starts node's kubelet again: kwok reports it Ready.
func (s *Sim) SetReady(ctx context.Context, node string) error {
	return s.setReady(ctx, node, true)
}

func (s *Sim) setReady(ctx context.Context, node string, ready bool) error {
	if err := s.known(node); err != nil {
		return err
	}
	s.mu.Lock()
	s.notReady[node] = !ready
	s.mu.Unlock()
	s.opts.Logf("nodesim: node %s ready=%t on command", node, ready)
	// The kubelet stops (or starts again): the node lifecycle controller
	// notices the stale Lease by itself.
	return s.setKwokManaged(ctx, node, ready)
}

// RaiseXID reports XID error xid on node: condition GpuXidError=True and a
// Warning event with reason XidError.
func (s *Sim) RaiseXID(ctx context.Context, node string, xid int) error {
	meaning := xidMeanings[xid]
	if meaning == "" {
		meaning = "GPU error"
	}
	msg := "Xid " + strconv.Itoa(xid) + ": " + meaning + " (GPU 0, simulated)"
	return s.raise(ctx, node, FaultXID, ReasonXID, msg)
}

// RaiseECC reports an uncorrectable ECC error on node: condition
// GpuEccError=True and a Warning event with reason EccError.
func (s *Sim) RaiseECC(ctx context.Context, node string) error {
	return s.raise(ctx, node, FaultECC, ReasonECC, "uncorrectable (double bit) ECC error on GPU 0 (simulated)")
}

// ClearFault sets fault's condition on node back to False.
func (s *Sim) ClearFault(ctx context.Context, node string, fault Fault) error {
	if err := s.known(node); err != nil {
		return err
	}
	now := metav1.NewTime(s.opts.Clock.Now())
	s.opts.Logf("nodesim: node %s: %s cleared", node, fault)
	return s.updateNodeStatus(ctx, node, func(n *corev1.Node) bool {
		setCondition(n, corev1.NodeCondition{
			Type: corev1.NodeConditionType(fault), Status: corev1.ConditionFalse,
			Reason: "No" + string(fault), Message: "no error (simulated)",
			LastHeartbeatTime: now, LastTransitionTime: now,
		})
		return true
	})
}

func (s *Sim) raise(ctx context.Context, node string, fault Fault, reason, msg string) error {
	if err := s.known(node); err != nil {
		return err
	}
	now := metav1.NewTime(s.opts.Clock.Now())
	if err := s.updateNodeStatus(ctx, node, func(n *corev1.Node) bool {
		setCondition(n, corev1.NodeCondition{
			Type: corev1.NodeConditionType(fault), Status: corev1.ConditionTrue,
			Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now,
		})
		return true
	}); err != nil {
		return err
	}
	n := &corev1.Node{}
	if err := s.c.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
		return fmt.Errorf("node %s: %w", node, err)
	}
	// Node events live in the default namespace, as the kubelet's do.
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s.%x", node, now.UnixNano()),
			Namespace: metav1.NamespaceDefault,
		},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Node", APIVersion: "v1", Name: node, UID: n.UID,
		},
		Reason:              reason,
		Message:             msg,
		Type:                corev1.EventTypeWarning,
		Source:              corev1.EventSource{Component: EventSource, Host: node},
		ReportingController: EventSource,
		ReportingInstance:   node,
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
	}
	if err := s.c.Create(ctx, ev); err != nil {
		return fmt.Errorf("node %s: create %s event: %w", node, reason, err)
	}
	s.opts.Logf("nodesim: node %s: %s: %s", node, reason, msg)
	return nil
}

// known fails for nodes the simulator does not own.
func (s *Sim) known(node string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.pools[node]; !ok {
		return fmt.Errorf("node %s is not simulated here", node)
	}
	return nil
}
