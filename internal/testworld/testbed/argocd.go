package testbed

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/internal/crdcheck"
)

// Argo CD, as the testbed runs it for a cluster that asks for it
// ([Options.ArgoCD]): the real application-controller and repo-server
// (v3.6.1, one binary built by hack/testbin.sh from argo-cd's own command
// packages) and a real redis (Debian's redis-server), out of cluster,
// pointed at the cluster through its kubeconfig, with the Application and
// AppProject CRDs and the config objects of the same argo-cd module. What an
// Argo CD install has that is not run: argocd-server (the API, the UI and
// the webhooks; the default AppProject it would create is created here),
// Dex, notifications and the ApplicationSet controller.

// ArgoCDNamespace is where Argo CD runs and its Applications live.
const ArgoCDNamespace = "argocd"

// ArgoCDResync is how often the testbed's application-controller compares
// each Application with git: Argo CD's default is 3 minutes, which the
// tests would spend waiting.
const ArgoCDResync = 3 * time.Second

const (
	binArgoCD          = "argocd"
	binArgoKustomize   = "kustomize"
	binGitVerifyScript = "git-verify-wrapper.sh"
	// redisServer is Debian's redis-server, on PATH.
	redisServer = "redis-server"
)

// ArgoCD is one cluster's Argo CD: its redis, repo-server and
// application-controller, as subprocesses of the test.
type ArgoCD struct {
	procs []*process
}

// ArgoCDCRDDir is the folder of the Application and AppProject CRDs.
func (b Binaries) ArgoCDCRDDir() string { return filepath.Join(b.Dir, "crds", "argocd") }

// ArgoCDConfigDir is the folder of Argo CD's config objects (argocd-cm,
// argocd-secret, …), as `kubectl apply -k manifests/base/config` applies.
func (b Binaries) ArgoCDConfigDir() string { return filepath.Join(b.Dir, "argocd-config") }

// CheckArgoCD reports whether Argo CD's programs, CRDs and config are
// present, and redis-server and git on PATH.
func (b Binaries) CheckArgoCD() error {
	if err := b.check(binArgoCD, binArgoKustomize, binGitVerifyScript); err != nil {
		return err
	}
	for _, dir := range []string{b.ArgoCDCRDDir(), b.ArgoCDConfigDir()} {
		if m, _ := filepath.Glob(filepath.Join(dir, "*.yaml")); len(m) == 0 {
			return fmt.Errorf("%w: nothing in %s: run `make testbin`", ErrMissingBinaries, dir)
		}
	}
	for _, prog := range []string{redisServer, "git"} {
		if _, err := exec.LookPath(prog); err != nil {
			return fmt.Errorf("%w: %s is not on PATH: Argo CD's repo-server and application-controller need it (Debian's redis-server and git packages; .ci/run installs them)", ErrMissingBinaries, prog)
		}
	}
	return nil
}

// startArgoCD starts Argo CD for c: it installs the config objects and the
// default AppProject, then starts redis, the repo-server (with the
// testbed's kustomize and git-verify-wrapper.sh on its PATH) and the
// application-controller, and waits until both answer /healthz.
func startArgoCD(ctx context.Context, bins Binaries, c *Cluster) (*ArgoCD, error) {
	if err := c.EnsureNamespace(ctx, ArgoCDNamespace); err != nil {
		return nil, err
	}
	if err := installArgoCDConfig(ctx, bins, c); err != nil {
		return nil, err
	}
	dir := filepath.Join(c.Dir, "argocd")
	home := filepath.Join(dir, "home")
	for _, d := range []string{"tls", "ssh", "gnupg", "home", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, fmt.Errorf("cluster %s: argocd: %w", c.Name, err)
		}
	}
	ports := make([]int, 4)
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	redisPort, repoPort, repoMetrics, ctlMetrics := ports[0], ports[1], ports[2], ports[3]
	redisAddr := "127.0.0.1:" + strconv.Itoa(redisPort)
	redisPath, err := exec.LookPath(redisServer)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", c.Name, err)
	}
	a := &ArgoCD{}
	fail := func(err error) (*ArgoCD, error) {
		return nil, errors.Join(fmt.Errorf("cluster %s: argocd: %w", c.Name, err), a.stop())
	}
	p, err := startProcess("redis", redisPath, []string{"--port", strconv.Itoa(redisPort), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"},
		environ(nil), filepath.Join(dir, "redis.log"))
	if err != nil {
		return fail(err)
	}
	a.procs = append(a.procs, p)
	common := map[string]string{
		// What timeout.reconciliation in argocd-cm sets in an install: how
		// often the controller compares each Application with git, and how
		// long the repo-server keeps what a branch resolved to.
		"ARGOCD_RECONCILIATION_TIMEOUT": ArgoCDResync.String(),
		"ARGOCD_RECONCILIATION_JITTER":  "0s",
		"KUBECONFIG":                    c.Kubeconfig,
		"HOME":                          home,
		"TMPDIR":                        filepath.Join(dir, "tmp"),
		// The repo-server runs kustomize and git-verify-wrapper.sh by name.
		"PATH": bins.Dir + string(os.PathListSeparator) + os.Getenv("PATH"),
	}
	with := func(extra map[string]string) []string {
		m := map[string]string{}
		maps.Copy(m, common)
		maps.Copy(m, extra)
		return environ(m)
	}
	repo, err := startProcess("argocd-repo-server", bins.Path(binArgoCD), []string{
		"--address", "127.0.0.1", "--port", strconv.Itoa(repoPort),
		"--metrics-address", "127.0.0.1", "--metrics-port", strconv.Itoa(repoMetrics),
		"--redis", redisAddr, "--logformat", "text",
	}, with(map[string]string{
		"ARGOCD_BINARY_NAME":   "argocd-repo-server",
		"ARGOCD_GPG_ENABLED":   "false",
		"ARGOCD_TLS_DATA_PATH": filepath.Join(dir, "tls"),
		"ARGOCD_SSH_DATA_PATH": filepath.Join(dir, "ssh"),
		"ARGOCD_GNUPGHOME":     filepath.Join(dir, "gnupg"),
	}), filepath.Join(dir, "argocd-repo-server.log"))
	if err != nil {
		return fail(err)
	}
	a.procs = append(a.procs, repo)
	ctl, err := startProcess("argocd-application-controller", bins.Path(binArgoCD), []string{
		"--kubeconfig", c.Kubeconfig, "--namespace", ArgoCDNamespace,
		"--redis", redisAddr, "--repo-server", "127.0.0.1:" + strconv.Itoa(repoPort),
		"--metrics-port", strconv.Itoa(ctlMetrics),
		"--self-heal-backoff-timeout-seconds", "1",
		"--status-processors", "4", "--operation-processors", "4",
		"--logformat", "text",
	}, with(map[string]string{
		"ARGOCD_BINARY_NAME": "argocd-application-controller",
		// The in-cluster destination (https://kubernetes.default.svc) is
		// the cluster of the kubeconfig.
		"ARGOCD_FAKE_IN_CLUSTER": "true",
	}), filepath.Join(dir, "argocd-application-controller.log"))
	if err != nil {
		return fail(err)
	}
	a.procs = append(a.procs, ctl)
	for _, w := range []struct {
		p    *process
		port int
	}{{repo, repoMetrics}, {ctl, ctlMetrics}} {
		if err := waitReady(ctx, w.p, "http://127.0.0.1:"+strconv.Itoa(w.port)+"/healthz"); err != nil {
			return fail(err)
		}
	}
	return a, nil
}

// installArgoCDConfig creates Argo CD's config objects in its namespace, as
// its install manifests do, and the default AppProject argocd-server would
// create. An object that exists is left as it is.
func installArgoCDConfig(ctx context.Context, bins Binaries, c *Cluster) error {
	files, err := filepath.Glob(filepath.Join(bins.ArgoCDConfigDir(), "*.yaml"))
	if err != nil {
		return err
	}
	var objs []*unstructured.Unstructured
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		docs, err := yamlDocs(b)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		objs = append(objs, docs...)
	}
	project := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
		"metadata": map[string]any{"name": "default"},
		"spec": map[string]any{
			"sourceRepos":              []any{"*"},
			"destinations":             []any{map[string]any{"server": "*", "namespace": "*"}},
			"clusterResourceWhitelist": []any{map[string]any{"group": "*", "kind": "*"}},
		},
	}}
	for _, o := range append(objs, project) {
		o.SetNamespace(ArgoCDNamespace)
		if err := c.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("cluster %s: argocd: create %s %s: %w", c.Name, o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}

// yamlDocs reads the objects of a multi-document YAML file.
func yamlDocs(b []byte) ([]*unstructured.Unstructured, error) {
	docs, err := crdcheck.SplitYAML(b)
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, 0, len(docs))
	for _, j := range docs {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(j); err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

// LogTail returns the last n lines of each program's log.
func (a *ArgoCD) LogTail(n int) string {
	if a == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range a.procs {
		fmt.Fprintf(&b, "--- %s (%s) ---\n%s\n", p.name, p.logPath, p.tail(n))
	}
	return b.String()
}

// stop ends the application-controller, then the repo-server, then redis.
func (a *ArgoCD) stop() error {
	if a == nil {
		return nil
	}
	var errs []error
	for _, v := range slices.Backward(a.procs) {
		errs = append(errs, v.stop(10*time.Second))
	}
	return errors.Join(errs...)
}

// WaitSynced waits until Argo CD has synced Application name of c to
// revision (a commit, or Flux's "main@sha1:…" form of one): Synced at it,
// no sync running. With healthy, its health must be Healthy too. The error
// carries what the Application last said and the tail of Argo CD's logs.
func (c *Cluster) WaitSynced(ctx context.Context, name, revision string, healthy bool, timeout time.Duration) error {
	if i := strings.LastIndex(revision, ":"); i >= 0 {
		revision = revision[i+1:]
	}
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		app := &unstructured.Unstructured{}
		app.SetAPIVersion("argoproj.io/v1alpha1")
		app.SetKind("Application")
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ArgoCDNamespace, Name: name}, app); err != nil {
			if last == "" || !errors.Is(err, ctx.Err()) {
				last = err.Error()
			}
			return false, nil
		}
		sync, _, _ := unstructured.NestedString(app.Object, "status", "sync", "status")
		rev, _, _ := unstructured.NestedString(app.Object, "status", "sync", "revision")
		health, _, _ := unstructured.NestedString(app.Object, "status", "health", "status")
		phase, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "phase")
		msg, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "message")
		_, running, _ := unstructured.NestedMap(app.Object, "operation")
		last = fmt.Sprintf("%s at %s, health %s, last sync %s: %s", sync, rev, health, phase, msg)
		return sync == "Synced" && strings.HasPrefix(rev, revision) && !running && phase != "Running" && phase != "Terminating" &&
			(!healthy || health == "Healthy"), nil
	})
	if err != nil {
		return fmt.Errorf("cluster %s: Application %s did not sync %s: %w; last seen: %s\n%s",
			c.Name, name, revision, err, last, c.ArgoCD.LogTail(20))
	}
	return nil
}
