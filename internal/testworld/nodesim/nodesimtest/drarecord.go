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

// DRASample is what a DRARecorder saw of one node at one instant.
type DRASample struct {
	// Phase, DriverLabel and PluginLabel are the node's gpufleet labels.
	Phase, DriverLabel, PluginLabel string
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
	var claims resourcev1.ResourceClaimList
	var pods corev1.PodList
	var list resourcev1.ResourceSliceList
	if c.List(ctx, &claims) != nil || c.List(ctx, &pods, client.InNamespace(DRANamespace)) != nil || c.List(ctx, &list) != nil {
		return
	}
	for _, node := range nodes {
		n := &corev1.Node{}
		if c.Get(ctx, client.ObjectKey{Name: node}, n) != nil {
			continue
		}
		s := DRASample{Phase: n.Labels[v1alpha1.LabelPhase], DriverLabel: n.Labels[v1alpha1.LabelDriver], PluginLabel: n.Labels[v1alpha1.LabelDRAPlugin]}
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
// by the order a DRA node's swap must keep: no claim held when its plugin
// is paused, the plugin paused before the driver label moves, no claim
// held nor plugin running once it has, and at Done the plugin back, Ready,
// with the slices publishing target only. It returns what broke the order;
// none when the samples show the swap kept it.
func SwapOrderProblems(samples []DRASample, target string) []string {
	first := func(cond func(DRASample) bool) int { return slices.IndexFunc(samples, cond) }
	moved := first(func(s DRASample) bool { return s.DriverLabel == target })
	paused := first(func(s DRASample) bool { return s.PluginLabel == v1alpha1.DRAPluginPaused })
	done := -1 // the first Done after the label moved: a node may be Done from an earlier rollout
	if moved >= 0 {
		if k := slices.IndexFunc(samples[moved:], func(s DRASample) bool { return s.Phase == string(v1alpha1.NodeDone) }); k >= 0 {
			done = moved + k
		}
	}
	if moved < 0 || paused < 0 || done < 0 {
		return []string{fmt.Sprintf("the recorder saw the label move at sample %d, the plugin paused at %d, Done at %d (of %d)", moved, paused, done, len(samples))}
	}
	var out []string
	if s := samples[paused]; len(s.ClaimsHeld) > 0 {
		out = append(out, fmt.Sprintf("the plugin was stopped while claims %v were held", s.ClaimsHeld))
	}
	if paused > moved {
		out = append(out, fmt.Sprintf("the plugin was paused (sample %d) after the driver label moved (sample %d)", paused, moved))
	}
	if s := samples[moved]; s.PluginRunning || len(s.ClaimsHeld) > 0 {
		out = append(out, fmt.Sprintf("sample %d: the driver label moved with the plugin running %t, claims held %v", moved, s.PluginRunning, s.ClaimsHeld))
	}
	want := []string{planner.SemverForm(target)}
	if s := samples[done]; !s.PluginReady || !slices.Equal(s.Slices, want) || s.PluginLabel != "" {
		out = append(out, fmt.Sprintf("at Done: plugin Ready %t, slices %v, plugin label %q; want Ready, %v, none", s.PluginReady, s.Slices, s.PluginLabel, want))
	}
	return out
}
