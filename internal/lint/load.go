package lint

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// doc is one YAML document of the repository.
type doc struct {
	file string // slash path relative to the repository root
	node *yaml.Node
	// apiVersion, kind, name, namespace of a Kubernetes object; empty otherwise.
	apiVersion, kind, name, namespace string
	// patch: the file is a patch a kustomization applies to an object
	// defined elsewhere, not an object of its own.
	patch bool
}

// repo is every YAML document of a repository, by file.
type repo struct {
	root  string
	docs  []*doc
	files map[string][]*doc
}

// load reads every .yaml/.yml file under root, skipping .git.
func load(root string) (*repo, []Finding, error) {
	r := &repo{root: root, files: map[string][]*doc{}}
	var findings []Finding
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return fs.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(p); ext != ".yaml" && ext != ".yml" && d.Name() != "Kustomization" {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var n yaml.Node
			err := dec.Decode(&n)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				findings = append(findings, Finding{File: rel, Line: 1, Severity: Error, Rule: "yaml", Message: fmt.Sprintf("not valid YAML: %v", err), Fix: "fix the syntax"})
				break
			}
			if len(n.Content) == 0 || n.Content[0].Kind != yaml.MappingNode {
				continue
			}
			d := &doc{file: rel, node: n.Content[0]}
			d.apiVersion = scalar(d.node, "apiVersion")
			d.kind = scalar(d.node, "kind")
			d.name = scalar(d.node, "metadata", "name")
			d.namespace = scalar(d.node, "metadata", "namespace")
			r.docs = append(r.docs, d)
			r.files[rel] = append(r.files[rel], d)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read repository %s: %w", root, err)
	}
	r.markPatches()
	return r, findings, nil
}

// resolve follows a YAML alias (*anchor) to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// entry finds key in mapping n, the way YAML loaders do: an explicit key
// wins over one brought in by a merge key (`<<: *anchor`, or a sequence
// of anchors, the first of which wins). It returns the key node, for its
// line, and the value, with aliases resolved; nil, nil when absent.
func entry(n *yaml.Node, key string) (*yaml.Node, *yaml.Node) {
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, nil
	}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Value == key && k.Tag != "!!merge" {
			return k, resolve(n.Content[i+1])
		}
		if k.Tag == "!!merge" || (k.Value == "<<" && k.Style == 0) {
			v := resolve(n.Content[i+1])
			if v != nil && v.Kind == yaml.SequenceNode {
				merges = append(merges, v.Content...)
			} else {
				merges = append(merges, v)
			}
		}
	}
	for _, m := range merges {
		if k, v := entry(m, key); k != nil {
			return k, v
		}
	}
	return nil, nil
}

// items are the elements of a sequence, aliases resolved.
func items(n *yaml.Node) []*yaml.Node {
	n = resolve(n)
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	out := make([]*yaml.Node, 0, len(n.Content))
	for _, c := range n.Content {
		out = append(out, resolve(c))
	}
	return out
}

// lookup follows a path of mapping keys from n; nil when absent.
func lookup(n *yaml.Node, path ...string) *yaml.Node {
	n = resolve(n)
	for _, key := range path {
		_, n = entry(n, key)
		if n == nil {
			return nil
		}
	}
	return n
}

// keyLine is the line of the key at path, or of the closest parent present.
// A key brought in by a merge key is reported where the anchor defines it.
func keyLine(n *yaml.Node, path ...string) int {
	line := n.Line
	cur := n
	for _, key := range path {
		k, v := entry(cur, key)
		if k == nil {
			break
		}
		line, cur = k.Line, v
	}
	return line
}

func scalar(n *yaml.Node, path ...string) string {
	if v := lookup(n, path...); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

// isFluxKustomization tells Flux Kustomizations from kustomize's own files.
func (d *doc) isFluxKustomization() bool {
	return d.kind == "Kustomization" && strings.HasPrefix(d.apiVersion, "kustomize.toolkit.fluxcd.io/")
}

// markPatches marks the documents of every file a kustomization names as a
// patch: a strategic-merge patch of a Flux Kustomization looks like one
// (same apiVersion and kind) but holds only the fields it changes, so
// reading it as an object gives false findings (prune off, no interval).
func (r *repo) markPatches() {
	for file, docs := range r.files {
		if !isKustomizationFile(file) {
			continue
		}
		for _, p := range patchFiles(docs[0].node) {
			for _, d := range r.files[path.Clean(path.Join(path.Dir(file), p.Value))] {
				d.patch = true
			}
		}
	}
}

func isKustomizationFile(file string) bool {
	return slices.Contains(kustomizationFiles, path.Base(file))
}
