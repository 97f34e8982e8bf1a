package imageautomation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	imageautov1 "github.com/fluxcd/image-automation-controller/api/v1"
	imagev1 "github.com/fluxcd/image-reflector-controller/api/v1"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	notifv1 "github.com/fluxcd/notification-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/go-git/go-git/v5/plumbing"
	appsv1 "k8s.io/api/apps/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/internal/render"
	"github.com/gpufleet/gpufleet/internal/testworld/testbed"
)

// imageService is one image service of the example fleet and the tags the
// test registry holds for it.
type imageService struct {
	name, repo string
	// current is the tag in fleet.toml; pushed before the first scan.
	current string
	// newer are pushed later: inside the range, a new major outside it and a
	// higher pre-release (which a plain semver range excludes).
	newer []string
	// want is the tag each environment's policy must pick after the push.
	want map[string]string
}

var services = []imageService{
	{"vllm", repoVLLM, "0.8.4", []string{"0.8.5", "0.9.0", "1.0.0", "0.8.6-rc.1"},
		map[string]string{"staging": "0.8.5", "prod": "0.8.4"}}, // prod: prodVLLMRange
	{"tei-embed", repoTEI, "1.7.2", []string{"1.8.0", "2.0.0", "1.9.0-rc.1"},
		map[string]string{"staging": "1.8.0", "prod": "1.8.0"}},
	{"tei-rerank", repoTEI, "1.7.2", nil, // same repository as tei-embed
		map[string]string{"staging": "1.8.0", "prod": "1.8.0"}},
	{"litellm", repoLiteLLM, "1.67.0", []string{"1.68.1", "2.0.0", "1.69.0-rc.1"},
		map[string]string{"staging": "1.68.1", "prod": "1.68.1"}},
	{"chat", repoChat, "0.6.5", []string{"0.6.7", "0.7.0", "0.6.8-rc.1"},
		map[string]string{"staging": "0.6.7", "prod": "0.6.7"}},
}

var environments = []string{"staging", "prod"}

// sourceInterval is the GitRepository's interval: long enough that a push
// waiting for it is clearly slower than one announced by the webhook.
const sourceInterval = 30 * time.Second

// TestRenderedStackWithRealFlux runs the serving stack as gpufleet render
// writes it for the example fleet against real Flux controllers. The steps
// share one cluster and build on each other, so they run in order and stop
// at the first failure.
func TestRenderedStackWithRealFlux(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	w.applySource(t, sourceInterval)
	if err := w.c.EnsureNamespace(ctx, "llm-front"); err != nil {
		t.Fatal(err)
	}
	// The staging overlay of the chat service, the way a staging cluster's
	// app-chat Kustomization applies it.
	w.applyKustomization(t, "app-chat", "./"+render.AppsOverlay("staging", "chat"))
	if err := w.c.WaitApplied(ctx, "app-chat", w.repo.Revision(w.mainHash), 60*time.Second); err != nil {
		t.Fatal(err)
	}
	wantImage(t, w, "chat", w.reg.Image(repoChat)+":0.6.5")

	steps := []struct {
		name string
		run  func(*testing.T, *world)
	}{
		{"ImagePolicyPicksHighestTagInRange", testPolicies},
		{"ImageUpdateAutomationPushesMarkedLines", testAutomation},
		{"ReceiverFetchesAtOnce", testReceiver},
		{"AlertReachesProvider", testAlert},
	}
	for _, s := range steps {
		if !t.Run(s.name, func(t *testing.T) { s.run(t, w) }) {
			t.FailNow()
		}
	}
}

// testPolicies applies each environment's rendered ImageRepositories and
// ImagePolicies, pushes newer tags, and checks what each policy picks.
func testPolicies(t *testing.T, w *world) {
	pushed := map[string]bool{}
	for _, s := range services {
		if !pushed[s.repo] {
			if err := w.reg.PushTags(s.repo, s.current); err != nil {
				t.Fatal(err)
			}
			pushed[s.repo] = true
		}
	}
	for _, env := range environments {
		dir := "infrastructure/image-automation/" + env
		for _, s := range services {
			if env == environments[0] {
				// The repositories are the same objects in every environment.
				w.applyRendered(t, path.Join(dir, "imagerepository-"+s.name+".yaml"))
			}
			w.applyRendered(t, path.Join(dir, "imagepolicy-"+s.name+".yaml"))
		}
	}
	waitPolicies(t, w, func(s imageService, env string) string { return s.current })

	for _, s := range services {
		if err := w.reg.PushTags(s.repo, s.newer...); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range services {
		w.requestReconcile(t, &imagev1.ImageRepository{ObjectMeta: objectMeta(s.name)})
	}
	waitPolicies(t, w, func(s imageService, env string) string { return s.want[env] })
}

// waitPolicies waits until every environment's policy of every service
// picks want(service, env).
func waitPolicies(t *testing.T, w *world, want func(imageService, string) string) {
	t.Helper()
	for _, env := range environments {
		for _, s := range services {
			name := render.ImagePolicyName(s.name, env)
			wantTag := want(s, env)
			poll(t, "ImagePolicy "+name+" picks "+wantTag, 60*time.Second, func(ctx context.Context) (bool, string) {
				p := &imagev1.ImagePolicy{}
				if err := w.c.Client.Get(ctx, client.ObjectKey{Namespace: testbed.FluxNamespace, Name: name}, p); err != nil {
					return false, err.Error()
				}
				note := conditionNote(p.Status.Conditions)
				if p.Status.LatestRef == nil {
					return false, "no latestRef; " + note
				}
				return p.Status.LatestRef.Tag == wantTag && p.Status.LatestRef.Name == w.reg.Image(s.repo),
					fmt.Sprintf("latestRef %s:%s; %s", p.Status.LatestRef.Name, p.Status.LatestRef.Tag, note)
			})
		}
	}
}

// testAutomation applies each environment's rendered ImageUpdateAutomation
// and checks, through git, the one commit it pushes to the review branch.
func testAutomation(t *testing.T, w *world) {
	for _, env := range environments {
		w.applyRendered(t, "infrastructure/image-automation/"+env+"/imageupdateautomation.yaml")
	}
	main, err := w.repo.ReadBranch("main")
	if err != nil {
		t.Fatal(err)
	}
	for _, env := range environments {
		branch := render.ReviewBranch(w.stack, env)
		var head *testbed.Commit
		poll(t, "a commit on "+branch, 60*time.Second, func(ctx context.Context) (bool, string) {
			head, err = w.repo.ReadBranch(branch)
			if errors.Is(err, plumbing.ErrReferenceNotFound) {
				return false, "no branch yet; " + automationNote(ctx, w, env)
			}
			if err != nil {
				return false, err.Error()
			}
			return true, ""
		})
		if !slices.Equal(head.Parents, []string{w.mainHash}) {
			t.Errorf("%s: head %s has parents %v, want exactly main's head %s (one commit on top of main)",
				branch, head.Hash, head.Parents, w.mainHash)
		}
		if want := "gpufleet image automation <image-automation@gpufleet.io>"; head.Author != want {
			t.Errorf("%s: author %q, want %q", branch, head.Author, want)
		}
		t.Logf("%s: commit %.7s on top of main %.7s: %q", branch, head.Hash, w.mainHash, head.Message)
		checkMessage(t, env, head.Message)
		checkChangedLines(t, w, env, main.Files, head.Files)
	}
	// A second run finds nothing new to write: still one commit per branch.
	heads := map[string]string{}
	for _, env := range environments {
		head, err := w.repo.ReadBranch(render.ReviewBranch(w.stack, env))
		if err != nil {
			t.Fatal(err)
		}
		heads[env] = head.Hash
		a := &imageautov1.ImageUpdateAutomation{ObjectMeta: objectMeta(env)}
		w.requestReconcile(t, a)
		requested := a.GetAnnotations()[meta.ReconcileRequestAnnotation]
		poll(t, "ImageUpdateAutomation "+env+" runs again", 30*time.Second, func(ctx context.Context) (bool, string) {
			got := &imageautov1.ImageUpdateAutomation{}
			if err := w.c.Client.Get(ctx, client.ObjectKeyFromObject(a), got); err != nil {
				return false, err.Error()
			}
			return got.Status.LastHandledReconcileAt == requested, conditionNote(got.Status.Conditions)
		})
	}
	for _, env := range environments {
		branch := render.ReviewBranch(w.stack, env)
		head, err := w.repo.ReadBranch(branch)
		if err != nil {
			t.Fatal(err)
		}
		if head.Hash != heads[env] {
			t.Errorf("%s moved from %s to %s on a run with nothing new", branch, heads[env], head.Hash)
		}
	}

	after, err := w.repo.ReadBranch("main")
	if err != nil {
		t.Fatal(err)
	}
	if after.Hash != w.mainHash {
		t.Errorf("main moved to %s, want it untouched at %s", after.Hash, w.mainHash)
	}
}

// checkMessage compares the commit message with the template render
// configures: a title naming the environment, then one "old -> new" line per
// changed marker (in the controller's order, so compared as a set).
func checkMessage(t *testing.T, env, msg string) {
	t.Helper()
	title, body, _ := strings.Cut(msg, "\n\n")
	if want := env + ": update images"; title != want {
		t.Errorf("%s commit title %q, want %q (message %q)", env, title, want, msg)
	}
	var want []string
	for _, s := range services {
		if s.want[env] != s.current {
			want = append(want, s.current+" -> "+s.want[env])
		}
	}
	got := strings.Split(strings.TrimSpace(body), "\n")
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s commit body lines %q, want %q (message %q)", env, got, want, msg)
	}
}

// checkChangedLines checks that the branch differs from main only in the
// marked newTag lines of env's overlays, each set to the policy's tag.
func checkChangedLines(t *testing.T, w *world, env string, main, branch map[string]string) {
	t.Helper()
	want := map[string]string{} // overlay file -> new tag
	for _, s := range services {
		if s.want[env] != s.current {
			want[path.Join(render.AppsOverlay(env, s.name), "kustomization.yaml")] = s.want[env]
		}
	}
	var changed []string
	for p := range main {
		if branch[p] != main[p] {
			changed = append(changed, p)
		}
	}
	for p := range branch {
		if _, ok := main[p]; !ok {
			changed = append(changed, p)
		}
	}
	slices.Sort(changed)
	wantFiles := make([]string, 0, len(want))
	for p := range want {
		wantFiles = append(wantFiles, p)
	}
	slices.Sort(wantFiles)
	if !slices.Equal(changed, wantFiles) {
		t.Errorf("%s: review branch changes files %v, want exactly %v", env, changed, wantFiles)
	}
	for _, p := range wantFiles {
		oldLines, newLines := strings.Split(main[p], "\n"), strings.Split(branch[p], "\n")
		if len(oldLines) != len(newLines) {
			t.Errorf("%s: %s has %d lines on the branch, %d on main", env, p, len(newLines), len(oldLines))
			continue
		}
		diffs := 0
		for i := range oldLines {
			if oldLines[i] == newLines[i] {
				continue
			}
			diffs++
			marker := "# " + markerOf(p, env)
			if !strings.Contains(oldLines[i], marker) {
				t.Errorf("%s: %s line %d changed but is not a marked line: %q -> %q", env, p, i+1, oldLines[i], newLines[i])
				continue
			}
			wantLine := "  newTag: " + want[p] + " " + marker
			if newLines[i] != wantLine {
				t.Errorf("%s: %s line %d = %q, want %q", env, p, i+1, newLines[i], wantLine)
			}
		}
		if diffs != 1 {
			t.Errorf("%s: %s: %d lines changed, want 1", env, p, diffs)
		}
	}
}

// markerOf returns the setter marker render writes into the overlay file p.
func markerOf(p, env string) string {
	svc := path.Base(path.Dir(p))
	return render.ImagePolicyMarker(svc, env)
}

// testReceiver measures how long a push to main takes to be applied, first
// waiting for the GitRepository's interval, then with a POST to the rendered
// Receiver's webhook.
func testReceiver(t *testing.T, w *world) {
	ctx := t.Context()
	w.createWebhookSecret(t, "test-token-0123456789")
	w.applyRendered(t, "infrastructure/webhook/receiver.yaml")
	var hook string
	poll(t, "Receiver fleet-push has a webhook path", 30*time.Second, func(ctx context.Context) (bool, string) {
		r := &notifv1.Receiver{}
		if err := w.c.Client.Get(ctx, client.ObjectKey{Namespace: testbed.FluxNamespace, Name: "fleet-push"}, r); err != nil {
			return false, err.Error()
		}
		hook = r.Status.WebhookPath
		return hook != "" && apimeta.IsStatusConditionTrue(r.Status.Conditions, "Ready"), conditionNote(r.Status.Conditions)
	})
	post := func() {
		t.Helper()
		resp, err := http.Post(w.c.Flux.ReceiverURL+hook, "application/json", bytes.NewReader([]byte(`{}`)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: %s", hook, resp.Status)
		}
	}

	// Line up with the source's interval: a webhook call makes it fetch
	// now, so the next timed fetch is a whole interval away.
	before := sourceHandled(t, w)
	post()
	poll(t, "GitRepository handles the webhook's request", 10*time.Second, func(ctx context.Context) (bool, string) {
		h := sourceHandled(t, w)
		return h != before && h != "", "lastHandledReconcileAt " + h
	})

	// Without the webhook: merge the staging review branch into main (the
	// chat image bump) and wait.
	staging, err := w.repo.ReadBranch(render.ReviewBranch(w.stack, "staging"))
	if err != nil {
		t.Fatal(err)
	}
	merged, err := w.repo.CommitFiles(staging.Files, "merge image-updates/staging")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := w.c.WaitApplied(ctx, "app-chat", w.repo.Revision(merged), 2*sourceInterval); err != nil {
		t.Fatal(err)
	}
	without := time.Since(start)
	wantImage(t, w, "chat", w.reg.Image(repoChat)+":0.6.7")

	// With the webhook: the prod review branch merged on top, then a POST,
	// as the git host would send it.
	prod, err := w.repo.ReadBranch(render.ReviewBranch(w.stack, "prod"))
	if err != nil {
		t.Fatal(err)
	}
	files := staging.Files
	for p, c := range prod.Files {
		if strings.HasPrefix(p, "apps/prod/") {
			files[p] = c
		}
	}
	merged, err = w.repo.CommitFiles(files, "merge image-updates/prod")
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	post()
	if err := w.c.WaitApplied(ctx, "app-chat", w.repo.Revision(merged), 2*sourceInterval); err != nil {
		t.Fatal(err)
	}
	with := time.Since(start)
	t.Logf("push to applied: %s without the webhook (GitRepository interval %s), %s with it",
		without.Round(10*time.Millisecond), sourceInterval, with.Round(10*time.Millisecond))
	if with > 10*time.Second {
		t.Errorf("with the webhook the push took %s to apply, want under 10s", with)
	}
	if without < sourceInterval/2 {
		t.Errorf("without the webhook the push applied after %s, before half the %s interval: the comparison proves nothing", without, sourceInterval)
	}
}

// sourceHandled returns the GitRepository's last handled reconcile request.
func sourceHandled(t *testing.T, w *world) string {
	t.Helper()
	r := &sourcev1.GitRepository{}
	if err := w.c.Client.Get(t.Context(), client.ObjectKey{Namespace: testbed.FluxNamespace, Name: "flux-system"}, r); err != nil {
		t.Fatal(err)
	}
	return r.Status.LastHandledReconcileAt
}

// testAlert applies the rendered Provider and Alert, makes a Kustomization
// fail, and waits for the failure to reach the alert endpoint. It then posts
// a HelmRelease failure the way helm-controller reports one (helm-controller
// is not built for the testbed) and waits for that too.
func testAlert(t *testing.T, w *world) {
	w.applyRendered(t, "infrastructure/configs/provider.yaml")
	w.applyRendered(t, "infrastructure/configs/alert.yaml")
	w.applyKustomization(t, "broken", "./apps/staging/no-such-service")
	var ev postedEvent
	poll(t, "the failure of Kustomization broken reaches the alert endpoint", 60*time.Second, func(ctx context.Context) (bool, string) {
		var ok bool
		ev, ok = w.alerts.find(kustomizev1.KustomizationKind, testbed.FluxNamespace, "broken")
		return ok, fmt.Sprintf("%d events posted; Kustomization: %s", w.alerts.count(), kustomizationNote(ctx, w, "broken"))
	})
	if ev.Severity != "error" || ev.path != "/flux" {
		t.Errorf("alert: severity %q at path %q, want error at /flux", ev.Severity, ev.path)
	}
	if got, want := ev.Metadata["summary"], "gpufleet: a reconciliation failed"; got != want {
		t.Errorf("alert summary %q, want %q", got, want)
	}
	t.Logf("alert for Kustomization broken: %s: %s", ev.Reason, ev.Message)

	// A failed HelmRelease of a charted service lives in the service's own
	// namespace (qdrant in llm-data), not in flux-system.
	for _, obj := range [][2]string{{"llm-data", "qdrant"}, {render.GPUOperatorNamespace, "gpu-operator"}} {
		body, _ := json.Marshal(map[string]any{
			"involvedObject": map[string]string{
				"kind": "HelmRelease", "apiVersion": "helm.toolkit.fluxcd.io/v2",
				"namespace": obj[0], "name": obj[1],
			},
			"severity":            "error",
			"timestamp":           time.Now().UTC().Format(time.RFC3339),
			"message":             "install retries exhausted",
			"reason":              "InstallFailed",
			"reportingController": "helm-controller",
		})
		resp, err := http.Post(w.c.Flux.EventsURL, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("post HelmRelease event: %s", resp.Status)
		}
		poll(t, fmt.Sprintf("the failure of HelmRelease %s/%s reaches the alert endpoint", obj[0], obj[1]), 20*time.Second,
			func(ctx context.Context) (bool, string) {
				_, ok := w.alerts.find("HelmRelease", obj[0], obj[1])
				return ok, fmt.Sprintf("%d events posted", w.alerts.count())
			})
	}
}

// wantImage checks the image of the Deployment name that Flux applied.
func wantImage(t *testing.T, w *world, name, want string) {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := w.c.Client.Get(t.Context(), client.ObjectKey{Namespace: "llm-front", Name: name}, d); err != nil {
		t.Fatal(err)
	}
	if got := d.Spec.Template.Spec.Containers[0].Image; got != want {
		t.Errorf("Deployment %s image %q, want %q", name, got, want)
	}
}

// conditionNote summarises conditions for poll notes.
func conditionNote(conds []metav1.Condition) string {
	var parts []string
	for _, c := range conds {
		parts = append(parts, fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message))
	}
	if len(parts) == 0 {
		return "no conditions"
	}
	return strings.Join(parts, "; ")
}

func objectMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: testbed.FluxNamespace, Name: name}
}

func automationNote(ctx context.Context, w *world, env string) string {
	a := &imageautov1.ImageUpdateAutomation{}
	if err := w.c.Client.Get(ctx, client.ObjectKey{Namespace: testbed.FluxNamespace, Name: env}, a); err != nil {
		return err.Error()
	}
	return "ImageUpdateAutomation " + env + ": " + conditionNote(a.Status.Conditions)
}

func kustomizationNote(ctx context.Context, w *world, name string) string {
	k := &kustomizev1.Kustomization{}
	if err := w.c.Client.Get(ctx, client.ObjectKey{Namespace: testbed.FluxNamespace, Name: name}, k); err != nil {
		return err.Error()
	}
	return conditionNote(k.Status.Conditions)
}
