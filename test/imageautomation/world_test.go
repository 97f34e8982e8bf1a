package imageautomation

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/render"
	"github.com/gpufleet/gpufleet/internal/testworld/testbed"
)

// Registry repositories of the example fleet's image services, once their
// registry host is swapped for the test registry's.
const (
	repoVLLM    = "vllm/vllm-openai"
	repoTEI     = "huggingface/text-embeddings-inference"
	repoLiteLLM = "berriai/litellm"
	repoChat    = "open-webui/open-webui"
)

// prodVLLMRange narrows vllm's range in prod only, so the two environments'
// policies disagree: prod must stay at 0.8.4 while staging moves to 0.8.5.
const prodVLLMRange = ">=0.8.0 <0.8.5"

// world is one cluster running every Flux controller the serving stack
// needs, a git server holding the rendered fleet repository, an OCI registry
// and an HTTP endpoint that receives alerts.
type world struct {
	tb       *testbed.Testbed
	c        *testbed.Cluster
	reg      *testbed.Registry
	repo     *testbed.GitRepo
	out      *render.Output
	stack    *fleet.Stack
	mainHash string
	alerts   *alertSink
}

// newWorld starts everything and commits the rendered fleet to main.
func newWorld(t *testing.T) *world {
	t.Helper()
	tb := testbed.New(t, testbed.Options{Flux: true, FluxImage: true, Notification: true, Git: true})
	w := &world{tb: tb, c: tb.Clusters()[0], reg: testbed.StartRegistry(), alerts: newAlertSink()}
	t.Cleanup(w.reg.Close)
	srv := httptest.NewServer(w.alerts)
	t.Cleanup(srv.Close)

	f := loadFleetVariant(t, w.reg.Host(), srv.URL+"/flux")
	out, err := render.Render(f)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	w.out, w.stack = out, f.Stack
	repo, err := tb.Git.NewRepo("fleet.git", "main", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w.repo = repo
	files := map[string]string{}
	for p, b := range out.Files {
		files[p] = string(b)
	}
	if w.mainHash, err = repo.CommitFiles(files, "gpufleet render"); err != nil {
		t.Fatal(err)
	}
	return w
}

// loadFleetVariant writes the example fleet with its images moved to the
// test registry (same repository paths), its alert URL pointing at alertURL
// and prod's vllm range narrowed, and loads it.
func loadFleetVariant(t *testing.T, registryHost, alertURL string) *fleet.Fleet {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "fleet.toml"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	images := regexp.MustCompile(`(?m)^image = "([^"]+)"`)
	s = images.ReplaceAllStringFunc(s, func(line string) string {
		img := images.FindStringSubmatch(line)[1]
		// Drop a registry host ("ghcr.io/..."): its first part has a dot.
		if first, rest, ok := strings.Cut(img, "/"); ok && strings.ContainsAny(first, ".:") {
			img = rest
		}
		return fmt.Sprintf("image = %q", registryHost+"/"+img)
	})
	alert := regexp.MustCompile(`(?m)^alert-url = "[^"]*"`)
	if !alert.MatchString(s) {
		t.Fatal("examples/fleet.toml has no [stack] alert-url line")
	}
	s = alert.ReplaceAllString(s, fmt.Sprintf("alert-url = %q", alertURL))
	const prodVLLM = "[stack.services.vllm.environments.prod]\n"
	if !strings.Contains(s, prodVLLM) {
		t.Fatal("examples/fleet.toml has no [stack.services.vllm.environments.prod] table")
	}
	s = strings.Replace(s, prodVLLM, prodVLLM+fmt.Sprintf("tag-range = %q\n", prodVLLMRange), 1)
	path := filepath.Join(t.TempDir(), "fleet.toml")
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := fleet.Load(path)
	if err != nil {
		t.Fatalf("load the fleet variant: %v", err)
	}
	return f
}

// applyRendered creates the object of the rendered file path in the cluster,
// exactly as render wrote it.
func (w *world) applyRendered(t *testing.T, path string) *unstructured.Unstructured {
	t.Helper()
	b, ok := w.out.Files[path]
	if !ok {
		t.Fatalf("render wrote no %s", path)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &u.Object); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if err := w.c.Client.Create(t.Context(), u); err != nil {
		t.Fatalf("apply %s: %v", path, err)
	}
	return u
}

// applySource creates the GitRepository "flux-system" that the rendered
// Receiver and ImageUpdateAutomations refer to, with the given interval.
func (w *world) applySource(t *testing.T, interval time.Duration) {
	t.Helper()
	repo := &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "flux-system", Namespace: testbed.FluxNamespace},
		Spec: sourcev1.GitRepositorySpec{
			URL:       w.repo.URL,
			Interval:  metav1.Duration{Duration: interval},
			Reference: &sourcev1.GitRepositoryRef{Branch: "main"},
		},
	}
	if err := w.c.Client.Create(t.Context(), repo); err != nil {
		t.Fatal(err)
	}
}

// applyKustomization creates a Kustomization of path from "flux-system".
// It does not wait for workloads: no kubelet runs on the testbed.
func (w *world) applyKustomization(t *testing.T, name, path string) {
	t.Helper()
	ks := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testbed.FluxNamespace},
		Spec: kustomizev1.KustomizationSpec{
			Interval:  metav1.Duration{Duration: 10 * time.Minute},
			Path:      path,
			Prune:     true,
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "flux-system"},
		},
	}
	if err := w.c.Client.Create(t.Context(), ks); err != nil {
		t.Fatal(err)
	}
}

// requestReconcile does what "flux reconcile" does: it sets the
// reconcile-request annotation, which every Flux controller honours at once.
func (w *world) requestReconcile(t *testing.T, obj client.Object) {
	t.Helper()
	ctx := t.Context()
	if err := w.c.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[meta.ReconcileRequestAnnotation] = time.Now().Format(time.RFC3339Nano)
	obj.SetAnnotations(ann)
	if err := w.c.Client.Patch(ctx, obj, patch); err != nil {
		t.Fatal(err)
	}
}

// createWebhookSecret creates the Receiver's token Secret directly: in Git it
// is SOPS-encrypted, which this test is not about.
func (w *world) createWebhookSecret(t *testing.T, token string) {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: render.WebhookSecretName, Namespace: testbed.FluxNamespace},
		StringData: map[string]string{"token": token},
	}
	if err := w.c.Client.Create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
}

// poll calls cond every 200 ms until it returns true, failing t with the
// last note cond gave when timeout passes.
func poll(t *testing.T, what string, timeout time.Duration, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, note := cond(ctx)
		last = note
		return ok, nil
	})
	if err != nil {
		t.Fatalf("%s: not within %s; last seen: %s", what, timeout, last)
	}
}

// alertSink records what a generic Provider posts: Flux event JSON.
type alertSink struct {
	mu     sync.Mutex
	events []postedEvent
}

// postedEvent is the part of a Flux event the tests look at.
type postedEvent struct {
	InvolvedObject struct {
		Kind, Namespace, Name string
	} `json:"involvedObject"`
	Severity            string            `json:"severity"`
	Message             string            `json:"message"`
	Reason              string            `json:"reason"`
	ReportingController string            `json:"reportingController"`
	Metadata            map[string]string `json:"metadata"`
	path                string
}

func newAlertSink() *alertSink { return &alertSink{} }

func (a *alertSink) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var ev postedEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	ev.path = r.URL.Path
	a.mu.Lock()
	a.events = append(a.events, ev)
	a.mu.Unlock()
}

// find returns the first event posted about kind/namespace/name.
func (a *alertSink) find(kind, namespace, name string) (postedEvent, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, ev := range a.events {
		o := ev.InvolvedObject
		if o.Kind == kind && o.Namespace == namespace && o.Name == name {
			return ev, true
		}
	}
	return postedEvent{}, false
}

func (a *alertSink) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.events)
}
