package testbed

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func widget(spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "testbed.gpufleet.io/v1",
		"kind":       "Widget",
		"metadata":   map[string]any{"name": "w", "namespace": "default"},
		"spec":       spec,
	}}
	return u
}

// TestAPIServerEnforcesSchema proves the API server is real: a misspelt
// field is refused with the server's own strict-decoding message.
func TestAPIServerEnforcesSchema(t *testing.T) {
	tb := New(t, Options{CRDDirs: []string{"testdata/crds"}})
	c := tb.Clusters()[0]
	ctx := t.Context()

	bad := widget(map[string]any{"nodeSelecter": map[string]any{"pool": "h100"}, "nodeSelector": map[string]any{}})
	err := c.Client.Create(ctx, bad, client.FieldValidation(metav1.FieldValidationStrict))
	if err == nil {
		t.Fatal("Create with a misspelt field succeeded, want it refused")
	}
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `unknown field "spec.nodeSelecter"`) {
		t.Fatalf("Create error = %v, want BadRequest naming unknown field spec.nodeSelecter", err)
	}

	t.Logf("refused as expected: %v", err)

	neg := widget(map[string]any{"nodeSelector": map[string]any{"pool": "h100"}, "replicas": -1})
	if err := c.Client.Create(ctx, neg); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.replicas") {
		t.Fatalf("Create with replicas -1: error = %v, want Invalid naming spec.replicas", err)
	}

	good := widget(map[string]any{"nodeSelector": map[string]any{"pool": "h100"}})
	if err := c.Client.Create(ctx, good, client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
		t.Fatalf("Create valid widget: %v", err)
	}
}

// TestKubeconfigHasOneContextPerCluster starts two clusters and reaches each
// through its context in the written kubeconfig.
func TestKubeconfigHasOneContextPerCluster(t *testing.T) {
	start := time.Now()
	tb := New(t, Options{Clusters: []string{"prod-east", "prod-west"}})
	t.Logf("two clusters started in %s", time.Since(start).Round(10*time.Millisecond))

	raw, err := clientcmd.LoadFromFile(tb.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	got := slices.Sorted(maps.Keys(raw.Contexts))
	if diff := cmp.Diff([]string{"prod-east", "prod-west"}, got); diff != "" {
		t.Fatalf("contexts (-want +got):\n%s", diff)
	}

	hosts := map[string]bool{}
	for _, name := range []string{"prod-east", "prod-west"} {
		cfg, err := clientcmd.NewNonInteractiveClientConfig(*raw, name, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
		if err != nil {
			t.Fatalf("context %s: %v", name, err)
		}
		hosts[cfg.Host] = true
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		v, err := cs.Discovery().ServerVersion()
		if err != nil {
			t.Fatalf("context %s: server version: %v", name, err)
		}
		if v.GitVersion != "v1.37.2" {
			t.Errorf("context %s: server version %s, want v1.37.2", name, v.GitVersion)
		}
		if tb.Cluster(name) == nil {
			t.Errorf("Cluster(%q) = nil", name)
		}
	}
	if len(hosts) != 2 {
		t.Errorf("contexts reach %d distinct servers, want 2", len(hosts))
	}
}
