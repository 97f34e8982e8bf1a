package lab

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// poll is how often the waits look.
const poll = 200 * time.Millisecond

// Git runs the real git in the fleet work tree and returns its output.
func (w *World) Git(args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", w.Dir}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// Push pushes the work tree's HEAD to the git server and returns the
// revision Flux will report for it.
func (w *World) Push() (string, error) {
	if _, err := w.Git("push", "-q", "origin", "HEAD:main"); err != nil {
		return "", err
	}
	sha, err := w.Git("rev-parse", "HEAD")
	if err != nil {
		return "", err
	}
	return "main@sha1:" + sha, nil
}

// WaitApplied waits until cluster's Kustomizations steps (operators,
// config and lifecycle when none are named) are Ready at revision, each
// within timeout.
func (w *World) WaitApplied(ctx context.Context, cluster, revision string, timeout time.Duration, steps ...string) error {
	if len(steps) == 0 {
		steps = []string{"operators", "config", "lifecycle"}
	}
	for _, s := range steps {
		if err := w.Testbed.Cluster(cluster).WaitApplied(ctx, s, revision, timeout); err != nil {
			return err
		}
	}
	return nil
}

// Rollout returns cluster's DriverRollout name.
func (w *World) Rollout(ctx context.Context, cluster, name string) (*v1alpha1.DriverRollout, error) {
	dr := &v1alpha1.DriverRollout{}
	if err := w.Client(cluster).Get(ctx, client.ObjectKey{Name: name}, dr); err != nil {
		return nil, err
	}
	return dr, nil
}

// WaitRollout waits until the DriverRollout's phase is one of phases and
// the controller observed its latest spec.
func (w *World) WaitRollout(ctx context.Context, cluster, name string, timeout time.Duration, phases ...v1alpha1.RolloutPhase) (*v1alpha1.DriverRollout, error) {
	var dr *v1alpha1.DriverRollout
	var last string
	err := wait.PollUntilContextTimeout(ctx, poll, timeout, true, func(ctx context.Context) (bool, error) {
		got, err := w.Rollout(ctx, cluster, name)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		dr = got
		for _, p := range phases {
			if dr.Status.Phase == p && dr.Status.ObservedGeneration == dr.Generation {
				return true, nil
			}
		}
		msg := ""
		if c := apimeta.FindStatusCondition(dr.Status.Conditions, v1alpha1.ConditionReady); c != nil {
			msg = c.Reason + ": " + c.Message
		}
		last = fmt.Sprintf("phase %q progress %s generation %d observed %d (%s)", dr.Status.Phase, dr.Status.Progress, dr.Generation, dr.Status.ObservedGeneration, msg)
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: DriverRollout %s not in phase %v after %s: %w; last seen: %s", cluster, name, phases, timeout, err, last)
	}
	return dr, nil
}

// Drivers returns each GPU node's installed driver (GFD's label).
func (w *World) Drivers(ctx context.Context, cluster string) (map[string]string, error) {
	var nodes corev1.NodeList
	if err := w.Client(cluster).List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("%s: list nodes: %w", cluster, err)
	}
	out := map[string]string{}
	for _, n := range nodes.Items {
		if n.Labels[v1alpha1.LabelGPUPresent] == "true" {
			out[n.Name] = n.Labels[v1alpha1.LabelGFDDriverFull]
		}
	}
	return out, nil
}

// WaitDrivers waits until every GPU node of cluster (all of its pool)
// reports version.
func (w *World) WaitDrivers(ctx context.Context, cluster, version string, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, poll, timeout, true, func(ctx context.Context) (bool, error) {
		got, err := w.Drivers(ctx, cluster)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprint(got)
		if len(got) != w.poolNodes {
			return false, nil
		}
		for _, v := range got {
			if v != version {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("%s: every node on driver %s: not after %s: %w; last seen: %s", cluster, version, timeout, err, last)
	}
	return nil
}
