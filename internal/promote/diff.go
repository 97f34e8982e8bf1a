package promote

import (
	"bytes"
	"slices"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"sigs.k8s.io/yaml"

	"github.com/gpufleet/gpufleet/internal/render"
)

// ObjectDiff is how one rendered object changes, as a unified diff of its
// YAML (as kubectl diff and flux diff show it).
type ObjectDiff struct {
	// Path is the rendered file that holds the object.
	Path string `json:"path"`
	// Cluster is the cluster whose folder holds it; empty for the files
	// the clusters share (apps/, infrastructure/).
	Cluster   string `json:"cluster,omitempty"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Action is render's: "add", "change" or "remove".
	Action string `json:"action"`
	// Diff is the unified diff (a/PATH → b/PATH, three lines of context).
	Diff string `json:"diff"`
}

// ObjectDiffs compares two sets of rendered files (path → content; a file
// missing from one side is added or removed) object by object, in path
// order then the files' own order. A file may hold several objects (a chart
// rendered to manifests): each is matched by kind, namespace and name, so
// one changed object is one diff, not the whole file.
func ObjectDiffs(before, after map[string][]byte) []ObjectDiff {
	paths := map[string]bool{}
	for p := range before {
		paths[p] = true
	}
	for p := range after {
		paths[p] = true
	}
	out := []ObjectDiff{}
	for _, p := range slices.Sorted(func(yield func(string) bool) {
		for p := range paths {
			if !yield(p) {
				return
			}
		}
	}) {
		oldSrc, newSrc := before[p], after[p]
		if bytes.Equal(oldSrc, newSrc) {
			continue
		}
		out = append(out, fileDiffs(p, oldSrc, newSrc)...)
	}
	return out
}

type document struct {
	kind, namespace, name string
	text                  string
}

func (d document) key() string { return d.kind + "/" + d.namespace + "/" + d.name }

// documents splits a YAML file into its objects; text before the first
// object (the generated-by header) belongs to none.
func documents(src []byte) []document {
	var docs []document
	for part := range strings.SplitSeq(strings.ReplaceAll(string(src), "\r\n", "\n"), "\n---\n") {
		var meta struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(part), &meta); err != nil || meta.Kind == "" {
			continue
		}
		text := strings.TrimPrefix(part, "---\n")
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		docs = append(docs, document{kind: meta.Kind, namespace: meta.Metadata.Namespace, name: meta.Metadata.Name, text: text})
	}
	return docs
}

func fileDiffs(path string, oldSrc, newSrc []byte) []ObjectDiff {
	cluster := ""
	if rest, ok := strings.CutPrefix(path, "clusters/"); ok {
		cluster, _, _ = strings.Cut(rest, "/")
	}
	olds, news := documents(oldSrc), documents(newSrc)
	if len(olds) == 1 && len(news) == 1 && olds[0].kind == news[0].kind {
		// One object in the file on both sides is one object changing,
		// renamed or not (a DriverRollout takes its release's name).
		return []ObjectDiff{{Path: path, Cluster: cluster, Kind: news[0].kind, Namespace: news[0].namespace, Name: news[0].name, Action: render.ActionChange, Diff: UnifiedDiff(path, olds[0].text, news[0].text)}}
	}
	oldBy := map[string]document{}
	for _, d := range olds {
		oldBy[d.key()] = d
	}
	newBy := map[string]document{}
	for _, d := range news {
		newBy[d.key()] = d
	}
	var out []ObjectDiff
	emit := func(d document, action, a, b string) {
		out = append(out, ObjectDiff{Path: path, Cluster: cluster, Kind: d.kind, Namespace: d.namespace, Name: d.name, Action: action, Diff: UnifiedDiff(path, a, b)})
	}
	for _, d := range news {
		o, ok := oldBy[d.key()]
		switch {
		case !ok:
			emit(d, render.ActionAdd, "", d.text)
		case o.text != d.text:
			emit(d, render.ActionChange, o.text, d.text)
		}
	}
	for _, d := range olds {
		if _, ok := newBy[d.key()]; !ok {
			emit(d, render.ActionRemove, d.text, "")
		}
	}
	return out
}

// UnifiedDiff is the unified diff from a to b, both named path.
func UnifiedDiff(path, a, b string) string {
	// difflib.SplitLines would add an empty last line to text that ends
	// with a newline, as every rendered file does.
	lines := func(s string) []string {
		if s == "" {
			return nil
		}
		l := strings.SplitAfter(s, "\n")
		if l[len(l)-1] == "" {
			return l[:len(l)-1]
		}
		l[len(l)-1] += "\n"
		return l
	}
	s, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: lines(a), B: lines(b),
		FromFile: "a/" + path, ToFile: "b/" + path, Context: 3,
	})
	if err != nil {
		// Only a failing writer errs, and a strings.Builder does not.
		return ""
	}
	return s
}
