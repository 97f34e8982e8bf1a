package gate

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/testbed"
)

// gpuOperatorCRDs is the GPU Operator's CRD folder of the release the
// example's stable release installs, from the shared operator test data.
func gpuOperatorCRDs(t *testing.T) string {
	t.Helper()
	dir := "../../../shared/operators/gpu-operator/v25.3.4/deployments/gpu-operator/crds"
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("needs the real GPU Operator CRDs in ../shared/operators (absent here): %v", err)
	}
	return dir
}

// startWave starts the prod-h100 wave of the example fleet (two clusters)
// on the testbed and arranges each as converged on the stable release.
func startWave(t *testing.T) (*testbed.Testbed, *fleet.Fleet) {
	t.Helper()
	f, err := fleet.Load("../../examples/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	f.Stack = nil
	crds := []string{gpuOperatorCRDs(t), "../../config/crd/bases", "testdata/helmrelease-crd.yaml"}
	if bins, err := testbed.FindBinaries(); err == nil {
		// Flux's own CRDs, without running Flux: the gate only reads.
		crds = append(crds, bins.FluxCRDDir())
	}
	tb := testbed.New(t, testbed.Options{Clusters: []string{"prod-h100-a", "prod-h100-b"}, CRDDirs: crds, Scheme: Scheme()})
	for _, c := range tb.Clusters() {
		arrangeHealthy(t, c.Client, Expect(f, c.Name, rev))
	}
	return tb, f
}

// arrangeHealthy creates the objects of a converged cluster with the
// statuses their controllers would set, through the real API server.
func arrangeHealthy(t *testing.T, c client.Client, e Expected) {
	t.Helper()
	ctx := t.Context()
	o := healthy(e)
	create := func(u *unstructured.Unstructured, apiVersion, kind, ns string, spec map[string]any) {
		t.Helper()
		status := u.Object["status"]
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "spec": spec}}
		obj.SetName(u.GetName())
		obj.SetNamespace(ns)
		if err := c.Create(ctx, obj); err != nil {
			t.Fatalf("create %s %s: %v", kind, u.GetName(), err)
		}
		if st, ok := status.(map[string]any); ok {
			st["observedGeneration"] = obj.GetGeneration()
			obj.Object["status"] = st
			if err := c.Status().Update(ctx, obj); err != nil {
				t.Fatalf("status of %s %s: %v", kind, u.GetName(), err)
			}
		}
	}
	for _, ns := range []string{"flux-system", "gpu-operator", "nvidia-network-operator"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	for name, u := range o.Kustomizations {
		u.SetName(name)
		create(u, "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", map[string]any{
			"interval": "10m", "path": "./clusters/x/" + name, "prune": true, "sourceRef": map[string]any{"kind": "GitRepository", "name": "flux-system"},
		})
	}
	for key, u := range o.HelmReleases {
		ns, name, _ := cutKey(key)
		u.SetName(name)
		create(u, "helm.toolkit.fluxcd.io/v2", "HelmRelease", ns, map[string]any{"interval": "30m"})
	}
	o.ClusterPolicy.SetName("cluster-policy")
	empty := map[string]any{}
	create(o.ClusterPolicy, "nvidia.com/v1", "ClusterPolicy", "", map[string]any{
		"daemonsets": empty, "dcgm": empty, "dcgmExporter": empty, "devicePlugin": empty, "driver": empty,
		"gfd": empty, "nodeStatusExporter": empty, "operator": empty, "toolkit": empty,
	})
	for _, u := range o.NVIDIADrivers {
		create(u, "nvidia.com/v1alpha1", "NVIDIADriver", "", map[string]any{"driverType": "gpu", "image": "driver"})
	}
	for i := range o.Nodes {
		n := o.Nodes[i].DeepCopy()
		status := n.Status
		if err := c.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		n.Status = status
		if err := c.Status().Update(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	dr := &v1alpha1.DriverRollout{
		ObjectMeta: metav1.ObjectMeta{Name: e.Rollout},
		Spec: v1alpha1.DriverRolloutSpec{
			TargetVersion: e.Release.Driver, PreviousVersion: e.Release.Driver, FailureBudget: 1,
			NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"nvidia.com/gpu.present": "true"}},
		},
	}
	if err := c.Create(ctx, dr); err != nil {
		t.Fatalf("create DriverRollout: %v", err)
	}
	dr.Status = o.Rollout.Status
	dr.Status.ObservedGeneration = dr.Generation
	dr.Status.Conditions[0].LastTransitionTime = metav1.Now()
	dr.Status.Conditions[0].Reason = "AllNodesDone"
	if err := c.Status().Update(ctx, dr); err != nil {
		t.Fatalf("DriverRollout status: %v", err)
	}
}

func runGate(t *testing.T, f *fleet.Fleet, kubeconfig string, timeout time.Duration, clusters ...string) *Report {
	t.Helper()
	return Run(t.Context(), Options{Fleet: f, Clusters: clusters, Revision: rev, Kubeconfig: kubeconfig, Timeout: timeout, Now: time.Now})
}

func TestGateOnRealClusters(t *testing.T) {
	tb, f := startWave(t)
	a := tb.Cluster("prod-h100-a").Client

	t.Run("a healthy wave passes, writing nothing", func(t *testing.T) {
		before := resourceVersions(t, a)
		rep := runGate(t, f, tb.Kubeconfig, 20*time.Second, "prod-h100-a", "prod-h100-b")
		if rep.Verdict() != Pass {
			t.Fatalf("verdict %s: %+v", rep.Verdict(), rep.Failed())
		}
		if after := resourceVersions(t, a); after != before {
			t.Errorf("the gate wrote to the cluster: resource versions %s → %s", before, after)
		}
	})

	t.Run("a node with an XID fails the gate, naming it", func(t *testing.T) {
		var n corev1.Node
		if err := a.Get(t.Context(), client.ObjectKey{Name: "h100-c"}, &n); err != nil {
			t.Fatal(err)
		}
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: "GpuXidError", Status: corev1.ConditionTrue, Reason: "Xid79", Message: "GPU has fallen off the bus"})
		if err := a.Status().Update(t.Context(), &n); err != nil {
			t.Fatal(err)
		}
		rep := runGate(t, f, tb.Kubeconfig, 20*time.Second, "prod-h100-a", "prod-h100-b")
		failed := rep.Failed()
		if rep.Verdict() != Fail || len(failed) != 1 || failed[0].Cluster != "prod-h100-a" || !strings.Contains(failed[0].Message, "h100-c: GpuXidError") {
			t.Errorf("verdict %s, failed %+v", rep.Verdict(), failed)
		}
	})

	t.Run("a Kustomization at a stale revision fails the gate", func(t *testing.T) {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("kustomize.toolkit.fluxcd.io/v1")
		u.SetKind("Kustomization")
		if err := tb.Cluster("prod-h100-b").Client.Get(t.Context(), client.ObjectKey{Namespace: "flux-system", Name: "config"}, u); err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedField(u.Object, "main@sha1:00000000deadbeef", "status", "lastAppliedRevision")
		if err := tb.Cluster("prod-h100-b").Client.Status().Update(t.Context(), u); err != nil {
			t.Fatal(err)
		}
		rep := runGate(t, f, tb.Kubeconfig, 20*time.Second, "prod-h100-b")
		failed := rep.Failed()
		if rep.Verdict() != Fail || len(failed) != 1 || failed[0].Name != "flux/Kustomization/config" || failed[0].Observed != "Current at 00000000dead" {
			t.Errorf("verdict %s, failed %+v", rep.Verdict(), failed)
		}
	})

	t.Run("a context missing from the kubeconfig cannot be checked", func(t *testing.T) {
		f2 := *f
		f2.Clusters = map[string]*fleet.Cluster{}
		for k, v := range f.Clusters {
			c := *v
			f2.Clusters[k] = &c
		}
		f2.Clusters["prod-h100-b"].Context = "prod-h100-z"
		rep := runGate(t, &f2, tb.Kubeconfig, 10*time.Second, "prod-h100-b")
		if rep.Verdict() != Unknown || !strings.Contains(rep.Checks[0].Message, `context "prod-h100-z" is not in the kubeconfig`) {
			t.Errorf("verdict %s, checks %+v", rep.Verdict(), rep.Checks)
		}
	})

	t.Run("an unreachable cluster fails closed while the others are checked", func(t *testing.T) {
		kc := kubeconfigWithServer(t, tb.Kubeconfig, "prod-h100-b", "https://"+closedPort(t))
		rep := runGate(t, f, kc, 10*time.Second, "prod-h100-a", "prod-h100-b")
		var unknown []Check
		for _, c := range rep.Checks {
			if c.Status == Unknown {
				unknown = append(unknown, c)
			}
		}
		if len(unknown) != 1 || unknown[0].Cluster != "prod-h100-b" || !strings.Contains(unknown[0].Message, "connection refused") {
			t.Errorf("want prod-h100-b unknown (connection refused), got %+v", unknown)
		}
		if rep.Verdict() == Pass {
			t.Error("an unreachable cluster must never pass")
		}
	})

	t.Run("a cluster that does not answer times out", func(t *testing.T) {
		kc := kubeconfigWithServer(t, tb.Kubeconfig, "prod-h100-b", "https://"+silentServer(t))
		start := time.Now()
		rep := runGate(t, f, kc, 2*time.Second, "prod-h100-b")
		if rep.Verdict() != Unknown || !strings.Contains(rep.Checks[0].Message, "timed out after 2s") {
			t.Errorf("verdict %s, checks %+v", rep.Verdict(), rep.Checks)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("the per-cluster timeout did not bound the gate: %s", took)
		}
	})
}

// resourceVersions sums up the cluster's objects the gate reads, to show
// that it changed none of them.
func resourceVersions(t *testing.T, c client.Client) string {
	t.Helper()
	var nodes corev1.NodeList
	if err := c.List(t.Context(), &nodes); err != nil {
		t.Fatal(err)
	}
	var drs v1alpha1.DriverRolloutList
	if err := c.List(t.Context(), &drs); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, n := range nodes.Items {
		b.WriteString(n.ResourceVersion + ",")
	}
	for _, d := range drs.Items {
		b.WriteString(d.ResourceVersion + ",")
	}
	return b.String()
}

func kubeconfigWithServer(t *testing.T, path, context, server string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Clusters[cfg.Contexts[context].Cluster].Server = server
	out := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// silentServer accepts connections on loopback and never answers.
func silentServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() { <-ctx.Done(); conn.Close() }()
		}
	}()
	return l.Addr().String()
}
