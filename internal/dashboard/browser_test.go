package dashboard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/cli"
	"github.com/gpufleet/gpufleet/internal/dashboard"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/testworld/lab"
	"github.com/gpufleet/gpufleet/internal/testworld/nodesim"
)

// installChromium is what makes the browser test runnable where chromium
// is missing (Debian's package; .ci/run installs it).
const installChromium = "apt-get install -y chromium"

// artifactsEnv names a folder for the test's screenshots; without it they
// go to the test's artifact folder (go test -artifacts -outputdir DIR).
const artifactsEnv = "GPUFLEET_DASHBOARD_ARTIFACTS"

const (
	stg, prod, lost = "stg", "prod", "lost"
	relGood         = "r2026-10"
	// maxDelay is how late the page may show a node's phase.
	maxDelay = 2 * time.Second
)

// TestDashboardInChromium plays a driver rollout on the testbed (two
// clusters with real Flux, the real GPU Operator, the controller and
// simulated nodes, by the lab) with the dashboard serving it and a real
// headless Chromium looking at the page: the page shows the waves and
// clusters, each node's phase on the page follows the cluster within 2 s
// (every delay is measured against the moment the controller recorded the
// transition on the node, and logged), the cluster whose API server cannot
// be reached is shown unreachable with the error, and screenshots are kept.
func TestDashboardInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("dashboard: the browser test needs the testbed; skipped under -short")
	}
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("dashboard: the browser test needs Debian's chromium: install it with `%s` (%v)", installChromium, err)
	}
	ctrllog.SetLogger(logr.Discard())
	log.SetOutput(io.Discard)
	t.Setenv("TMPDIR", t.TempDir())
	if err := lab.CheckPrograms(); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	src, err := os.ReadFile("testdata/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	began := time.Now()
	w, err := lab.Start(ctx, lab.Options{
		Root: "../..", Dir: t.TempDir(), Clusters: []string{stg, prod}, FleetTOML: src, ChartVersion: "v25.3.4",
		Pool:    nodesim.Pool{Name: "h100", Product: "NVIDIA-H100-80GB-HBM3", Nodes: 3, Driver: "570.172.08"},
		GitUser: "dashboard", OnError: func(err error) { t.Errorf("%v", err) },
	})
	if errors.Is(err, lab.ErrNoOperatorCharts) {
		t.Skipf("dashboard: needs the real GPU Operator charts in ../shared/operators: %v", err)
	}
	if err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	t.Cleanup(func() {
		if err := w.Stop(); err != nil {
			t.Errorf("testbed: %v", err)
		}
	})
	t.Logf("testbed up in %s", time.Since(began).Round(time.Millisecond))

	// The fleet's first render, applied by Flux in both clusters.
	gpufleet(t, "render", "-f", w.FleetFile)
	p := w.In(t)
	p.Git("add", "-A")
	p.Git("commit", "-q", "-m", "gpufleet render: the fleet's first render")
	rev := p.Push()
	for _, c := range []string{stg, prod} {
		p.WaitApplied(c, rev)
	}
	t.Logf("first render applied in both clusters after %s", time.Since(began).Round(time.Millisecond))

	kubeconfig, lostAddr := kubeconfigWithLost(t, w.Testbed.Kubeconfig)
	d, err := dashboard.New(dashboard.Options{FleetFile: w.FleetFile, Kubeconfig: kubeconfig, Explain: dashboard.ExplainLibrary{}, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dctx, stopDashboard := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- d.Serve(dctx, ln) }()
	t.Cleanup(func() {
		stopDashboard()
		if err := <-served; err != nil {
			t.Errorf("dashboard: %v", err)
		}
	})
	url := "http://" + ln.Addr().String() + "/"

	actx, cancel := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1500, 1100))...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	// The first action starts the browser, which lives as long as the
	// context of that call: it gets no timeout of its own.
	if err := chromedp.Do(bctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("chromium: open the page: %v", err)
	}
	b := browser{t: t, ctx: bctx, dump: func() string {
		js, _ := json.MarshalIndent(d.Views(), "", "  ")
		html, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
		return fmt.Sprintf("the dashboard's views:\n%s\nthe page:\n%s", js, html)
	}}

	// The waves in order, every cluster under its wave, stg and prod read.
	b.do("wait for the clusters",
		chromedp.WaitVisible(chromedp.CSS(`[data-cluster="stg"][data-reachable="true"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-cluster="prod"][data-reachable="true"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-cluster="lost"] [data-error]`)),
		chromedp.WaitVisible(chromedp.CSS(`#live.on`)))
	waves := eval[[]string](b, `[...document.querySelectorAll("section.wave")].map(s => s.dataset.wave)`)
	stgWave := eval[[]string](b, `[...document.querySelectorAll('section.wave[data-wave="staging"] [data-cluster]')].map(c => c.dataset.cluster)`)
	prodWave := eval[[]string](b, `[...document.querySelectorAll('section.wave[data-wave="production"] [data-cluster]')].map(c => c.dataset.cluster)`)
	if !slices.Equal(waves, []string{"staging", "production"}) || !slices.Equal(stgWave, []string{stg}) || !slices.Equal(prodWave, []string{prod, lost}) {
		t.Errorf("page shows waves %v, staging %v, production %v; want [staging production], [stg], [prod lost]", waves, stgWave, prodWave)
	}
	if next, want := eval[string](b, `document.getElementById("next-command").textContent`), statusNext(t, w.FleetFile); next != want {
		t.Errorf("page says next %q, gpufleet status says %q", next, want)
	}

	// The unreachable cluster: shown so, with the error, never healthy.
	lostCard := eval[string](b, `document.querySelector('[data-cluster="lost"]').innerText`)
	lostVerdict := eval[string](b, `document.querySelector('[data-cluster="lost"]').dataset.verdict`)
	if !strings.Contains(lostCard, "UNREACHABLE") || !strings.Contains(lostCard, "connection refused") || strings.Contains(lostCard, "converged") || lostVerdict == string(gate.Pass) {
		t.Errorf("the unreachable cluster is shown as:\n%s\n(verdict %q); want UNREACHABLE with the connection error", lostCard, lostVerdict)
	}

	// The dangerous case: a cluster that was read well goes away. Its
	// network comes (a proxy to stg's API server), the page reads it; the
	// network goes, and the page must say so at once rather than keep
	// showing what it read.
	u, err := neturl.Parse(w.Testbed.Cluster(stg).Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy := startProxy(t, lostAddr, u.Host)
	b.do("wait for the lost cluster to be read", chromedp.WaitVisible(chromedp.CSS(`[data-cluster="lost"][data-reachable="true"] .flux`)))
	eval[chromedp.Void](b, `(() => { window.__lostDown = 0; new MutationObserver(() => {
	  const c = document.querySelector('[data-cluster="lost"]');
	  if (!window.__lostDown && c && c.dataset.reachable === "false") window.__lostDown = Date.now();
	}).observe(document.body, {subtree: true, childList: true, attributes: true}); })()`)
	cut := time.Now()
	proxy.stop()
	b.do("wait for the lost cluster to be shown unreachable", chromedp.WaitVisible(chromedp.CSS(`[data-cluster="lost"][data-reachable="false"] [data-error]`)))
	shown := time.UnixMilli(eval[int64](b, `window.__lostDown`))
	t.Logf("cluster lost: its connection cut at %s, shown unreachable on the page %d ms later", cut.Format("15:04:05.000"), shown.Sub(cut).Milliseconds())
	// The probe (every 5 s, 5 s timeout) bounds it even where no request
	// of the informers fails first.
	if late := shown.Sub(cut); late > 2*dashboard.DefaultProbeInterval {
		t.Errorf("the cluster that went away was shown unreachable %s after, more than two probe intervals", late)
	}
	lostCard = eval[string](b, `document.querySelector('[data-cluster="lost"]').innerText`)
	if strings.Contains(lostCard, "flux/Kustomization") || strings.Contains(lostCard, "converged") {
		t.Errorf("the cluster that went away still shows what it read:\n%s", lostCard)
	}

	// Record every phase the page shows for stg's nodes, with the time
	// the DOM changed.
	eval[chromedp.Void](b, recorderJS)
	recStart := time.Now()

	// Start the good release: staging's DriverRollout moves its nodes.
	gpufleet(t, "start", relGood, "-f", w.FleetFile)
	p.Push()
	f, err := fleet.Load(w.FleetFile)
	if err != nil {
		t.Fatal(err)
	}
	rollout := gate.Expect(f, stg, "").Rollout
	cluster := pollTransitions(ctx, t, w, stg, rollout)
	shot := func(name string) { keep(t, name, runIn(b, "screenshot", chromedp.FullScreenshot(100))) }
	midShot := false
	deadline := time.Now().Add(4 * time.Minute)
	for {
		dr := p.Rollout(stg, rollout)
		if dr != nil && dr.Status.Phase == v1alpha1.PhaseCompleted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stg's DriverRollout %s did not complete: %+v", rollout, dr)
		}
		if !midShot {
			if eval[bool](b, `!!document.querySelector('[data-cluster="stg"] .phase[data-phase="Soaking"]')`) {
				shot("dashboard-mid-rollout.png")
				midShot = true
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(maxDelay + 500*time.Millisecond)
	seen := eval[[]pageRecord](b, `window.__seen`)
	checkDelays(t, cluster.get(), seen, recStart)
	done := eval[int](b, `document.querySelectorAll('[data-cluster="stg"] .phase[data-phase="Done"]').length`)
	if done != 3 {
		t.Errorf("the page shows %d of stg's nodes Done after the rollout completed, want 3", done)
	}
	if warn := eval[string](b, `[...document.querySelectorAll('[data-cluster="stg"] [data-warning], [data-cluster="prod"] [data-warning]')].map(e => e.textContent).join("; ")`); warn != "" {
		t.Errorf("a cluster read well says it may be stale: %s", warn)
	}
	shot("dashboard-rollout-done.png")
	stats := d.Stats()
	t.Logf("API requests since start: %v (rebuilds %v)", stats.Requests, stats.Rebuilds)
}

// browser is the tab the test looks through; each action gets a minute.
type browser struct {
	t   *testing.T
	ctx context.Context
	// dump says what the dashboard holds, when an action fails.
	dump func() string
}

func (b browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("chromium: %s: %v\n%s", what, err, b.dump())
	}
}

func runIn[T any](b browser, what string, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.t.Fatalf("chromium: %s: %v\n%s", what, err, b.dump())
	}
	return v
}

// eval evaluates a script in the page and decodes its value.
func eval[T any](b browser, script string) T {
	b.t.Helper()
	return runIn(b, script, chromedp.Evaluate[T](script))
}

// pageRecord is one phase the page showed for a node, and when (Unix ms).
type pageRecord struct {
	Node  string `json:"node"`
	Phase string `json:"phase"`
	T     int64  `json:"t"`
}

// recorderJS notes, whenever the DOM changes, each stg node whose phase on
// the page differs from the last one noted.
const recorderJS = `(() => {
  window.__seen = []; const last = {};
  const scan = () => {
    const t = Date.now();
    document.querySelectorAll('[data-cluster="stg"] .phase[data-node]').forEach(e => {
      const n = e.dataset.node, p = e.dataset.phase;
      if (last[n] !== p) { last[n] = p; window.__seen.push({node: n, phase: p, t: t}); }
    });
  };
  new MutationObserver(scan).observe(document.body, {subtree: true, childList: true, attributes: true});
  scan();
})()`

// transition is a phase a node entered, at the time the controller wrote
// on it (gpufleet.io/rollout-since).
type transition struct {
	Node, Phase string
	Since       time.Time
}

// checkDelays: for each transition in the cluster after the recorder
// started, the page showed that phase or a later one of the node within
// maxDelay. A phase shorter than a rebuild may be skipped on the page,
// which then shows the one after it.
func checkDelays(t *testing.T, cluster []transition, seen []pageRecord, recStart time.Time) {
	t.Helper()
	byNode := map[string][]transition{}
	for _, tr := range cluster {
		byNode[tr.Node] = append(byNode[tr.Node], tr)
	}
	var delays []time.Duration
	checked := 0
	for node, trs := range byNode {
		for i, tr := range trs {
			if tr.Since.Before(recStart) {
				continue
			}
			later := map[string]bool{}
			for _, x := range trs[i:] {
				later[x.Phase] = true
			}
			var shown time.Time
			for _, r := range seen {
				if r.Node == node && later[r.Phase] && r.T >= tr.Since.UnixMilli()-1 {
					shown = time.UnixMilli(r.T)
					break
				}
			}
			checked++
			if shown.IsZero() {
				t.Errorf("node %s entered %s at %s; the page never showed it or a later phase", node, tr.Phase, tr.Since.Format(time.RFC3339Nano))
				continue
			}
			delay := max(shown.Sub(tr.Since), 0)
			delays = append(delays, delay)
			t.Logf("node %s → %-11s in the cluster at %s, on the page %4d ms later", node, tr.Phase, tr.Since.Format("15:04:05.000"), delay.Milliseconds())
			if delay > maxDelay {
				t.Errorf("node %s entered %s at %s; the page showed it %s later (more than %s)", node, tr.Phase, tr.Since.Format(time.RFC3339Nano), delay, maxDelay)
			}
		}
	}
	if checked < 3*5 {
		t.Errorf("only %d transitions of stg's nodes were seen in the cluster; the rollout should make at least 15", checked)
	}
	if len(delays) > 0 {
		slices.Sort(delays)
		t.Logf("page delay over %d transitions: median %d ms, max %d ms", len(delays), delays[len(delays)/2].Milliseconds(), delays[len(delays)-1].Milliseconds())
	}
}

// transitions collects, from a poll of the cluster's nodes, every phase of
// rollout each node entered and when the controller says it did.
type transitions struct {
	ch chan []transition
}

func (tr transitions) get() []transition { return <-tr.ch }

func pollTransitions(ctx context.Context, t *testing.T, w *lab.World, cluster, rollout string) transitions {
	out := transitions{ch: make(chan []transition)}
	seen := map[string]bool{}
	var all []transition
	// A watch, not a poll: a phase can last less than any poll interval
	// (a node with nothing to evict drains in milliseconds), and every
	// write of the controller is one watch event.
	wc, err := client.NewWithWatch(w.Testbed.Cluster(cluster).Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	note := func(n *corev1.Node) {
		st := v1alpha1.NodeStateOf(n.Labels, n.Annotations)
		if st.Rollout != rollout || st.Phase == "" || st.Since.IsZero() {
			return
		}
		key := fmt.Sprintf("%s/%s/%d", n.Name, st.Phase, st.Since.UnixNano())
		if !seen[key] {
			seen[key] = true
			all = append(all, transition{Node: n.Name, Phase: string(st.Phase), Since: st.Since})
		}
	}
	go func() {
		for ctx.Err() == nil {
			wi, err := wc.Watch(ctx, &corev1.NodeList{})
			if err != nil {
				time.Sleep(25 * time.Millisecond)
				continue
			}
			for open := true; open; {
				select {
				case <-ctx.Done():
					wi.Stop()
					return
				case out.ch <- slices.Clone(all):
				case ev, ok := <-wi.ResultChan():
					if !ok {
						open = false
						break
					}
					if n, isNode := ev.Object.(*corev1.Node); isNode {
						note(n)
					}
				}
			}
		}
	}()
	return out
}

// kubeconfigWithLost is the testbed's kubeconfig with a context "lost"
// that reaches stg's API server (its CA, its user) at another address, a
// port that was just free: connections are refused until a proxy listens
// there (see tcpProxy). It returns the file and that address.
func kubeconfigWithLost(t *testing.T, path string) (string, string) {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	from := cfg.Contexts[stg]
	cl := cfg.Clusters[from.Cluster].DeepCopy()
	cl.Server = "https://" + addr
	cfg.Clusters[lost] = cl
	cfg.Contexts[lost] = &clientcmdapi.Context{Cluster: lost, AuthInfo: from.AuthInfo}
	out := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, out); err != nil {
		t.Fatal(err)
	}
	return out, addr
}

// tcpProxy forwards connections to an API server until it is stopped,
// when it closes every connection it forwards, as a cluster whose network
// went away.
type tcpProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func startProxy(t *testing.T, addr, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("proxy on %s: %v", addr, err)
	}
	p := &tcpProxy{ln: ln}
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
	return p
}

func (p *tcpProxy) stop() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

// gpufleet runs one command line in process, as the binary would.
func gpufleet(t *testing.T, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	if code := cli.Run(context.Background(), args, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &out}); code != 0 {
		t.Fatalf("gpufleet %s: exit %d\n%s", strings.Join(args, " "), code, out.String())
	}
	return out.String()
}

// statusNext is the next command `gpufleet status` prints.
func statusNext(t *testing.T, fleetFile string) string {
	t.Helper()
	for line := range strings.SplitSeq(gpufleet(t, "status", "-f", fleetFile), "\n") {
		if rest, ok := strings.CutPrefix(line, "next: "); ok {
			return rest
		}
	}
	t.Fatal("gpufleet status printed no next command")
	return ""
}

// keep writes a screenshot into $GPUFLEET_DASHBOARD_ARTIFACTS, or the test's
// artifact folder.
func keep(t *testing.T, name string, png []byte) {
	t.Helper()
	dir := os.Getenv(artifactsEnv)
	if dir == "" {
		dir = t.ArtifactDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
}
