package controller

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// BenchmarkRollout1000 rolls a driver over 1,000 nodes on the real API
// server and reports wall time, the controller's API writes per node and
// the test process's peak memory. It is a benchmark, not a timed test:
//
//	go test -run '^$' -bench Rollout1000 -benchtime 1x ./internal/controller/
//
// The nodes are played by a light agent (benchAgent) rather than the node
// simulator, whose per-node passes are built for a handful of nodes: here
// the driver installs at once, so the figures are the controller's own.
func BenchmarkRollout1000(b *testing.B) {
	const nodes = 1000
	env(b)
	ctx := context.Background()
	for i := range b.N {
		b.StopTimer()
		name := fmt.Sprintf("bench-%d", i)
		agent := newBenchAgent(b, name, nodes)
		var writes atomic.Int64
		startController(b, RealClock{}, func(c client.Client) client.Client { return &countingClient{Client: c, writes: &writes} })
		ro := newRollout(name, name, oldDriver, newDriver)
		ro.Spec.ParallelNodes = 100
		ro.Spec.MaxUnavailable = ptr.To(intstr.FromString("10%"))
		ro.Spec.Soak = metav1.Duration{Duration: time.Second}
		aCtx, stopAgent := context.WithCancel(ctx)
		go agent.run(aCtx)
		b.StartTimer()
		start := time.Now()
		if err := suite.c.Create(ctx, ro); err != nil {
			b.Fatal(err)
		}
		waitFor(b, 20*time.Minute, "rollout completed", func() (bool, string) {
			got := getRollout(b, name)
			return got.Status.Phase == v1alpha1.PhaseCompleted, got.Status.Progress
		})
		elapsed := time.Since(start)
		b.StopTimer()
		stopAgent()
		b.ReportMetric(elapsed.Seconds(), "wall-s")
		b.ReportMetric(float64(writes.Load())/nodes, "writes/node")
		b.ReportMetric(float64(countEvents(b, name))/nodes, "events/node")
		b.ReportMetric(float64(peakRSS())/(1<<20), "peak-rss-MiB")
		b.Logf("%d nodes in %s: %d API writes by the controller (%.1f per node), peak RSS %d MiB",
			nodes, elapsed.Round(time.Millisecond), writes.Load(), float64(writes.Load())/nodes, peakRSS()>>20)
	}
}

// countingClient counts the writes the controller makes.
type countingClient struct {
	client.Client
	writes *atomic.Int64
}

func (c *countingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	c.writes.Add(1)
	return c.Client.Create(ctx, obj, opts...)
}

func (c *countingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	c.writes.Add(1)
	return c.Client.Update(ctx, obj, opts...)
}

func (c *countingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	c.writes.Add(1)
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func (c *countingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	c.writes.Add(1)
	return c.Client.Delete(ctx, obj, opts...)
}

func (c *countingClient) Status() client.SubResourceWriter {
	return &countingWriter{SubResourceWriter: c.Client.Status(), writes: c.writes}
}

func (c *countingClient) SubResource(sub string) client.SubResourceClient {
	return &countingSub{SubResourceClient: c.Client.SubResource(sub), writes: c.writes}
}

type countingWriter struct {
	client.SubResourceWriter
	writes *atomic.Int64
}

func (w *countingWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	w.writes.Add(1)
	return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

func (w *countingWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	w.writes.Add(1)
	return w.SubResourceWriter.Update(ctx, obj, opts...)
}

type countingSub struct {
	client.SubResourceClient
	writes *atomic.Int64
}

func (s *countingSub) Create(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceCreateOption) error {
	s.writes.Add(1)
	return s.SubResourceClient.Create(ctx, obj, sub, opts...)
}

func countEvents(b *testing.B, rollout string) int {
	var list corev1.EventList
	if err := suite.c.List(context.Background(), &list); err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, e := range list.Items {
		if e.InvolvedObject.Name == rollout {
			n++
		}
	}
	return n
}

// peakRSS is the process's peak resident memory (VmHWM), in bytes.
func peakRSS() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// benchAgent plays kubelet and driver for many nodes with two lists a pass:
// a node whose driver label changed gets a Ready driver pod of that version
// and reports the version at once.
type benchAgent struct {
	b    *testing.B
	pool string
	ns   string
}

func newBenchAgent(b *testing.B, pool string, n int) *benchAgent {
	ctx := context.Background()
	a := &benchAgent{b: b, pool: pool, ns: pool + "-driver"}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: a.ns}}
	if err := suite.c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
	sem := make(chan struct{}, 16)
	errs := make(chan error, n)
	for i := range n {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			errs <- a.createNode(ctx, fmt.Sprintf("%s-%04d", pool, i))
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	return a
}

func (a *benchAgent) createNode(ctx context.Context, name string) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"gpufleet.io/pool": a.pool, "nvidia.com/gpu.present": "true", LabelDriver: oldDriver, LabelDriverVersion: oldDriver,
	}}}
	if err := suite.c.Create(ctx, node); err != nil {
		return err
	}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if err := suite.c.Status().Update(ctx, node); err != nil {
		return err
	}
	return a.createDriverPod(ctx, name, oldDriver)
}

func (a *benchAgent) createDriverPod(ctx context.Context, node, version string) error {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: node + "-" + strings.ReplaceAll(version, ".", "-"), Namespace: a.ns,
			Labels: map[string]string{"app.kubernetes.io/component": "nvidia-driver", "bench/version": version},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "driver",
				UID: "00000000-0000-0000-0000-000000000001", Controller: ptr.To(true)}},
		},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "driver", Image: "driver:" + version}}},
	}
	if err := suite.c.Create(ctx, p); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	now := metav1.Now()
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}}
	return suite.c.Status().Update(ctx, p)
}

func (a *benchAgent) run(ctx context.Context) {
	for ctx.Err() == nil {
		if err := a.pass(ctx); err != nil && ctx.Err() == nil {
			a.b.Logf("bench agent: %v", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(300 * time.Millisecond):
		}
	}
}

func (a *benchAgent) pass(ctx context.Context) error {
	var nodes corev1.NodeList
	if err := suite.c.List(ctx, &nodes, client.MatchingLabels{"gpufleet.io/pool": a.pool}); err != nil {
		return err
	}
	var pods corev1.PodList
	if err := suite.c.List(ctx, &pods, client.InNamespace(a.ns)); err != nil {
		return err
	}
	byNode := map[string]*corev1.Pod{}
	for i := range pods.Items {
		byNode[pods.Items[i].Spec.NodeName] = &pods.Items[i]
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		want := n.Labels[LabelDriver]
		if p := byNode[n.Name]; p != nil && p.Labels["bench/version"] != want {
			if err := suite.c.Delete(ctx, p, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
				return err
			}
			if err := a.createDriverPod(ctx, n.Name, want); err != nil {
				return err
			}
		}
		if n.Labels[LabelDriverVersion] != want {
			patch := client.MergeFrom(n.DeepCopy())
			n.Labels[LabelDriverVersion] = want
			if err := suite.c.Patch(ctx, n, patch); err != nil {
				return err
			}
		}
	}
	return nil
}
