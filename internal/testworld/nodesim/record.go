package nodesim

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Reasons of the Events the simulator records on a node (in the default
// namespace, as the kubelet's), so that a test can read back the order
// in which a node's drivers came up: see [InstallRecords].
const (
	// ReasonOFEDReady: the node's OFED pod loaded its version.
	ReasonOFEDReady = "OFEDDriverLoaded"
	// ReasonDriverInstall: a GPU driver pod began installing its version.
	ReasonDriverInstall = "GPUDriverInstallStarted"
)

// recorder is the component name on the simulator's install events.
const recorder = "nodesim.gpufleet.io"

// annotationVersion on a recorded Event is the driver version it is about.
const annotationVersion = "nodesim.gpufleet.io/version"

// record writes an Event about node n: reason, with the driver version and
// the pod, at now to the microsecond (eventTime).
func (s *Sim) record(ctx context.Context, n *corev1.Node, reason, version, pod, msg string, now time.Time) error {
	t := metav1.NewTime(now)
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:        fmt.Sprintf("%s.%x.%s", n.Name, now.UnixNano(), strings.ToLower(reason)),
			Namespace:   metav1.NamespaceDefault,
			Annotations: map[string]string{annotationVersion: version},
		},
		InvolvedObject:      corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: n.Name, UID: n.UID},
		Reason:              reason,
		Message:             msg + " (pod " + pod + ")",
		Type:                corev1.EventTypeNormal,
		Source:              corev1.EventSource{Component: recorder, Host: n.Name},
		ReportingController: recorder,
		ReportingInstance:   n.Name,
		Action:              reason,
		Related:             &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod},
		EventTime:           metav1.NewMicroTime(now),
		FirstTimestamp:      t,
		LastTimestamp:       t,
		Count:               1,
	}
	if err := s.c.Create(ctx, ev); err != nil {
		return fmt.Errorf("node %s: record %s: %w", n.Name, reason, err)
	}
	return nil
}

// InstallRecord is one recorded step of a node's drivers coming up.
type InstallRecord struct {
	// Node is the node's name.
	Node string
	// Reason is [ReasonOFEDReady] or [ReasonDriverInstall].
	Reason string
	// Version is the OFED or GPU driver version.
	Version string
	// Pod is the OFED or GPU driver pod's name.
	Pod string
	// At is when it happened, to the microsecond.
	At time.Time
}

// InstallRecords reads back, from the cluster's Events, every OFED load
// and GPU driver install the simulator recorded, oldest first: a test
// checks with it that on every node the OFED driver came up before the
// GPU driver install that needs it began.
func InstallRecords(ctx context.Context, c client.Reader) ([]InstallRecord, error) {
	events := &corev1.EventList{}
	if err := c.List(ctx, events, client.InNamespace(metav1.NamespaceDefault)); err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	var out []InstallRecord
	for _, ev := range events.Items {
		if ev.ReportingController != recorder || (ev.Reason != ReasonOFEDReady && ev.Reason != ReasonDriverInstall) {
			continue
		}
		r := InstallRecord{Node: ev.InvolvedObject.Name, Reason: ev.Reason, Version: ev.Annotations[annotationVersion], At: ev.EventTime.Time}
		if ev.Related != nil {
			r.Pod = ev.Related.Name
		}
		out = append(out, r)
	}
	slices.SortStableFunc(out, func(a, b InstallRecord) int { return a.At.Compare(b.At) })
	return out, nil
}
