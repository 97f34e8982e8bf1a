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
	// shift is added to the node's lines: a document parsed from a string
	// of another file (an inline patch) starts below that string's key.
	shift int
}

// line is the line in d's file of the key at path (keyLine).
func (d *doc) line(path ...string) int { return keyLine(d.node, path...) + d.shift }

// repo is every YAML document of a repository, by file.
type repo struct {
	root string
	// fs reads the repository: a path that leaves it, by .. or through a
	// symbolic link, is refused (os.Root), as kustomize refuses it.
	fs    *os.Root
	docs  []*doc
	files map[string][]*doc
}

// manifestFile says whether lint reads a file as manifests: YAML, and JSON,
// which kustomize reads as YAML (a resource, a patch, a List).
func manifestFile(name string) bool {
	switch filepath.Ext(name) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return name == "Kustomization"
}

// load reads every manifest file under root (manifestFile), skipping .git.
// The items of a List (any kind ending in List that has items, as
// kustomize expands them) are documents of their own.
func load(root string) (*repo, []Finding, error) {
	fsys, err := os.OpenRoot(root)
	if err != nil {
		return nil, nil, fmt.Errorf("read repository %s: %w", root, err)
	}
	r := &repo{root: root, fs: fsys, files: map[string][]*doc{}}
	var findings []Finding
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return fs.SkipDir
			}
			return nil
		}
		if !manifestFile(d.Name()) {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		b, err := r.read(rel)
		if err != nil {
			if d.Type()&fs.ModeSymlink != 0 {
				// A link out of the repository (or a dangling one):
				// nothing reads it, kustomize neither.
				findings = append(findings, Finding{File: rel, Line: 1, Severity: Error, Rule: "link-outside",
					Message: "symbolic link out of the repository (or to nothing): lint does not read it, kustomize refuses it", Fix: "replace the link with the file itself"})
				return nil
			}
			return err
		}
		isJSON := filepath.Ext(rel) == ".json"
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var n yaml.Node
			err := dec.Decode(&n)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				if !isJSON {
					// A JSON file that is not JSON (a comment, a template) is
					// no manifest: kustomize fails on it where it is listed.
					findings = append(findings, Finding{File: rel, Line: 1, Severity: Error, Rule: "yaml", Message: fmt.Sprintf("not valid YAML: %v", err), Fix: "fix the syntax"})
				}
				break
			}
			if len(n.Content) == 0 {
				continue
			}
			for _, d := range objects(rel, n.Content[0], 0) {
				r.docs = append(r.docs, d)
				r.files[rel] = append(r.files[rel], d)
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read repository %s: %w", root, err)
	}
	r.markPatches()
	return r, findings, nil
}

// read reads the slash path p, relative to the root, without leaving it.
func (r *repo) read(p string) ([]byte, error) { return r.fs.ReadFile(filepath.FromSlash(p)) }

// objects are the documents a YAML node is to kustomize: the mapping
// itself, or, for a List, its items (Lists in Lists too). shift is added to
// every line: a node parsed from a string inside another file (an inline
// patch) is placed in that file.
func objects(file string, n *yaml.Node, shift int) []*doc {
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	d := &doc{file: file, node: n, shift: shift}
	d.apiVersion = scalar(n, "apiVersion")
	d.kind = scalar(n, "kind")
	d.name = scalar(n, "metadata", "name")
	d.namespace = scalar(n, "metadata", "namespace")
	if _, list := entry(n, "items"); list != nil && strings.HasSuffix(d.kind, "List") {
		var out []*doc
		for _, item := range items(list) {
			out = append(out, objects(file, item, shift)...)
		}
		return out
	}
	return []*doc{d}
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
