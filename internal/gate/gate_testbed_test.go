package gate_test

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/dra"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/gate/gatetest"
	"github.com/gpufleet/gpufleet/internal/testworld/nodesim"
	"github.com/gpufleet/gpufleet/internal/testworld/testbed"
)

const rev = "0123456789abcdef0123456789abcdef01234567"

// startWave starts the prod-h100 wave of the example fleet (two clusters)
// on the testbed, each converged on the stable release.
func startWave(t *testing.T) (*testbed.Testbed, *fleet.Fleet, map[string]*nodesim.Sim) {
	t.Helper()
	f, err := fleet.Load("../../examples/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	f.Stack = nil // the stack's Kustomizations are checked like the others
	crds, err := gatetest.CRDDirs("../..", f.Releases[f.Promotion.Stable].GPUOperator)
	if err != nil {
		t.Skipf("needs the real GPU Operator CRDs: %v", err)
	}
	tb := testbed.New(t, testbed.Options{Clusters: []string{"prod-h100-a", "prod-h100-b"}, CRDDirs: crds, Scheme: testbed.NewScheme(), Kube: true, Kwok: true, AuditLog: true})
	sims := map[string]*nodesim.Sim{}
	for _, c := range tb.Clusters() {
		if sims[c.Name], err = gatetest.Arrange(t.Context(), c.Client, gate.Expect(f, c.Name, rev)); err != nil {
			t.Fatal(err)
		}
	}
	return tb, f, sims
}

func runGate(t *testing.T, f *fleet.Fleet, kubeconfig string, timeout time.Duration, clusters ...string) *gate.Report {
	t.Helper()
	return gate.Run(t.Context(), gate.Options{Fleet: f, Clusters: clusters, Revision: rev, Kubeconfig: kubeconfig, Timeout: timeout, Now: time.Now})
}

// TestGateOnRealClusters arranges a healthy wave on two real API servers,
// then breaks one thing at a time (and mends it after) and checks the gate
// names exactly that check, with its message.
func TestGateOnRealClusters(t *testing.T) {
	tb, f, sims := startWave(t)
	ctx := t.Context()
	b := tb.Cluster("prod-h100-b").Client
	const ks, hr = "kustomize.toolkit.fluxcd.io/v1", "helm.toolkit.fluxcd.io/v2"

	t.Run("a healthy wave passes, writing nothing", func(t *testing.T) {
		from := time.Now()
		rep := runGate(t, f, tb.Kubeconfig, 20*time.Second, "prod-h100-a", "prod-h100-b")
		if rep.Verdict() != gate.Pass {
			t.Fatalf("verdict %s: %+v", rep.Verdict(), rep.Failed())
		}
		// kwok and the controller-manager write nodes and pods all the
		// time: the API servers' audit logs tell their requests (by user
		// agent) from this process's, which in this window are the gate's.
		for _, c := range tb.Clusters() {
			reqs, err := c.Requests(from, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			var gateReqs testbed.Requests
			for program, r := range reqs {
				if !slices.Contains([]string{"kwok", "kube-controller-manager", "kube-scheduler", "kube-apiserver"}, program) {
					gateReqs.Reads += r.Reads
					gateReqs.Writes += r.Writes
				}
			}
			if gateReqs.Reads == 0 || gateReqs.Writes != 0 {
				t.Errorf("%s: the gate read %d times and wrote %d times; want reads and no write (requests by program: %v)", c.Name, gateReqs.Reads, gateReqs.Writes, reqs)
			}
		}
	})

	setKS := func(name string, status bool, path []string, v any) func(*testing.T) {
		return func(t *testing.T) {
			if err := gatetest.Update(ctx, b, ks, "Kustomization", "flux-system", name, status, func(u *unstructured.Unstructured) { _ = unstructured.SetNestedField(u.Object, v, path...) }); err != nil {
				t.Fatal(err)
			}
		}
	}
	setNode := func(node string, mutate func(*corev1.Node)) func(*testing.T) {
		return func(t *testing.T) {
			var n corev1.Node
			if err := b.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
				t.Fatal(err)
			}
			base := n.DeepCopy()
			mutate(&n)
			// A merge patch, as kubectl sends: kwok and the node lifecycle
			// controller write nodes too, so an update could conflict.
			if err := b.Patch(ctx, &n, client.MergeFrom(base)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// NVIDIA's GPU DRA driver publishes a node's GPUs with the driver
	// version, in semver: the gate reads it beside GFD's label.
	createSlice := func(node, driver, version string) func(*testing.T) {
		return func(t *testing.T) {
			if err := b.Create(ctx, gpuSlice(node, driver, version)); err != nil {
				t.Fatal(err)
			}
		}
	}
	deleteSlice := func(node, driver, version string) func(*testing.T) {
		return func(t *testing.T) {
			if err := b.Delete(ctx, gpuSlice(node, driver, version)); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("GPU DRA slices that agree with the nodes' labels pass", func(t *testing.T) {
		for _, s := range [][3]string{{"h100-0", v1alpha1.DRADriverGPU, "570.172.8"}, {"h100-1", v1alpha1.DRADriverGPU, "570.172.8"}, {"h100-2", "dra.net", "1.0.0"}} {
			createSlice(s[0], s[1], s[2])(t)
			defer deleteSlice(s[0], s[1], s[2])(t)
		}
		rep := runGate(t, f, tb.Kubeconfig, 20*time.Second, "prod-h100-b")
		if rep.Verdict() != gate.Pass {
			t.Fatalf("verdict %s: %+v", rep.Verdict(), rep.Failed())
		}
	})
	setRollout := func(mutate func(*v1alpha1.DriverRollout)) func(*testing.T) {
		return func(t *testing.T) {
			var dr v1alpha1.DriverRollout
			if err := b.Get(ctx, client.ObjectKey{Name: "r2026-06"}, &dr); err != nil {
				t.Fatal(err)
			}
			mutate(&dr)
			if err := b.Status().Update(ctx, &dr); err != nil {
				t.Fatal(err)
			}
		}
	}
	notReady := []any{map[string]any{"type": "Ready", "status": "False", "reason": "HealthCheckFailed", "message": "timeout waiting for: [NVIDIADriver/h100-570-172-08 status: 'InProgress']", "lastTransitionTime": "2026-12-01T00:00:00Z"}}
	ready := []any{map[string]any{"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded", "message": "Applied revision", "lastTransitionTime": "2026-12-01T00:00:00Z"}}
	cases := []struct {
		name           string
		break_, mend   func(*testing.T)
		check, message string
	}{
		{"Kustomization not Ready", setKS("config", true, []string{"status", "conditions"}, notReady), setKS("config", true, []string{"status", "conditions"}, ready),
			"flux/Kustomization/config", "timeout waiting for: [NVIDIADriver/h100-570-172-08 status: 'InProgress']"},
		{"Kustomization suspended", setKS("operators", false, []string{"spec", "suspend"}, true),
			func(t *testing.T) {
				setKS("operators", false, []string{"spec", "suspend"}, false)(t)
				// Flux observes the new generation once it resumes.
				if err := gatetest.Update(ctx, b, ks, "Kustomization", "flux-system", "operators", true, func(u *unstructured.Unstructured) {
					_ = unstructured.SetNestedField(u.Object, u.GetGeneration(), "status", "observedGeneration")
				}); err != nil {
					t.Fatal(err)
				}
			},
			"flux/Kustomization/operators", "the Kustomization is suspended: `flux resume kustomization operators`"},
		{"Kustomization at a stale revision", setKS("lifecycle", true, []string{"status", "lastAppliedRevision"}, "main@sha1:00000000deadbeef"), setKS("lifecycle", true, []string{"status", "lastAppliedRevision"}, "main@sha1:"+rev),
			"flux/Kustomization/lifecycle", "Flux has not applied the expected revision yet"},
		{"HelmRelease at the wrong chart version",
			func(t *testing.T) {
				if err := gatetest.Update(ctx, b, hr, "HelmRelease", "gpu-operator", "gpu-operator", true, func(u *unstructured.Unstructured) {
					_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"chartVersion": "v24.9.2"}}, "status", "history")
				}); err != nil {
					t.Fatal(err)
				}
			},
			func(t *testing.T) {
				if err := gatetest.Update(ctx, b, hr, "HelmRelease", "gpu-operator", "gpu-operator", true, func(u *unstructured.Unstructured) {
					_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"chartVersion": "v25.3.4"}}, "status", "history")
				}); err != nil {
					t.Fatal(err)
				}
			},
			"flux/HelmRelease/gpu-operator/gpu-operator", "chart v24.9.2 is deployed, v25.3.4 expected"},
		{"a node still on the old driver",
			setNode("h100-3", func(n *corev1.Node) { n.Labels["nvidia.com/cuda.driver-version.full"] = "550.54.15" }),
			setNode("h100-3", func(n *corev1.Node) { n.Labels["nvidia.com/cuda.driver-version.full"] = "570.172.08" }),
			"nodes/h100/driver", "on another driver: h100-3=550.54.15"},
		{"a node whose GPU DRA slices say another driver than its label",
			createSlice("h100-3", v1alpha1.DRADriverGPU, "550.54.15"), deleteSlice("h100-3", v1alpha1.DRADriverGPU, "550.54.15"),
			"nodes/h100/driver", "h100-3: nvidia.com/cuda.driver-version.full says 570.172.08, its ResourceSlices of gpu.nvidia.com (h100-3-gpu.nvidia.com) say 550.54.15"},
		// GFD's labels still say 570: the gate must see the label itself.
		{"a node on the driver without its gpufleet.io/driver label",
			setNode("h100-2", func(n *corev1.Node) { delete(n.Labels, "gpufleet.io/driver") }),
			setNode("h100-2", func(n *corev1.Node) { n.Labels["gpufleet.io/driver"] = "570.172.08" }),
			"nodes/h100/driver-label", "selected by no NVIDIADriver of the release, so the operator may take the driver away: h100-2=none"},
		{"a node with an XID",
			func(t *testing.T) {
				if err := sims["prod-h100-b"].RaiseXID(ctx, "h200-2", 79); err != nil {
					t.Fatal(err)
				}
			},
			func(t *testing.T) {
				if err := sims["prod-h100-b"].ClearFault(ctx, "h200-2", nodesim.FaultXID); err != nil {
					t.Fatal(err)
				}
			},
			"nodes/h200/gpu-errors", "active GPU error signals: h200-2: GpuXidError"},
		{"too many quarantined nodes",
			func(t *testing.T) {
				for _, n := range []string{"h100-0", "h100-1"} {
					setNode(n, func(n *corev1.Node) { n.Labels[v1alpha1.LabelQuarantined] = "true" })(t)
				}
			},
			func(t *testing.T) {
				for _, n := range []string{"h100-0", "h100-1"} {
					setNode(n, func(n *corev1.Node) { delete(n.Labels, v1alpha1.LabelQuarantined) })(t)
				}
			},
			"nodes/quarantined", "more quarantined nodes than the failure budget allows"},
		{"DriverRollout Stalled",
			setRollout(func(dr *v1alpha1.DriverRollout) {
				dr.Status.Conditions = append(dr.Status.Conditions, metaCondition(v1alpha1.ConditionStalled, "CanaryFailed", "canary h100-0 failed its install"))
			}),
			setRollout(func(dr *v1alpha1.DriverRollout) { dr.Status.Conditions = dr.Status.Conditions[:1] }),
			"lifecycle/DriverRollout/r2026-06", "Stalled: canary h100-0 failed its install"},
		{"DriverRollout over its failure budget",
			setRollout(func(dr *v1alpha1.DriverRollout) { dr.Status.BudgetUsed = 2 }),
			setRollout(func(dr *v1alpha1.DriverRollout) { dr.Status.BudgetUsed = 0 }),
			"lifecycle/DriverRollout/r2026-06", "the failure budget is exceeded"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			tt.break_(t)
			defer tt.mend(t)
			rep := runGate(t, f, tb.Kubeconfig, 20*time.Second, "prod-h100-a", "prod-h100-b")
			failed := rep.Failed()
			if rep.Verdict() != gate.Fail || len(failed) != 1 || failed[0].Cluster != "prod-h100-b" || failed[0].Name.String() != tt.check || !strings.Contains(failed[0].Message, tt.message) {
				t.Errorf("want exactly prod-h100-b %s failing with %q; verdict %s, failed %+v", tt.check, tt.message, rep.Verdict(), failed)
			}
		})
	}

	t.Run("a context missing from the kubeconfig cannot be checked", func(t *testing.T) {
		f2 := *f
		f2.Clusters = map[string]*fleet.Cluster{}
		for k, v := range f.Clusters {
			c := *v
			f2.Clusters[k] = &c
		}
		f2.Clusters["prod-h100-b"].Context = "prod-h100-z"
		rep := runGate(t, &f2, tb.Kubeconfig, 10*time.Second, "prod-h100-b")
		if rep.Verdict() != gate.Unknown || !strings.Contains(rep.Checks[0].Message, `context "prod-h100-z" is not in the kubeconfig`) {
			t.Errorf("verdict %s, checks %+v", rep.Verdict(), rep.Checks)
		}
	})

	t.Run("an unreachable cluster fails closed while the others are checked", func(t *testing.T) {
		kc := gatetest.KubeconfigWithServer(t, tb.Kubeconfig, "prod-h100-b", "https://"+gatetest.ClosedPort(t))
		rep := runGate(t, f, kc, 10*time.Second, "prod-h100-a", "prod-h100-b")
		var unknown []gate.Check
		passedA := 0
		for _, c := range rep.Checks {
			switch {
			case c.Status == gate.Unknown:
				unknown = append(unknown, c)
			case c.Cluster == "prod-h100-a" && c.Status == gate.Pass:
				passedA++
			}
		}
		if len(unknown) != 1 || unknown[0].Cluster != "prod-h100-b" || !strings.Contains(unknown[0].Message, "connection refused") {
			t.Errorf("want prod-h100-b unknown (connection refused), got %+v", unknown)
		}
		if passedA < 10 {
			t.Errorf("the reachable cluster must still be checked: %d passing checks", passedA)
		}
		if rep.Verdict() != gate.Unknown {
			t.Errorf("verdict %s, want unknown (could not check)", rep.Verdict())
		}
	})

	t.Run("a cluster that does not answer times out", func(t *testing.T) {
		kc := gatetest.KubeconfigWithServer(t, tb.Kubeconfig, "prod-h100-b", "https://"+silentServer(t))
		start := time.Now()
		rep := runGate(t, f, kc, 2*time.Second, "prod-h100-b")
		if rep.Verdict() != gate.Unknown || !strings.Contains(rep.Checks[0].Message, "timed out after 2s") {
			t.Errorf("verdict %s, checks %+v", rep.Verdict(), rep.Checks)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("the per-cluster timeout did not bound the gate: %s", took)
		}
	})
}

// gpuSlice is the ResourceSlice a DRA driver publishes for node, one GPU
// whose driverVersion is version.
func gpuSlice(node, driver, version string) *resourcev1.ResourceSlice {
	return &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-" + driver}, Spec: resourcev1.ResourceSliceSpec{
		Driver: driver, NodeName: new(node), Pool: resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
		Devices: []resourcev1.Device{{Name: "gpu-0", Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
			"type":                             {StringValue: new("gpu")},
			dra.AttributeProductName:           {StringValue: new("NVIDIA H100 80GB HBM3")},
			v1alpha1.DRAAttributeDriverVersion: {VersionValue: new(version)},
		}}},
	}}
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

func metaCondition(t, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: reason, Message: msg, LastTransitionTime: gatetest.LastTransition}
}
