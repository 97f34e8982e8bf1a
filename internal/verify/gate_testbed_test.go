package verify

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/gate/gatetest"
	"github.com/gpufleet/gpufleet/internal/promote"
	"github.com/gpufleet/gpufleet/internal/testworld/testbed"
)

// driverLabel is the node label the gate reads a node's driver from.
const driverLabel = "nvidia.com/cuda.driver-version.full"

// TestVerifyGateOnTheTestbed gates a promotion made by the commands on a
// real API server: staging converged on the base as Flux would leave it,
// but one node still on the old driver, fails the check naming the
// cluster and the check; once the node reports the new driver it passes.
func TestVerifyGateOnTheTestbed(t *testing.T) {
	r := newFleetRepo(t)
	r.apply(start("r2026-10"), "")
	base, err := fleet.Load(r.file)
	if err != nil {
		t.Fatal(err)
	}
	crds, err := gatetest.CRDDirs("../..", base.Releases["r2026-10"].GPUOperator)
	if err != nil {
		t.Skipf("needs the real GPU Operator CRDs: %v", err)
	}
	tb := testbed.New(t, testbed.Options{Clusters: []string{"stg-h100"}, CRDDirs: crds, Scheme: testbed.NewScheme(), Kube: true, Kwok: true})
	// stg-h100 as Flux and the controllers leave it after applying main,
	// the commit the gate expects (the change is not merged).
	c := tb.Cluster("stg-h100").Client
	if _, err := gatetest.Arrange(t.Context(), c, gate.Expect(base, "stg-h100", r.git("rev-parse", "main"))); err != nil {
		t.Fatal(err)
	}
	r.branch("promote")
	r.apply(approve("r2026-10/prod-h100"), "")
	r.apply(promote.Promote, "")

	var nodes corev1.NodeList
	if err := c.List(t.Context(), &nodes); err != nil {
		t.Fatal(err)
	}
	var node *corev1.Node
	for i := range nodes.Items {
		if _, ok := nodes.Items[i].Labels[driverLabel]; ok {
			node = &nodes.Items[i]
			break
		}
	}
	if node == nil {
		t.Fatal("no GPU node on stg-h100")
	}
	setDriver := func(version string) {
		t.Helper()
		var n corev1.Node
		if err := c.Get(t.Context(), client.ObjectKey{Name: node.Name}, &n); err != nil {
			t.Fatal(err)
		}
		old := n.DeepCopy()
		n.Labels[driverLabel] = version
		// A merge patch: kwok and the node lifecycle controller write
		// the node too, so an update could conflict.
		if err := c.Patch(t.Context(), &n, client.MergeFrom(old)); err != nil {
			t.Fatal(err)
		}
	}
	live := LiveGate(tb.Kubeconfig, 20*time.Second)

	setDriver("570.172.08")
	rep := r.verify(Options{Gate: live})
	if rep.ExitCode() != ExitFailed || status(rep)[CheckGate] != StatusFailed {
		t.Fatalf("a node on the old driver: exit %d, checks %v, findings %+v", rep.ExitCode(), status(rep), rep.Findings)
	}
	g := findingsOf(rep, CheckGate)
	if len(g) == 0 || !strings.Contains(g[0].Message, "cluster stg-h100, check nodes/h100/driver") || !strings.Contains(g[0].Message, node.Name+"=570.172.08") {
		t.Errorf("gate findings: %+v", g)
	}

	setDriver("580.95.05")
	if rep := r.verify(Options{Gate: live}); rep.ExitCode() != ExitOK {
		t.Errorf("every node on the new driver: exit %d, findings %+v", rep.ExitCode(), rep.Findings)
	}
}
