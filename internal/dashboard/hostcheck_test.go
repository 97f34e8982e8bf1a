package dashboard

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHostAllowed(t *testing.T) {
	allowed := []string{"dash.example.org", "10.1.2.3", "2001:db8::7"}
	for _, tc := range []struct {
		host string
		want bool
	}{
		// Loopback, with or without a port.
		{"localhost", true},
		{"localhost:8080", true},
		{"LocalHost:8080", true},
		{"localhost.", true},
		{"app.localhost:3000", true},
		{"127.0.0.1", true},
		{"127.0.0.1:8080", true},
		{"127.1.2.3:80", true},
		{"[::1]", true},
		{"[::1]:8080", true},
		{"::1", true},
		{"[0:0:0:0:0:0:0:1]:8080", true},
		{"[::ffff:127.0.0.1]:8080", true},
		// Given names and addresses, any port.
		{"dash.example.org", true},
		{"DASH.example.org:443", true},
		{"dash.example.org.:443", true},
		{"10.1.2.3:8080", true},
		{"[2001:db8::7]:8080", true},
		{"[2001:db8:0::7]", true},
		// Anything else: a rebinding page's own name first of all.
		{"", false},
		{":8080", false},
		{"attacker.example", false},
		{"attacker.example:8080", false},
		{"localhost.attacker.example", false},
		{"127.0.0.1.attacker.example", false},
		{"dash.example.org.attacker.example", false},
		{"sub.dash.example.org", false},
		{"localhostx", false},
		{"xlocalhost", false},
		{"10.1.2.4", false},
		{"0.0.0.0:8080", false},
		{"[::]:8080", false},
		{"192.168.1.10", false},
		{"[::1", false},
		{"evil@localhost", false},
		{"localhost:80@attacker.example", false},
		{"localhost:http", false},
		{"evil..localhost", false},
		{".localhost", false},
	} {
		if got := hostAllowed(tc.host, allowed); got != tc.want {
			t.Errorf("hostAllowed(%q) = %v, want %v", tc.host, got, tc.want)
		}
	}
}

func TestParseAllowedHost(t *testing.T) {
	for in, want := range map[string]string{
		"dash.example.org":       "dash.example.org",
		"Dash.Example.org:443":   "dash.example.org",
		"10.1.2.3":               "10.1.2.3",
		"[2001:DB8::7]:8443":     "2001:db8::7",
		"2001:db8::7":            "2001:db8::7",
		"gpu-admin_1":            "gpu-admin_1",
		"":                       "",
		"https://dash.example/":  "",
		"dash.example.org/path":  "",
		"*.example.org":          "",
		"dash example":           "",
		"[dash.example.org":      "",
		"dash.example.org:8080:": "",
	} {
		got, err := ParseAllowedHost(in)
		if want == "" {
			if err == nil {
				t.Errorf("ParseAllowedHost(%q) = %q, want an error", in, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("ParseAllowedHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestListenHosts(t *testing.T) {
	cidr := func(s string) net.Addr {
		ip, ipn, err := net.ParseCIDR(s)
		if err != nil {
			t.Fatal(err)
		}
		ipn.IP = ip
		return ipn
	}
	addrs := []net.Addr{cidr("127.0.0.1/8"), cidr("::1/128"), cidr("10.1.2.3/24"), cidr("fe80::1/64"), cidr("2001:db8::7/64")}
	machine := func() (string, error) { return "gpu-admin.corp.example", nil }
	interfaces := func() ([]net.Addr, error) { return addrs, nil }
	wildcard := []string{"10.1.2.3", "2001:db8::7", "fe80::1", "gpu-admin", "gpu-admin.corp.example"}
	for _, tc := range []struct {
		listen     string
		hostname   func() (string, error)
		interfaces func() ([]net.Addr, error)
		want       []string
	}{
		{"127.0.0.1:8080", machine, interfaces, nil},
		{"localhost:8080", machine, interfaces, nil},
		{"[::1]:8080", machine, interfaces, nil},
		{"10.1.2.3:8080", machine, interfaces, []string{"10.1.2.3"}},
		{"Dash.Corp.Example:8080", machine, interfaces, []string{"dash.corp.example"}},
		{"[2001:db8::7]:8080", machine, interfaces, []string{"2001:db8::7"}},
		{":8080", machine, interfaces, wildcard},
		{"0.0.0.0:8080", machine, interfaces, wildcard},
		{"[::]:8080", machine, interfaces, wildcard},
		{":8080", func() (string, error) { return "gpu-admin", nil }, interfaces, []string{"10.1.2.3", "2001:db8::7", "fe80::1", "gpu-admin"}},
		{":8080", func() (string, error) { return "", errors.New("no name") }, func() ([]net.Addr, error) { return nil, errors.New("no interfaces") }, nil},
		{"nonsense", machine, interfaces, nil},
	} {
		got := listenHosts(tc.listen, tc.hostname, tc.interfaces)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("listenHosts(%q) (-want +got):\n%s", tc.listen, diff)
		}
	}
}

// TestServeAnswersOnlyKnownHosts makes real requests with forged Host
// headers, as a page rebound to 127.0.0.1 would: on every route, the
// stream's included, they get 421 and say why; loopback names and the
// allowed ones get the page.
func TestServeAnswersOnlyKnownHosts(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("testdata/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	fleetFile := filepath.Join(dir, "fleet.toml")
	if err := os.WriteFile(fleetFile, src, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Options{FleetFile: fleetFile, AllowedHosts: []string{"https://dash.example.org/"}}); err == nil {
		t.Error("New took a URL as an allowed host")
	}
	d, err := New(Options{FleetFile: fleetFile, Kubeconfig: filepath.Join(dir, "no-kubeconfig"), AllowedHosts: []string{"dash.example.org", "10.1.2.3:8080"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	defer srv.Close()

	routes := []string{"/", "/events", "/events?since=1", "/api/clusters", "/api/stats", "/assets/dashboard.js", "/assets/dashboard.css", "/nowhere"}
	get := func(path, host string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if strings.HasPrefix(path, "/events") && resp.StatusCode == http.StatusOK {
			// A stream that was answered is left after its headers.
			return resp, ""
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(body)
	}
	for _, host := range []string{"attacker.example", "attacker.example:" + strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port), "localhost.attacker.example", "127.0.0.1.attacker.example", "dash.example.org.attacker.example", "10.1.2.4:8080"} {
		for _, path := range routes {
			resp, body := get(path, host)
			if resp.StatusCode != http.StatusMisdirectedRequest {
				t.Errorf("GET %s with Host %s answered %d, want 421", path, host, resp.StatusCode)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
				t.Errorf("GET %s with Host %s: the refusal is %s, want plain text", path, host, ct)
			}
			if !strings.Contains(body, "--allowed-host") || strings.Contains(body, "data-cluster") {
				t.Errorf("GET %s with Host %s: the refusal does not say why, or shows the fleet:\n%s", path, host, body)
			}
		}
	}
	for _, host := range []string{srv.Listener.Addr().String(), "localhost", "localhost:8080", "app.localhost:8080", "127.0.0.2", "[::1]:8080", "dash.example.org", "DASH.example.org:443", "10.1.2.3:9000"} {
		for _, path := range routes {
			resp, body := get(path, host)
			want := http.StatusOK
			if path == "/nowhere" {
				want = http.StatusNotFound
			}
			if resp.StatusCode != want {
				t.Errorf("GET %s with Host %s answered %d, want %d:\n%s", path, host, resp.StatusCode, want, body)
			}
			if path == "/" && !strings.Contains(body, `data-cluster="stg"`) {
				t.Errorf("GET / with Host %s is not the page:\n%s", host, body)
			}
		}
	}
}
