package dashboard

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeStreamsAndStaysReadOnly: the page lists the waves in order
// with every cluster; a stream sends each fragment once, and a reload when
// the fleet file's waves change; nothing but GET is answered. The clusters
// are unreachable here (no kubeconfig): the browser test covers live ones.
func TestServeStreamsAndStaysReadOnly(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("testdata/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	fleetFile := filepath.Join(dir, "fleet.toml")
	if err := os.WriteFile(fleetFile, src, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := New(Options{FleetFile: fleetFile, Kubeconfig: filepath.Join(dir, "no-kubeconfig"), FleetPoll: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- d.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-ran; err != nil {
			t.Error(err)
		}
	}()
	srv := httptest.NewServer(d.Handler())
	defer srv.Close()

	deadline := time.Now().Add(10 * time.Second)
	for len(d.Views()) < 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	iStg, iProd := strings.Index(body, `data-wave="staging"><h2>`), strings.Index(body, `data-wave="production"><h2>`)
	if iStg < 0 || iProd < iStg {
		t.Errorf("the page does not list wave staging then production:\n%s", body)
	}
	for _, c := range []string{"stg", "prod", "lost"} {
		if !strings.Contains(body, `id="c-`+c+`"`) || strings.Count(body, `data-cluster="`+c+`" data-reachable="false"`) != 1 {
			t.Errorf("the page does not show cluster %s once, unreachable", c)
		}
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		req, _ := http.NewRequest(m, srv.URL+"/", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s / answered %d, want 405", m, resp.StatusCode)
		}
	}

	// A browser asks for what changed since the page it has; from the
	// first change on, that is every fragment once. (From before the first
	// layout it is told to reload.)
	resp, err = http.Get(srv.URL + "/events?since=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if ev, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				events <- ev
			} else if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.HasPrefix(data, `{"id":`) {
				events <- data[:strings.Index(data, `","html"`)+1]
			}
		}
		close(events)
	}()
	ids := map[string]int{}
	for len(ids) < 4 {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("the stream ended after %v", ids)
			}
			if id, ok := strings.CutPrefix(ev, `{"id":"`); ok {
				ids[strings.TrimSuffix(id, `"`)]++
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the stream sent only %v", ids)
		}
	}
	for _, id := range []string{"promotion", "c-stg", "c-prod", "c-lost"} {
		if ids[id] != 1 {
			t.Errorf("the stream sent fragment %s %d times, want once (all: %v)", id, ids[id], ids)
		}
	}

	// A wave's clusters change: the page must be loaded again.
	if err := os.WriteFile(fleetFile, []byte(strings.Replace(string(src), `clusters = ["prod", "lost"]`, `clusters = ["lost", "prod"]`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the stream ended without a reload")
			}
			if ev == "reload" {
				return
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no reload after the waves changed")
		}
	}
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	return b.String()
}
