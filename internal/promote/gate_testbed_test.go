package promote

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/gate/gatetest"
	"github.com/gpufleet/gpufleet/internal/testworld/testbed"
)

// TestPromotionWithTheRealGate promotes through the real gate against
// testbed clusters: staging passes, then a promotion is refused because
// the prod-h100 canary cluster reports a node on the old driver, and goes
// through once the node reports the new one.
func TestPromotionWithTheRealGate(t *testing.T) {
	path := fleetRepo(t)
	dir := filepath.Dir(path)
	f, err := fleet.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	crds, err := gatetest.CRDDirs("../..", f.Releases["r2026-10"].GPUOperator)
	if err != nil {
		t.Skipf("needs the real GPU Operator CRDs: %v", err)
	}
	tb := testbed.New(t, testbed.Options{Clusters: []string{"stg-h100", "prod-h100-a"}, CRDDirs: crds, Scheme: testbed.NewScheme(), Kube: true, Kwok: true})
	realGate := RealGate(dir, tb.Kubeconfig, 20*time.Second, nil)
	apply := func(m Mutation) error {
		_, err := Apply(t.Context(), Options{FleetFile: path, Mutation: m, Gate: realGate})
		return err
	}
	// converge makes cluster look as Flux and the controllers would leave
	// it after applying HEAD of the fleet repository.
	converge := func(cluster string) {
		t.Helper()
		f, err := fleet.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		rev, _ := gate.HeadRevision(dir)
		if _, err := gatetest.Arrange(t.Context(), tb.Cluster(cluster).Client, gate.Expect(f, cluster, rev)); err != nil {
			t.Fatal(err)
		}
	}

	if err := apply(startR); err != nil {
		t.Fatal(err)
	}
	// prod-h100 requires approval to enter, and again after its canary cluster.
	if err := apply(func(f *fleet.Fleet) (Step, error) { return Approve(f, "r2026-10/prod-h100") }); err != nil {
		t.Fatal(err)
	}
	converge("stg-h100")
	if err := apply(Promote); err != nil {
		t.Fatalf("staging converged, the gate must pass: %v", err)
	}
	if !strings.Contains(gitT(t, dir, "log", "-1", "--format=%b"), "Gate passed: stg-h100 at") {
		t.Errorf("the commit does not carry the gate result:\n%s", gitT(t, dir, "log", "-1", "--format=%B"))
	}
	if err := apply(func(f *fleet.Fleet) (Step, error) { return Approve(f, "r2026-10/prod-h100") }); err != nil {
		t.Fatal(err)
	}

	// The canary cluster converged but one node still reports the old driver.
	converge("prod-h100-a")
	c := tb.Cluster("prod-h100-a").Client
	setDriver := func(version string) {
		var n corev1.Node
		if err := c.Get(t.Context(), client.ObjectKey{Name: "h100-5"}, &n); err != nil {
			t.Fatal(err)
		}
		base := n.DeepCopy()
		n.Labels["nvidia.com/cuda.driver-version.full"] = version
		// A merge patch: kwok and the node lifecycle controller write
		// the node too, so an update could conflict.
		if err := c.Patch(t.Context(), &n, client.MergeFrom(base)); err != nil {
			t.Fatal(err)
		}
	}
	setDriver("570.172.08")
	head := gitT(t, dir, "rev-parse", "HEAD")
	err = apply(Promote)
	if err == nil || !strings.Contains(err.Error(), "prod-h100-a nodes/h100/driver: on another driver: h100-5=570.172.08") {
		t.Fatalf("want the promotion refused for the node on the old driver, got %v", err)
	}
	if gitT(t, dir, "rev-parse", "HEAD") != head || gitT(t, dir, "status", "--porcelain") != "" {
		t.Error("a refused promotion changed the repository")
	}

	setDriver("580.95.05")
	if err := apply(Promote); err != nil {
		t.Fatalf("once the node reports the new driver the promotion goes through: %v", err)
	}
	if got := strings.TrimSpace(gitT(t, dir, "log", "-1", "--format=%s")); got != "gpufleet: promote r2026-10 to all of wave prod-h100" {
		t.Errorf("subject %q", got)
	}
}
