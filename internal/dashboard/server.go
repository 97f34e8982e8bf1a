package dashboard

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Handler serves the page (/), its live stream (/events), its script and
// style (/assets/) and the same data as JSON (/api/clusters, /api/stats).
// It answers GET and HEAD only: the dashboard changes nothing. It answers
// only requests whose Host is loopback or one of Options.AllowedHosts
// (checkHost), on every route.
func (d *Dashboard) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", d.servePage)
	mux.HandleFunc("GET /events", d.serveEvents)
	mux.HandleFunc("GET /api/clusters", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, d.Views()) })
	mux.HandleFunc("GET /api/stats", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, d.Stats()) })
	return checkHost(mux, d.allowed)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// servePage writes the whole page from the fragments as last rendered.
func (d *Dashboard) servePage(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	pd := pageData{Seq: d.seq, Promotion: template.HTML(d.promo.html)}
	for _, wave := range d.fleet.Waves {
		pw := pageWave{Name: wave.Name}
		for _, c := range wave.Clusters {
			if e := d.entries[c]; e != nil {
				pw.Clusters = append(pw.Clusters, template.HTML(e.html))
			} else {
				pw.Clusters = append(pw.Clusters, template.HTML(fmt.Sprintf(`<article id="c-%s" class="cluster unreachable" data-cluster="%[1]s" data-reachable="false"><header><h3>%[1]s</h3> <span class="badge unreachable">not read yet</span></header></article>`, template.HTMLEscapeString(c))))
			}
		}
		pd.Waves = append(pd.Waves, pw)
	}
	d.mu.Unlock()
	var buf bytes.Buffer
	if err := d.page.page(&buf, pd); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	// 200 clusters of 100 nodes make a page of about 5 MB that compresses
	// well (repeated markup).
	if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		w.Header().Set("Content-Encoding", "gzip")
		zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
		_, _ = zw.Write(buf.Bytes())
		_ = zw.Close()
		return
	}
	_, _ = w.Write(buf.Bytes())
}

// fragment is one change sent to a browser.
type fragment struct {
	ID   string `json:"id"`
	HTML string `json:"html"`
}

// changedSince returns the fragments changed after seq, the seq they
// bring the browser to, and whether the layout changed (a reload).
func (d *Dashboard) changedSince(seq uint64) ([]fragment, uint64, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.layoutSeq > seq {
		return nil, d.seq, true
	}
	var out []fragment
	if d.promo.seq > seq {
		out = append(out, fragment{ID: "promotion", HTML: string(d.promo.html)})
	}
	for name, e := range d.entries {
		if e.seq > seq {
			out = append(out, fragment{ID: "c-" + name, HTML: string(e.html)})
		}
	}
	return out, d.seq, false
}

// serveEvents streams the page's changes: whatever changed after the
// browser's seq (the page's, or Last-Event-ID on a reconnect), then each
// change as it comes. A stream costs the clusters nothing: it reads the
// fragments the watches already rendered.
func (d *Dashboard) serveEvents(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, errNoFlusher.Error(), http.StatusInternalServerError)
		return
	}
	since := r.Header.Get("Last-Event-ID")
	if since == "" {
		since = r.URL.Query().Get("since")
	}
	seq, _ := strconv.ParseUint(since, 10, 64)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	sub := d.subscribe()
	defer d.unsubscribe(sub)
	keep := time.NewTicker(15 * time.Second)
	defer keep.Stop()
	for {
		frags, now, reload := d.changedSince(seq)
		if reload {
			fmt.Fprintf(w, "id: %d\nevent: reload\ndata: {}\n\n", now)
			fl.Flush()
			return
		}
		for _, f := range frags {
			b, _ := json.Marshal(f)
			if _, err := fmt.Fprintf(w, "id: %d\nevent: fragment\ndata: %s\n\n", now, b); err != nil {
				return
			}
		}
		if len(frags) > 0 {
			fl.Flush()
		}
		seq = now
		select {
		case <-r.Context().Done():
			return
		case <-sub:
		case <-keep.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			fl.Flush()
		}
	}
}

// IsLoopback says whether a listen address binds to loopback only.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Serve serves the dashboard on ln and watches the fleet until ctx ends.
func (d *Dashboard) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: d.Handler(), ReadHeaderTimeout: 10 * time.Second}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	runDone := make(chan error, 1)
	go func() { runDone <- d.Run(ctx) }()
	go func() {
		<-ctx.Done()
		sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer scancel()
		_ = srv.Shutdown(sctx)
	}()
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	cancel()
	return errors.Join(err, <-runDone)
}
