package dashboard

import (
	"embed"
	"encoding/json"
	"html/template"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/internal/gate"
)

//go:embed assets
var assets embed.FS

// legend is the phases a node's timeline shows, in the order a node
// goes through them, then the ways out.
var legend = []string{"Pending", "Draining", "Installing", "Validating", "Soaking", "Done", "RollingBack", "RolledBack", "Quarantined"}

// pageTemplates are the page and its fragments (assets/*.tmpl).
type pageTemplates struct{ t *template.Template }

func newPageTemplates() (*pageTemplates, error) {
	t, err := template.New("").Funcs(template.FuncMap{
		"unixms": func(t time.Time) int64 {
			if t.IsZero() {
				return 0
			}
			return t.UnixMilli()
		},
		"clock": func(t time.Time) string {
			if t.IsZero() {
				return "never"
			}
			return t.UTC().Format("2006-01-02 15:04:05Z")
		},
		"statusClass": func(s gate.Status) string { return "st-" + string(s) },
		"phaseClass":  func(p string) string { return "ph-" + strings.ToLower(p) },
		"failing": func(cs []gate.Check) bool {
			for _, c := range cs {
				if c.Status != gate.Pass {
					return true
				}
			}
			return false
		},
		"phases":   func() []string { return legend },
		"timeline": timelineAttr,
		"json": func(v any) string {
			b, err := json.MarshalIndent(v, "", "  ")
			if err != nil {
				return err.Error()
			}
			return string(b)
		},
	}).ParseFS(assets, "assets/*.tmpl")
	if err != nil {
		return nil, err
	}
	return &pageTemplates{t: t}, nil
}

func (p *pageTemplates) cluster(w io.Writer, v *ClusterView) error {
	return p.t.ExecuteTemplate(w, "cluster", v)
}

func (p *pageTemplates) promotion(w io.Writer, v PromotionView) error {
	return p.t.ExecuteTemplate(w, "promotion", v)
}

// timelineAttr encodes a node's timeline for the page's script, which
// draws it: "phase:startMs[:f]" per segment, space-separated (":f" marks a
// failed node). A hundred nodes of drawn segments rendered by the template
// cost more than the rest of a rebuild.
func timelineAttr(h []Segment) string {
	var b strings.Builder
	for i, s := range h {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s.Phase)
		b.WriteByte(':')
		b.WriteString(strconv.FormatInt(s.Start.UnixMilli(), 10))
		if s.Failed {
			b.WriteString(":f")
		}
	}
	return b.String()
}

// pageData is what the whole page is made of: the fragments as they were
// last rendered, and the change they were current at.
type pageData struct {
	Seq       uint64
	Promotion template.HTML
	Waves     []pageWave
}

type pageWave struct {
	Name     string
	Clusters []template.HTML
}

func (p *pageTemplates) page(w io.Writer, d pageData) error {
	return p.t.ExecuteTemplate(w, "page", d)
}
