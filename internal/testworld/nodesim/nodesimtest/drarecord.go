package nodesimtest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/dra"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// DRASample is what a DRARecorder saw of one node in one sample. The
// API server cannot read several kinds at one instant, so a sample reads
// the node twice, Before and After the rest: what the lists show held
// throughout any stretch where both readings agree, and an order is only
// judged where the readings bracket it.
type DRASample struct {
	// Before and After are the node's gpufleet labels read just before and
	// just after the claims, the plugin pods and the slices.
	Before, After NodeLabels
	// ClaimsHeld are the GPU claims allocated on the node and reserved for
	// a consumer (namespace/name).
	ClaimsHeld []string
	// PluginRunning: a DRA kubelet plugin pod is on the node; PluginReady:
	// one not being deleted is Ready.
	PluginRunning, PluginReady bool
	// Slices are the driver versions the node's gpu.nvidia.com slices
	// publish (SliceVersions).
	Slices []string
}

// NodeLabels are a node's gpufleet labels at one reading.
type NodeLabels struct {
	Phase, Driver, Plugin string
}

func labelsOf(n *corev1.Node) NodeLabels {
	return NodeLabels{Phase: n.Labels[v1alpha1.LabelPhase], Driver: n.Labels[v1alpha1.LabelDriver], Plugin: n.Labels[v1alpha1.LabelDRAPlugin]}
}

// DRARecorder samples the DRA state of some nodes every interval until
// stopped: the state a driver swap's order is judged on (SwapOrderProblems).
type DRARecorder struct {
	mu      sync.Mutex
	samples map[string][]DRASample
	stopC   chan struct{}
	done    chan struct{}
}

// RecordDRA starts a recorder of nodes in the cluster of c.
func RecordDRA(c client.Client, every time.Duration, nodes ...string) *DRARecorder {
	r := &DRARecorder{samples: map[string][]DRASample{}, stopC: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for {
			r.sample(c, nodes)
			select {
			case <-r.stopC:
				// One more, begun after stop: under load a sample takes
				// a while, and the one in flight when the caller saw the
				// rollout end may predate the state it ended in.
				r.sample(c, nodes)
				return
			case <-time.After(every):
			}
		}
	}()
	return r
}

func (r *DRARecorder) sample(c client.Client, nodes []string) {
	ctx := context.Background()
	var before, after corev1.NodeList
	var claims resourcev1.ResourceClaimList
	var pods corev1.PodList
	var list resourcev1.ResourceSliceList
	if c.List(ctx, &before) != nil || c.List(ctx, &claims) != nil || c.List(ctx, &pods, client.InNamespace(DRANamespace)) != nil ||
		c.List(ctx, &list) != nil || c.List(ctx, &after) != nil {
		return
	}
	for _, node := range nodes {
		b := slices.IndexFunc(before.Items, func(n corev1.Node) bool { return n.Name == node })
		a := slices.IndexFunc(after.Items, func(n corev1.Node) bool { return n.Name == node })
		if b < 0 || a < 0 {
			continue
		}
		s := DRASample{Before: labelsOf(&before.Items[b]), After: labelsOf(&after.Items[a])}
		for i := range claims.Items {
			cl := &claims.Items[i]
			if dra.AllocatedNode(cl) == node && len(cl.Status.ReservedFor) > 0 && planner.GPUDevices(cl, v1alpha1.DefaultDRADrivers) > 0 {
				s.ClaimsHeld = append(s.ClaimsHeld, cl.Namespace+"/"+cl.Name)
			}
		}
		for i := range pods.Items {
			if p := &pods.Items[i]; p.Spec.NodeName == node {
				s.PluginRunning = true
				s.PluginReady = s.PluginReady || p.DeletionTimestamp == nil && planner.PodReady(p)
			}
		}
		s.Slices = sliceVersions(list.Items, node)
		r.mu.Lock()
		r.samples[node] = append(r.samples[node], s)
		r.mu.Unlock()
	}
}

// Stop stops the recorder after one last sample; it may be called again.
func (r *DRARecorder) Stop() {
	select {
	case <-r.stopC:
	default:
		close(r.stopC)
	}
	<-r.done
}

// Samples are node's samples, oldest first.
func (r *DRARecorder) Samples(node string) []DRASample {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.samples[node])
}

// SliceVersions are the driver versions node's gpu.nvidia.com slices
// publish, of every generation, each once, sorted.
func SliceVersions(ctx context.Context, c client.Client, node string) ([]string, error) {
	var list resourcev1.ResourceSliceList
	if err := c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list resource slices: %w", err)
	}
	return sliceVersions(list.Items, node), nil
}

func sliceVersions(list []resourcev1.ResourceSlice, node string) []string {
	var out []string
	for _, s := range list {
		if s.Spec.NodeName == nil || *s.Spec.NodeName != node || s.Spec.Driver != v1alpha1.DRADriverGPU {
			continue
		}
		for i := range s.Spec.Devices {
			if v := dra.DeviceDriverVersion(&s.Spec.Devices[i], s.Spec.Driver); v != "" && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	slices.Sort(out)
	return out
}

// SwapOrderProblems judges one node's samples of a driver swap to target
// by the order a DRA node's swap must keep: no claim held once its plugin
// is paused, the plugin paused before the driver label moves, neither a
// claim held nor the plugin running while the label has moved and the
// plugin is still paused, and at Done the plugin back, Ready, with the
// slices publishing target only. It returns what broke the order; none
// when the samples show the swap kept it. A sample only counts against
// the swap where its two readings of the node bracket what it judges, so
// a slow sample cannot make a sound swap look wrong.
func SwapOrderProblems(samples []DRASample, target string) []string {
	// The readings in the order they were taken: Before, After, Before...
	var seen []NodeLabels
	for _, s := range samples {
		seen = append(seen, s.Before, s.After)
	}
	first := func(from int, cond func(NodeLabels) bool) int {
		if k := slices.IndexFunc(seen[from:], cond); k >= 0 {
			return from + k
		}
		return -1
	}
	moved := first(0, func(l NodeLabels) bool { return l.Driver == target })
	paused := first(0, func(l NodeLabels) bool { return l.Plugin == v1alpha1.DRAPluginPaused })
	done := -1 // the first sample Done before its lists, once the label moved: a node may be Done from an earlier rollout
	if moved >= 0 {
		done = slices.IndexFunc(samples[(moved+1)/2:], func(s DRASample) bool {
			return s.Before.Phase == string(v1alpha1.NodeDone) && s.Before.Driver == target
		})
		if done >= 0 {
			done += (moved + 1) / 2
		}
	}
	if moved < 0 || paused < 0 || done < 0 {
		return []string{fmt.Sprintf("the recorder saw the label move at reading %d, the plugin paused at reading %d, Done at sample %d (of %d samples)", moved, paused, done, len(samples))}
	}
	var out []string
	if paused > moved {
		out = append(out, fmt.Sprintf("the plugin was paused (reading %d) after the driver label moved (reading %d)", paused, moved))
	}
	for i, s := range samples {
		if s.Before.Plugin == v1alpha1.DRAPluginPaused && len(s.ClaimsHeld) > 0 {
			out = append(out, fmt.Sprintf("sample %d: the plugin was stopped while claims %v were held", i, s.ClaimsHeld))
			break
		}
	}
	// Until the plugin is let back: a rollback pauses it again, running.
	back := first(moved, func(l NodeLabels) bool { return l.Plugin != v1alpha1.DRAPluginPaused })
	for i, s := range samples {
		if back >= 0 && 2*i+1 >= back {
			break
		}
		if s.Before.Driver == target && s.After.Plugin == v1alpha1.DRAPluginPaused && (s.PluginRunning || len(s.ClaimsHeld) > 0) {
			out = append(out, fmt.Sprintf("sample %d: the driver label moved with the plugin running %t, claims held %v", i, s.PluginRunning, s.ClaimsHeld))
			break
		}
	}
	want := []string{planner.SemverForm(target)}
	if s := samples[done]; !s.PluginReady || !slices.Equal(s.Slices, want) || s.Before.Plugin != "" {
		out = append(out, fmt.Sprintf("at Done: plugin Ready %t, slices %v, plugin label %q; want Ready, %v, none", s.PluginReady, s.Slices, s.Before.Plugin, want))
	}
	return out
}
