package controller

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// listNodes reads the node informer's store in place when it has one, and
// lists through the client otherwise; both must give the whole fleet.
func TestListNodesFromStore(t *testing.T) {
	store := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	a := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-a"}}
	b := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-b"}}
	for _, n := range []*corev1.Node{a, b} {
		if err := store.Add(n); err != nil {
			t.Fatal(err)
		}
	}
	r := &Reconciler{nodeStore: store}
	got, err := r.listNodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("listNodes: %d nodes, want 2", len(got))
	}
	// In place: the store's own objects, not copies (a pass must not copy
	// thousands of nodes; the planner's snapshot never writes to them).
	for _, n := range got {
		if n != a && n != b {
			t.Errorf("listNodes returned a copy of %s, want the store's object", n.Name)
		}
	}

	// A store that holds anything but nodes is an error, never a smaller fleet.
	if err := store.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "stray", Namespace: "default"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.listNodes(context.Background()); err == nil || !strings.Contains(err.Error(), "*v1.Pod") {
		t.Fatalf("listNodes over a store holding a pod: err %v, want one naming *v1.Pod", err)
	}
}

func TestListNodesThroughClient(t *testing.T) {
	c := env(t)
	ctx := context.Background()
	// Two nodes of its own at least, whatever else the suite has made.
	var mine []string
	for _, name := range []string{"list-nodes-fallback-a", "list-nodes-fallback-b"} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := c.Create(ctx, node); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), node) })
		mine = append(mine, name)
	}

	var want corev1.NodeList
	if err := c.List(ctx, &want); err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Client: c}
	got, err := r.listNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var gotNames, wantNames []string
	for _, n := range got {
		gotNames = append(gotNames, n.Name)
	}
	for _, n := range want.Items {
		wantNames = append(wantNames, n.Name)
	}
	slices.Sort(gotNames)
	slices.Sort(wantNames)
	if !slices.Equal(gotNames, wantNames) {
		t.Fatalf("listNodes through the client: %v, want %v", gotNames, wantNames)
	}
	for _, name := range mine {
		if !slices.Contains(gotNames, name) {
			t.Fatalf("listNodes through the client misses %s", name)
		}
	}
}
