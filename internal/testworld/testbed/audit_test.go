package testbed

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestAuditCountsRequestsByProgram proves Cluster.Requests counts what the
// API server received, per program, whatever credentials it used: two
// clients with the same admin credentials and different user agents are
// told apart, and requests outside the window are left out.
func TestAuditCountsRequestsByProgram(t *testing.T) {
	tb := New(t, Options{AuditLog: true})
	c := tb.Clusters()[0]
	ctx := t.Context()
	as := func(agent string) client.Client {
		cfg := rest.CopyConfig(c.Config)
		cfg.UserAgent = agent + "/v1.0.0 (linux/amd64) test"
		cl, err := client.New(cfg, client.Options{Scheme: c.Client.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	writer, reader := as("writer"), as("reader")
	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	}
	if err := writer.Create(ctx, cm("before")); err != nil {
		t.Fatal(err)
	}
	// The clients' discovery (gets of /api and /apis: reads too) before the
	// window, so the counts below are exact.
	if err := reader.Get(ctx, client.ObjectKeyFromObject(cm("before")), cm("")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // the server's clock moves past "before"
	from := time.Now()
	for _, name := range []string{"a", "b", "c"} {
		if err := writer.Create(ctx, cm(name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := writer.Delete(ctx, cm("a")); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := reader.Get(ctx, client.ObjectKey{Namespace: "default", Name: "b"}, cm("")); err != nil {
			t.Fatal(err)
		}
	}
	if err := reader.List(ctx, &corev1.ConfigMapList{}); err != nil {
		t.Fatal(err)
	}
	to := time.Now()
	// The log is written as each request is answered (blocking mode).
	got, err := c.Requests(from, to)
	if err != nil {
		t.Fatal(err)
	}
	if w := got["writer"]; w.Writes != 4 || w.Reads != 0 || w.ByResource["configmaps"] != 4 {
		t.Errorf("writer: %+v, want 4 writes to configmaps (3 creates, 1 delete) and no read", w)
	}
	if r := got["reader"]; r.Reads != 3 || r.Writes != 0 {
		t.Errorf("reader: %+v, want 3 reads (2 gets, 1 list)", r)
	}
	if _, err := (&Cluster{Name: "x"}).Requests(from, to); err == nil {
		t.Error("Requests without an audit log: no error")
	}
}
