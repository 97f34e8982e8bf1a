package controller

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// installConfig applies what a kustomization folder of config/ renders, as
// `kubectl apply -k` would for a fresh cluster: each object created, one
// that exists already left as it is. The admission policy and the RBAC
// are installed from their real manifests this way, so a test proves the
// files, not a copy of them.
func installConfig(ctx context.Context, c client.Client, dir string) error {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	for _, r := range m.Resources() {
		obj, err := r.Map()
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{Object: obj}
		if err := c.Create(ctx, u); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}

// installAdmission installs config/admission, and config/rbac with the
// namespace it binds in, and waits until the node policy refuses what it
// must: the API server loads policies a moment after they are created.
func installAdmission(ctx context.Context, c client.Client) error {
	if err := installConfig(ctx, c, "../../config/admission"); err != nil {
		return err
	}
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "gpufleet-system"}}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if err := installConfig(ctx, c, "../../config/rbac"); err != nil {
		return err
	}
	// c is an admin, not the controller: a node it creates carrying a
	// label only the controller writes is refused once the policy works.
	deadline := time.Now().Add(30 * time.Second)
	for {
		probe := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Node",
			"metadata": map[string]any{"name": "admission-probe", "labels": map[string]any{v1alpha1.LabelPhase: string(v1alpha1.NodeDone)}},
		}}
		err := c.Create(ctx, probe)
		switch {
		case apierrors.IsForbidden(err):
			return nil
		case err == nil || apierrors.IsAlreadyExists(err):
			_ = c.Delete(ctx, probe)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the admission policy of config/admission refuses nothing after 30s (last: %v)", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
