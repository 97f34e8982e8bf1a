package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

func TestSupersededBy(t *testing.T) {
	for _, tc := range []struct {
		written, mine string
		want          bool
	}{
		{"v0.10.0", "v0.9.0", true},
		{"v0.9.0", "v0.10.0", false},
		{"v0.9.0", "v0.9.0", false},
		{"v1.0.0-rc.1", "v0.9.0", true},
		{"", "v0.9.0", false},
		{"(devel)", "v0.9.0", false},
		{"v0.10.0", "(devel)", false},
		{"v0.10.0", "", false},
	} {
		if got := supersededBy(tc.written, tc.mine); got != tc.want {
			t.Errorf("supersededBy(%q, %q) = %t, want %t", tc.written, tc.mine, got, tc.want)
		}
	}
}

// TestOlderControllerLeavesANewerOnesRollout: a controller rolled back
// under a rollout a newer version acted on (its status says so) touches
// neither the rollout's nodes nor its state, and says why; the newer
// version, back, goes on and finishes it.
func TestOlderControllerLeavesANewerOnesRollout(t *testing.T) {
	env(t)
	ctx := context.Background()
	nodes, _ := pool(t, "superseded", 2, "570.172.08")
	ro := newRollout("superseded", "superseded", "570.172.08", "580.95.05")
	create(t, ro)
	// What a newer controller wrote before it went away (as the
	// controller's service account: nobody else writes the status).
	base := ro.DeepCopy()
	ro.Status.ControllerVersion = "v0.10.0"
	if err := controllerClient(t).Status().Patch(ctx, ro, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}

	old := startControllerVersion(t, nil, nil, "v0.9.0")
	waitFor(t, 30*time.Second, "the older controller says it is superseded", func() (bool, string) {
		got := getRollout(t, ro.Name)
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionSuperseded)
		return c != nil && c.Status == "True", fmt.Sprintf("conditions %+v", got.Status.Conditions)
	})
	// Long enough for a pass to have taken a node had it wanted to.
	time.Sleep(2 * time.Second)
	for _, n := range nodes {
		if owner := getNode(t, n).Labels[v1alpha1.LabelRollout]; owner != "" {
			t.Errorf("node %s taken by %s under a superseded controller", n, owner)
		}
	}
	if got := getRollout(t, ro.Name).Status.ControllerVersion; got != "v0.10.0" {
		t.Errorf("status.controllerVersion %q: the older controller overwrote the newer one's state", got)
	}
	old.stop()

	startControllerVersion(t, nil, nil, "v0.10.0")
	// Deleted while this controller runs, for its finalizer (cleanups run
	// last first).
	t.Cleanup(func() { deleteRollout(t, ro.Name) })
	done := waitPhase(t, ro.Name, v1alpha1.PhaseCompleted, 90*time.Second)
	if c := meta.FindStatusCondition(done.Status.Conditions, v1alpha1.ConditionSuperseded); c != nil {
		t.Errorf("the Superseded condition stays under the newer controller: %+v", c)
	}
	if done.Status.ControllerVersion != "v0.10.0" {
		t.Errorf("status.controllerVersion %q, want v0.10.0", done.Status.ControllerVersion)
	}
}
