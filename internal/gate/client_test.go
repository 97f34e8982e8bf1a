package gate_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/testworld/testbed"
)

// TestGateOnClusterWithoutTheKinds runs the gate against a real API server
// that serves none of the custom kinds it reads (no Flux, no GPU Operator,
// no DriverRollout CRD). The gate maps those kinds without API discovery,
// so the server answers each read with 404: every such check must fail as
// "missing", as discovery's "no match" did, and none may be Unknown,
// which would blame the connection. A kind outside the gate's own list
// still resolves through discovery. The API server serves no
// resource.k8s.io/v1 either (a cluster before Kubernetes 1.34): the gate
// reads the nodes' drivers from their labels alone, without a word.
func TestGateOnClusterWithoutTheKinds(t *testing.T) {
	f, err := fleet.Load("../../examples/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	const cluster = "prod-h100-a"
	tb := testbed.New(t, testbed.Options{Clusters: []string{cluster}, DisabledAPIs: []string{"resource.k8s.io/v1"}})
	var slices resourcev1.ResourceSliceList
	if err := tb.Cluster(cluster).Client.List(t.Context(), &slices); !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
		t.Fatalf("the API server serves resource.k8s.io/v1 (list: %v): the test would not test a cluster without it", err)
	}
	rep := gate.Run(t.Context(), gate.Options{Fleet: f, Clusters: []string{cluster}, Revision: rev,
		Kubeconfig: tb.Kubeconfig, Timeout: 30 * time.Second, Concurrency: 1, Now: time.Now})
	if v := rep.Verdict(); v != gate.Fail {
		t.Fatalf("verdict %s, want fail: %+v", v, rep.Checks)
	}
	missing := 0
	for _, c := range rep.Checks {
		if c.Status == gate.Unknown {
			t.Errorf("check %s is unknown (%s), want a failure", c.Name, c.Message)
		}
		if c.Observed == "missing" {
			missing++
		}
	}
	for _, name := range []string{"flux/Kustomization/operators", "gpu-operator/ClusterPolicy", "lifecycle/DriverRollout/"} {
		found := false
		for _, c := range rep.Checks {
			if strings.HasPrefix(c.Name.String(), name) {
				found = true
				if c.Status != gate.Fail || c.Observed != "missing" {
					t.Errorf("%s: %s, observed %q, want fail, missing", c.Name, c.Status, c.Observed)
				}
			}
		}
		if !found {
			t.Errorf("no check %s in %+v", name, rep.Checks)
		}
	}
	if missing == 0 {
		t.Fatalf("no check observed a missing object: %+v", rep.Checks)
	}

	c, err := gate.ClientFor(tb.Kubeconfig, cluster)
	if err != nil {
		t.Fatal(err)
	}
	var nss corev1.NamespaceList
	if err := c.List(t.Context(), &nss); err != nil || len(nss.Items) == 0 {
		t.Fatalf("list namespaces through discovery: %d, %v", len(nss.Items), err)
	}
	if _, err := gate.ClientFor(tb.Kubeconfig, "no-such-context"); err == nil || !strings.Contains(err.Error(), "not in the kubeconfig") {
		t.Fatalf("unknown context: %v", err)
	}
}
