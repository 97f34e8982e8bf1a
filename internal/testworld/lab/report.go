package lab

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"time"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/fsutil"
	"github.com/gpufleet/gpufleet/internal/sim"
)

// writeReportFile writes the HTML report to path, with the clusters as the
// fleet file leaves them and each one's nodes as its recorder saw them.
func writeReportFile(path, fleetFile string, sum *Summary, recs map[string]*Recorder) error {
	f, err := fleet.Load(fleetFile)
	if err != nil {
		return err
	}
	var clusters []reportCluster
	for _, wave := range f.Waves {
		for _, c := range wave.Clusters {
			n := 0
			for _, p := range f.Clusters[c].Pools {
				n += p.Nodes
			}
			clusters = append(clusters, reportCluster{Wave: wave.Name, Name: c, Release: f.ReleaseFor(c).Name, Nodes: n})
		}
	}
	var buf bytes.Buffer
	if err := writeReport(&buf, sum, recs, clusters, time.Now()); err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(path, buf.Bytes())
}

var reportPage = template.Must(template.New("report").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>gpufleet demo</title>
<style>
body { font-family: sans-serif; margin: 2em; color: #222 }
table { border-collapse: collapse; margin: 1em 0 }
td, th { border-bottom: 1px solid #ddd; padding: 4px 12px; text-align: left }
.ok { color: #2e8b57 } .failed { color: #c0392b; font-weight: bold }
.muted { color: #777 }
</style></head><body>
<h1>gpufleet demo</h1>
<p class="muted">{{.When}} · {{.Took}} in all · two clusters (stg, prod) with real kube-apiserver, etcd,
kube-controller-manager, kube-scheduler and Flux; the real GPU Operator; the lifecycle controller; kwok and
simulated GPU nodes. The charts are applied pre-rendered: helm-controller does not run.</p>
<h2>Waves and clusters</h2>
<table><tr><th>wave</th><th>cluster</th><th>release at the end</th><th>nodes</th></tr>
{{range .Clusters}}<tr><td>{{.Wave}}</td><td>{{.Name}}</td><td>{{.Release}}</td><td>{{.Nodes}}</td></tr>
{{end}}</table>
<h2>Story</h2>
<table><tr><th>step</th><th>result</th><th>took</th><th>seen</th></tr>
{{range .Steps}}<tr><td>{{.Name}}</td><td class="{{.Class}}">{{.Result}}</td><td>{{.Took}}</td><td>{{.Note}}</td></tr>
{{end}}</table>
<h2>Nodes over time</h2>
{{range .Timelines}}<h3>{{.Cluster}}</h3>
{{.SVG}}
{{end}}
</body></html>
`))

type reportCluster struct {
	Wave, Name, Release string
	Nodes               int
}

type reportStep struct {
	Name, Result, Class, Took, Note string
}

type reportTimeline struct {
	Cluster string
	SVG     template.HTML
}

// writeReport writes the HTML report: waves and clusters, every step of
// the story, and each cluster's nodes and their phases over time.
func writeReport(out io.Writer, sum *Summary, recs map[string]*Recorder, clusters []reportCluster, end time.Time) error {
	data := struct {
		When, Took string
		Clusters   []reportCluster
		Steps      []reportStep
		Timelines  []reportTimeline
	}{When: end.Add(-sum.Took).UTC().Format("2006-01-02 15:04 UTC"), Took: sum.Took.Round(time.Second).String(), Clusters: clusters}
	for _, st := range sum.Steps {
		rs := reportStep{Name: st.Name, Result: "ok", Class: "ok", Took: st.Took.Round(100 * time.Millisecond).String(), Note: st.Note}
		if st.Err != nil {
			rs.Result, rs.Class, rs.Note = "FAILED", "failed", st.Err.Error()
		}
		data.Steps = append(data.Steps, rs)
	}
	for _, c := range clusters {
		rec := recs[c.Name]
		if rec == nil {
			continue
		}
		var svg bytes.Buffer
		res := rec.Timeline(end)
		title := fmt.Sprintf("%s: node phases as the lifecycle controller set them", c.Name)
		if err := sim.WriteSVG(&svg, title, res, nil); err != nil {
			return err
		}
		data.Timelines = append(data.Timelines, reportTimeline{Cluster: c.Name, SVG: template.HTML(svg.String())}) //nolint:gosec // our own SVG, names escaped by WriteSVG
	}
	return reportPage.Execute(out, data)
}
