package dashboard

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strings"
)

// The dashboard answers only the Host names it is known by. Without that
// check a page on another origin could read it through DNS rebinding: the
// page's own name is made to resolve to 127.0.0.1, the browser then calls
// it same-origin, and reads the fleet from the dashboard with the page's
// name in Host. A name the attacker does not control in DNS cannot be
// rebound, so these are answered:
//
//   - loopback: localhost, any name ending .localhost (browsers resolve
//     them to loopback themselves), 127.0.0.0/8 and ::1;
//   - the host of --listen, and for a wildcard --listen the machine's
//     host name and interface addresses (ListenHosts);
//   - the names given with --allowed-host (a reverse proxy's).
//
// The port is ignored: a proxy in front may serve another one.

// hostAllowed says whether a request whose Host header is host may be
// answered, allowed being the names beyond loopback, as normalHost gives
// them.
func hostAllowed(host string, allowed []string) bool {
	h := normalHost(host)
	switch {
	case h == "":
		return false
	case h == "localhost", strings.HasSuffix(h, ".localhost"):
		return true
	}
	if a, err := netip.ParseAddr(h); err == nil && a.IsLoopback() {
		return true
	}
	return slices.Contains(allowed, h)
}

// normalHost is host (as a Host header or --allowed-host gives it) without
// its port, brackets or trailing dot, in lower case, an address in its
// canonical form ("::ffff:127.0.0.1" is "127.0.0.1"); "" when it is no
// host name or address.
func normalHost(host string) string {
	h := strings.ToLower(host)
	if name, port, err := net.SplitHostPort(h); err == nil {
		if strings.Trim(port, "0123456789") != "" {
			return ""
		}
		h = name
	} else if inner, ok := strings.CutPrefix(h, "["); ok {
		h, ok = strings.CutSuffix(inner, "]")
		if !ok {
			return ""
		}
	}
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Unmap().WithZone("").String()
	}
	h = strings.TrimSuffix(h, ".")
	if h == "" || strings.HasPrefix(h, ".") || strings.Contains(h, "..") {
		return ""
	}
	for _, c := range h {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return ""
		}
	}
	return h
}

// ParseAllowedHost checks a name given with --allowed-host (a port, if
// given, is dropped) and returns it as the check compares it.
func ParseAllowedHost(s string) (string, error) {
	h := normalHost(s)
	if h == "" {
		return "", fmt.Errorf("%q is not a host name or address: give it as the browser's address bar shows it, without scheme or path (dashboard.example.org)", s)
	}
	return h, nil
}

// ListenHosts are the names and addresses the dashboard is reached by on
// the listen address, beyond loopback: its host when it names one; when
// it is a wildcard (":8080", "0.0.0.0:8080", "[::]:8080"), the machine's
// host name (and its first label, when it is qualified) and the addresses
// of its interfaces as they are now. Any other name, as a DNS alias or
// the address a NAT or container port maps to, is given with
// --allowed-host.
func ListenHosts(listen string) []string {
	return listenHosts(listen, os.Hostname, net.InterfaceAddrs)
}

func listenHosts(listen string, hostname func() (string, error), interfaceAddrs func() ([]net.Addr, error)) []string {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return nil
	}
	var out []string
	add := func(h string) {
		if h = normalHost(h); h != "" && !hostAllowed(h, nil) && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	if a, err := netip.ParseAddr(host); host != "" && (err != nil || !a.IsUnspecified()) {
		add(host)
		return out
	}
	if name, err := hostname(); err == nil {
		add(name)
		if first, _, qualified := strings.Cut(name, "."); qualified {
			add(first)
		}
	}
	if addrs, err := interfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok {
				add(ipn.IP.String())
			}
		}
	}
	slices.Sort(out)
	return out
}

// checkHost answers 421 Misdirected Request, with the reason in plain
// text, to a request whose Host is not allowed, on every route (the
// stream's included); others go on to next.
func checkHost(next http.Handler, allowed []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hostAllowed(r.Host, allowed) {
			http.Error(w, fmt.Sprintf("gpufleet dashboard: Host %q is not a name it answers to: use localhost or the --listen address, or give this name with --allowed-host", r.Host), http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}
