// Package argotest builds Argo CD Applications as the application-controller
// leaves them, for the tests of the gate, explain and the dashboard: the
// project has no Argo CD Go types (argo-cd needs a newer Go), so its objects
// are read and built unstructured, with the fields Argo CD v3.6 writes.
package argotest

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Application is an Application name in namespace argocd, automated,
// Synced to revision (a bare commit) and Healthy, its last sync Succeeded;
// options change it.
func Application(name, revision string, opts ...Option) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1",
		"kind":       "Application",
		"metadata":   map[string]any{"name": name, "namespace": "argocd"},
		"spec": map[string]any{
			"project":    "gpufleet",
			"syncPolicy": map[string]any{"automated": map[string]any{"prune": true, "selfHeal": true}},
		},
		"status": map[string]any{
			"sync":   map[string]any{"status": "Synced", "revision": revision},
			"health": map[string]any{"status": "Healthy"},
			"operationState": map[string]any{
				"phase": "Succeeded", "message": "successfully synced (all tasks run)",
				"startedAt": "2026-12-04T10:00:00Z", "finishedAt": "2026-12-04T10:00:05Z",
				"operation":  map[string]any{"sync": map[string]any{"revision": revision}},
				"syncResult": map[string]any{"revision": revision},
			},
		},
	}}
	for _, o := range opts {
		o(u)
	}
	return u
}

// Option changes an Application.
type Option func(*unstructured.Unstructured)

func status(u *unstructured.Unstructured) map[string]any { return u.Object["status"].(map[string]any) }

// Sync sets status.sync: its status and the revision compared.
func Sync(syncStatus, revision string) Option {
	return func(u *unstructured.Unstructured) {
		status(u)["sync"] = map[string]any{"status": syncStatus, "revision": revision}
	}
}

// Health sets status.health.
func Health(health, message string) Option {
	return func(u *unstructured.Unstructured) {
		status(u)["health"] = map[string]any{"status": health, "message": message}
	}
}

// Resource adds an entry to status.resources.
func Resource(group, kind, namespace, name, syncStatus, health, message string, wave int64) Option {
	return func(u *unstructured.Unstructured) {
		r := map[string]any{"group": group, "kind": kind, "namespace": namespace, "name": name, "status": syncStatus, "syncWave": wave}
		if health != "" {
			r["health"] = map[string]any{"status": health, "message": message}
		}
		list, _ := status(u)["resources"].([]any)
		status(u)["resources"] = append(list, r)
	}
}

// Operation sets status.operationState: its phase and message, the
// revision it syncs, how often it was retried and whether the last try
// finished (a Running operation that finished is being retried), and the
// resources its sync result names, each {kind, namespace, name, status,
// message}.
func Operation(phase, message, revision string, retries int64, finished bool, failed ...[5]string) Option {
	return func(u *unstructured.Unstructured) {
		op := map[string]any{
			"phase": phase, "message": message, "retryCount": retries, "startedAt": "2026-12-04T10:00:00Z",
			"operation":  map[string]any{"sync": map[string]any{"revision": revision}},
			"syncResult": map[string]any{"revision": revision},
		}
		if finished {
			op["finishedAt"] = "2026-12-04T10:00:05Z"
		}
		var res []any
		for _, f := range failed {
			res = append(res, map[string]any{"kind": f[0], "namespace": f[1], "name": f[2], "status": f[3], "message": f[4]})
		}
		if len(res) > 0 {
			op["syncResult"].(map[string]any)["resources"] = res
		}
		status(u)["operationState"] = op
	}
}

// Condition adds a status condition (ComparisonError, SyncError…).
func Condition(condType, message string) Option {
	return func(u *unstructured.Unstructured) {
		list, _ := status(u)["conditions"].([]any)
		status(u)["conditions"] = append(list, map[string]any{"type": condType, "message": message})
	}
}

// Manual turns automated sync off.
func Manual() Option {
	return func(u *unstructured.Unstructured) {
		delete(u.Object["spec"].(map[string]any), "syncPolicy")
	}
}
