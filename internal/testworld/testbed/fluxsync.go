package testbed

import (
	"context"
	"fmt"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// Sync describes a GitRepository and a Kustomization applying one path of it,
// the pair "flux bootstrap" would create.
type Sync struct {
	// Name of both objects, in [FluxNamespace].
	Name string
	// URL and Branch of the repository.
	URL, Branch string
	// Path inside the repository; "./" when empty.
	Path string
	// Interval of both objects; 2 s when zero, so tests see changes quickly.
	Interval time.Duration
	// NoPrune turns off pruning, which is on by default as in gpufleet's output.
	NoPrune bool
}

// ApplySync creates or updates the GitRepository and Kustomization of s.
func (c *Cluster) ApplySync(ctx context.Context, s Sync) error {
	if s.Path == "" {
		s.Path = "./"
	}
	if s.Branch == "" {
		s.Branch = "main"
	}
	if s.Interval == 0 {
		s.Interval = 2 * time.Second
	}
	iv := metav1.Duration{Duration: s.Interval}
	repo := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: FluxNamespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, c.Client, repo, func() error {
		repo.Spec.URL = s.URL
		repo.Spec.Interval = iv
		repo.Spec.Reference = &sourcev1.GitRepositoryRef{Branch: s.Branch}
		return nil
	}); err != nil {
		return fmt.Errorf("cluster %s: apply GitRepository %s: %w", c.Name, s.Name, err)
	}
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: FluxNamespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, c.Client, ks, func() error {
		ks.Spec.Interval = iv
		ks.Spec.Path = s.Path
		ks.Spec.Prune = !s.NoPrune
		ks.Spec.SourceRef = kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: s.Name}
		return nil
	}); err != nil {
		return fmt.Errorf("cluster %s: apply Kustomization %s: %w", c.Name, s.Name, err)
	}
	return nil
}

// WaitApplied waits until the Kustomization name is Ready with revision
// applied (see [GitRepo.Revision]). The error carries the Kustomization's
// last Ready message and the tail of Flux's logs.
func (c *Cluster) WaitApplied(ctx context.Context, name, revision string, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ks := &kustomizev1.Kustomization{}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: FluxNamespace, Name: name}, ks); err != nil {
			last = err.Error()
			return false, nil
		}
		if cond := apimeta.FindStatusCondition(ks.Status.Conditions, "Ready"); cond != nil {
			last = fmt.Sprintf("Ready=%s %s: %s (applied %q)", cond.Status, cond.Reason, cond.Message, ks.Status.LastAppliedRevision)
		}
		return ks.Status.LastAppliedRevision == revision &&
			apimeta.IsStatusConditionTrue(ks.Status.Conditions, "Ready"), nil
	})
	if err != nil {
		return fmt.Errorf("cluster %s: Kustomization %s did not apply %s: %w; last seen: %s\n%s",
			c.Name, name, revision, err, last, c.Flux.LogTail(20))
	}
	return nil
}
