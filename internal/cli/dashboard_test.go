package cli

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDashboardAllowedHost: `gpufleet dashboard` answers the page to the
// names it is known by and to --allowed-host, and 421 to any other Host
// (a page rebound to it); a URL given as --allowed-host is a usage error.
func TestDashboardAllowedHost(t *testing.T) {
	fleetFile := gitFleet(t, smallFleet)
	var errOut strings.Builder
	code := Run(t.Context(), []string{"dashboard", "-f", fleetFile, "--allowed-host", "https://dash.example.org/"}, Streams{In: strings.NewReader(""), Out: io.Discard, Err: &errOut})
	if code != ExitUsage || !strings.Contains(errOut.String(), "--allowed-host") {
		t.Errorf("--allowed-host with a URL: exit %d, want %d with the flag named:\n%s", code, ExitUsage, errOut.String())
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	exited := make(chan int, 1)
	go func() {
		exited <- Run(ctx, []string{"dashboard", "-f", fleetFile, "--kubeconfig", filepath.Join(t.TempDir(), "none"),
			"--listen", "127.0.0.1:0", "--allowed-host", "Dash.Example.org:443", "--allowed-host", "10.1.2.3"},
			Streams{In: strings.NewReader(""), Out: pw, Err: io.Discard})
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	var url, answers string
	for answers == "" && lines.Scan() {
		if u, ok := strings.CutPrefix(lines.Text(), "gpufleet dashboard (read-only) on "); ok {
			url = u
		}
		if a, ok := strings.CutPrefix(lines.Text(), "answers Host names: "); ok {
			answers = a
		}
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	if url == "" || !strings.Contains(answers, "dash.example.org, 10.1.2.3") {
		t.Fatalf("the dashboard did not say where it serves and what it answers: url %q, answers %q", url, answers)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	for host, want := range map[string]int{
		"attacker.example":              http.StatusMisdirectedRequest,
		"dash.example.org.attacker.net": http.StatusMisdirectedRequest,
		"localhost:8080":                http.StatusOK,
		"dash.example.org":              http.StatusOK,
		"10.1.2.3:8443":                 http.StatusOK,
	} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"api/stats", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET /api/stats with Host %s answered %d, want %d", host, resp.StatusCode, want)
		}
	}
	cancel()
	if code := <-exited; code != 0 {
		t.Errorf("the dashboard exited %d when stopped, want 0", code)
	}
}
