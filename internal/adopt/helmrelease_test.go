package adopt

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/chart"
	rspb "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// The records of these tests are written by Helm's own storage drivers
// (helm.sh/helm/v3/pkg/storage/driver, test code only): the bytes init
// decodes are exactly those Helm keeps, not a copy of its encoding.

// teamValues are values a team installs the GPU Operator with, as Helm
// keeps them: numbers and all.
func teamValues() map[string]any {
	return map[string]any{
		"driver": map[string]any{
			"repository": "registry.example.com/nvidia",
			"version":    "570.172.08",
			"rdma":       map[string]any{"enabled": true},
		},
		"toolkit":      map[string]any{"enabled": false},
		"dcgmExporter": map[string]any{"serviceMonitor": map[string]any{"enabled": true, "interval": "15s"}},
		"node-feature-discovery": map[string]any{
			"worker": map[string]any{"tolerations": []any{map[string]any{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}}},
		},
		"operator": map[string]any{"replicas": 2},
	}
}

// helmReleaseOf is a release as Helm's install or upgrade action builds it.
func helmReleaseOf(name, namespace string, revision int, status rspb.Status, values map[string]any) *rspb.Release {
	return &rspb.Release{
		Name: name, Namespace: namespace, Version: revision, Config: values,
		Info:     &rspb.Info{Status: status, Description: "Install complete"},
		Chart:    &chart.Chart{Metadata: &chart.Metadata{Name: "gpu-operator", Version: "v25.3.4", APIVersion: "v2"}, Values: map[string]any{"driver": map[string]any{"version": "550.54.15"}}},
		Manifest: "---\n# Source: gpu-operator/templates/operator.yaml\napiVersion: apps/v1\nkind: Deployment\n",
	}
}

// helmKey is the name Helm gives a revision's record.
func helmKey(name string, revision int) string {
	return fmt.Sprintf("sh.helm.release.v1.%s.v%d", name, revision)
}

// helmHistory writes, with Helm's driver d, the history of a release
// upgraded twice: revision 1 superseded, 2 deployed, 3 a failed upgrade
// (Helm keeps it; what runs is revision 2).
func helmHistory(t *testing.T, d driver.Driver, name, namespace string, deployed map[string]any) {
	t.Helper()
	for rev, status := range map[int]rspb.Status{1: rspb.StatusSuperseded, 2: rspb.StatusDeployed, 3: rspb.StatusFailed} {
		values := map[string]any{"driver": map[string]any{"repository": fmt.Sprintf("revision-%d", rev)}}
		if rev == 2 {
			values = deployed
		}
		if err := d.Create(helmKey(name, rev), helmReleaseOf(name, namespace, rev, status, values)); err != nil {
			t.Fatal(err)
		}
	}
}

// asNumbers is v as init reads it: JSON, numbers as json.Number.
func asNumbers(t *testing.T, v map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out map[string]any
	if err := dec.Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// crClient is a controller-runtime client over objs (Secrets and
// ConfigMaps as Helm wrote them), with list errors by kind.
func crClient(t *testing.T, listErr map[string]error, objs ...client.Object) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			kind := strings.TrimSuffix(fmt.Sprintf("%T", list), "List")
			if err := listErr[strings.TrimPrefix(kind, "*v1.")]; err != nil {
				return err
			}
			return c.List(ctx, list, opts...)
		},
	}).Build()
}

// helmObjects are the Secrets and ConfigMaps a fake clientset holds, as
// Helm's drivers created them.
func helmObjects(t *testing.T, cs *k8sfake.Clientset, namespace string) []client.Object {
	t.Helper()
	var out []client.Object
	secrets, err := cs.CoreV1().Secrets(namespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range secrets.Items {
		out = append(out, &secrets.Items[i])
	}
	cms, err := cs.CoreV1().ConfigMaps(namespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range cms.Items {
		out = append(out, &cms.Items[i])
	}
	return out
}

// TestReadHelmReleaseAsHelmWritesIt: the deployed revision of a release
// Helm recorded in Secrets (its default) or in ConfigMaps (its older
// driver) is found by Helm's labels among the revisions Helm keeps, and
// its values are decoded, exactly, from the record Helm wrote.
func TestReadHelmReleaseAsHelmWritesIt(t *testing.T) {
	const ns, name = "gpu-operator", "gpu-operator-1712345678"
	for _, storage := range []string{"Secret", "ConfigMap"} {
		t.Run(storage, func(t *testing.T) {
			cs := k8sfake.NewClientset()
			var d driver.Driver = driver.NewSecrets(cs.CoreV1().Secrets(ns))
			if storage == "ConfigMap" {
				d = driver.NewConfigMaps(cs.CoreV1().ConfigMaps(ns))
			}
			helmHistory(t, d, name, ns, teamValues())
			// Another release in the namespace, deployed too.
			if err := d.Create(helmKey("other", 1), helmReleaseOf("other", ns, 1, rspb.StatusDeployed, map[string]any{"x": 1})); err != nil {
				t.Fatal(err)
			}
			got, err := readHelmRelease(t.Context(), crClient(t, nil, helmObjects(t, cs, ns)...), ns, name)
			if err != nil {
				t.Fatal(err)
			}
			want := HelmRelease{Namespace: ns, Name: name, Record: storage + " " + ns + "/" + helmKey(name, 2), Revision: 2, Values: asNumbers(t, teamValues())}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("the deployed revision (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadHelmReleaseUnreadable: what init reads when the record cannot
// be had, and that none of it is an error of the cluster as a whole (which
// would stop init as unreadable): init may not list Secrets (the values
// then come from a ConfigMap record if Helm kept one there), no record, a
// record that does not decode; any other failure to list is an error.
func TestReadHelmReleaseUnreadable(t *testing.T) {
	const ns, name = "gpu-operator", "gpu-operator"
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", fmt.Errorf(`User "init" cannot list resource "secrets" in API group "" in the namespace "gpu-operator"`))
	inConfigMaps := k8sfake.NewClientset()
	helmHistory(t, driver.NewConfigMaps(inConfigMaps.CoreV1().ConfigMaps(ns)), name, ns, map[string]any{"toolkit": map[string]any{"enabled": false}})
	inSecrets := k8sfake.NewClientset()
	helmHistory(t, driver.NewSecrets(inSecrets.CoreV1().Secrets(ns)), name, ns, nil)
	garbled := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: helmKey(name, 1),
		Labels: map[string]string{"owner": "helm", "name": name, "status": "deployed", "version": "1"}},
		Data: map[string][]byte{"release": []byte("H4sI-not-base64")}}
	notGzip := garbled.DeepCopy()
	notGzip.Data["release"] = []byte(base64.StdEncoding.EncodeToString([]byte{0x1f, 0x8b, 0x08, 0, 1, 2}))

	tests := []struct {
		name    string
		c       client.Client
		want    HelmRelease
		wantErr string
	}{
		{
			name: "Secrets forbidden, nothing in ConfigMaps",
			c:    crClient(t, map[string]error{"Secret": forbidden}, helmObjects(t, inSecrets, ns)...),
			want: HelmRelease{Namespace: ns, Name: name, Forbidden: true,
				Err: `init may not list the Secrets of namespace gpu-operator: secrets is forbidden: User "init" cannot list resource "secrets" in API group "" in the namespace "gpu-operator"`},
		},
		{
			name: "Secrets forbidden, the record in ConfigMaps",
			c:    crClient(t, map[string]error{"Secret": forbidden}, helmObjects(t, inConfigMaps, ns)...),
			want: HelmRelease{Namespace: ns, Name: name, Record: "ConfigMap gpu-operator/sh.helm.release.v1.gpu-operator.v2", Revision: 2,
				Values: map[string]any{"toolkit": map[string]any{"enabled": false}}},
		},
		{
			name: "the chart's defaults: no values of its own",
			c:    crClient(t, nil, helmObjects(t, inSecrets, ns)...),
			want: HelmRelease{Namespace: ns, Name: name, Record: "Secret gpu-operator/sh.helm.release.v1.gpu-operator.v2", Revision: 2},
		},
		{
			name: "no record",
			c:    crClient(t, nil),
			want: HelmRelease{Namespace: ns, Name: name,
				Err: "no Secret or ConfigMap in namespace gpu-operator records a deployed revision of it (labelled owner=helm, name=gpu-operator, status=deployed)"},
		},
		{
			name: "not base64",
			c:    crClient(t, nil, garbled),
			want: HelmRelease{Namespace: ns, Name: name, Err: "Secret gpu-operator/sh.helm.release.v1.gpu-operator.v1: not base64: illegal base64 data at input byte 4"},
		},
		{
			name: "not gzip",
			c:    crClient(t, nil, notGzip),
			want: HelmRelease{Namespace: ns, Name: name, Err: "Secret gpu-operator/sh.helm.release.v1.gpu-operator.v1: not gzip: unexpected EOF"},
		},
		{
			name:    "the API server fails",
			c:       crClient(t, map[string]error{"Secret": apierrors.NewServiceUnavailable("etcd is down")}),
			wantErr: "list the Secrets of Helm release gpu-operator/gpu-operator: etcd is down",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readHelmRelease(t.Context(), tt.c, ns, name)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecodeHelmReleaseUncompressed: a record Helm wrote before it
// gzipped them (plain JSON in base64) still reads, as Helm reads it.
func TestDecodeHelmReleaseUncompressed(t *testing.T) {
	b, err := json.Marshal(helmReleaseOf("gpu-operator", "gpu-operator", 1, rspb.StatusDeployed, teamValues()))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := decodeHelmRelease([]byte(base64.StdEncoding.EncodeToString(b)))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(asNumbers(t, teamValues()), rec.Config); diff != "" || rec.Version != 1 || rec.Info.Status != "deployed" {
		t.Errorf("config (-want +got):\n%s\nversion %d status %q", diff, rec.Version, rec.Info.Status)
	}
}
