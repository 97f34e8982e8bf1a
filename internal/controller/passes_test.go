package controller

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gpufleet/gpufleet/internal/testworld/testbed"
)

// passes is how many passes the controller has completed for rollout
// (gpufleet_rollout_passes_total).
func passes(t testing.TB, rollout string) float64 {
	t.Helper()
	return metricValue(t, metrics.Registry, `gpufleet_rollout_passes_total{rollout="`+rollout+`"}`)
}

// pokeNode is a node in no pool: touching it brings a pass of every
// rollout (the controller watches all nodes) and changes nothing else.
const pokeNode = "passes-poke"

// morePasses has the controller complete n more passes for rollout and
// waits for them. A test that asserts nothing moved asserts it about
// passes that ran: a fixed sleep could see none on a slow machine, or wait
// for nothing on a fast one. Each pass is brought on by touching pokeNode,
// as an idle rollout has no pass due.
func morePasses(t testing.TB, rollout string, n int) {
	t.Helper()
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: pokeNode, Labels: map[string]string{testbed.KwokNodeLabel: "fake"}}}
	if err := suite.c.Create(ctx, node); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create %s: %v", pokeNode, err)
	}
	for i := range n {
		since := passes(t, rollout)
		poke := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: pokeNode}}
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"test.gpufleet.io/poke":%q}}}`, strconv.FormatInt(time.Now().UnixNano(), 10))
		if err := suite.c.Patch(ctx, poke, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
			t.Fatalf("poke: %v", err)
		}
		waitFor(t, 30*time.Second, fmt.Sprintf("pass %d of %d more for %s", i+1, n, rollout), func() (bool, string) {
			got := passes(t, rollout)
			return got > since, fmt.Sprintf("%v passes, %v before", got, since)
		})
	}
}
